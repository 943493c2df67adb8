"""Checks shared by every estimator: each error names the problem and the fix.

Estimators call these at the top of ``fit``; nothing here modifies the user's data.
"""

from numbers import Integral, Real

import numpy as np
from scipy import sparse

__all__ = [
    "as_real_array",
    "check_sparse_structure",
    "check_positive_int",
    "check_n_neighbors",
    "check_positive_float",
    "check_open_interval",
    "check_choice",
    "check_enough_samples",
    "SPACES",
    "Integer",
    "PositiveNumber",
    "Number",
    "OpenInterval",
    "Options",
    "NoneValue",
    "AnyOf",
    "Either",
    "Condition",
    "Boolean",
    "Check",
    "is_real_number",
    "check_params",
]

#: Feasible spaces a landmark may live in (see :mod:`landmarking.spaces`).
SPACES = ("euclidean", "nonnegative", "sphere")


def check_positive_int(value, name, *, minimum=1):
    """Return ``value`` as an int after checking it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(
            f"{name} must be an integer, got {value!r} of type {type(value).__name__}; "
            f"pass a whole number such as {max(minimum, 10)}."
        )
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}; pass a larger value.")
    return int(value)


def check_n_neighbors(n_neighbors, n_samples):
    """Return ``n_neighbors`` as an int after checking it is a positive integer
    below ``n_samples`` (a point is never its own neighbour)."""
    k = check_positive_int(n_neighbors, "n_neighbors")
    if k >= n_samples:
        raise ValueError(
            f"n_neighbors={k} must be smaller than the number of samples ({n_samples}); "
            "pass fewer neighbours or more data."
        )
    return k


def check_positive_float(value, name):
    """Return ``value`` as a float after checking it is a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(
            f"{name} must be a positive number, got {value!r} of type "
            f"{type(value).__name__}."
        )
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return float(value)


def check_open_interval(value, name, low, high):
    """Return ``value`` as a float after checking ``low < value < high``."""
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value):
        raise TypeError(f"{name} must be a finite number in ({low}, {high}), got {value!r}.")
    if not low < value < high:
        raise ValueError(
            f"{name} must lie strictly between {low} and {high}, got {value!r}."
        )
    return float(value)


def check_choice(value, name, choices):
    """Check that the string ``value`` is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {options}; got {value!r}.")
    return value


def check_enough_samples(n_samples, n_required, what):
    """Raise when the data has fewer rows than ``what`` needs."""
    if n_samples < n_required:
        raise ValueError(
            f"{what} needs at least {n_required} samples, but X has n_samples={n_samples}; "
            "pass more rows or ask for less."
        )


# ------------------------------------------------------------ parameter tables
#
# Each estimator lists its parameters' rules once, in a class attribute
# ``_parameter_rules = {"name": rule, ...}`` (scikit-learn's
# ``_parameter_constraints`` idea), and checks them all with one call of
# :func:`check_params` at the top of ``fit``. A method package keeps the table as
# ``PARAMETER_RULES`` in the module of its public function, which checks the same
# rules, and its estimator names it (``_parameter_rules = PARAMETER_RULES``). A
# rule's error names the parameter, the value and what to pass instead, with the
# same words as the ``check_*`` functions above.


class Integer:
    """An integer >= ``minimum`` (bools refused)."""

    def __init__(self, minimum=1):
        self.minimum = minimum

    def accepts(self, value):
        return (not isinstance(value, bool) and isinstance(value, Integral)
                and value >= self.minimum)

    def describe(self):
        return f"an integer >= {self.minimum}"

    def check(self, value, name):
        return check_positive_int(value, name, minimum=self.minimum)


class PositiveNumber:
    """A finite real number > 0."""

    def accepts(self, value):
        return (not isinstance(value, bool) and isinstance(value, Real)
                and bool(np.isfinite(value)) and value > 0)

    def describe(self):
        return "a finite number > 0"

    def check(self, value, name):
        return check_positive_float(value, name)


class Number:
    """A finite real number in an interval; ``closed`` says which ends belong to it:
    "neither", "left", "right" or "both". Ends of None are unbounded."""

    def __init__(self, low=None, high=None, closed="neither"):
        self.low, self.high, self.closed = low, high, closed

    def _inside(self, value):
        low_ok = (self.low is None or value > self.low
                  or (self.closed in ("left", "both") and value == self.low))
        high_ok = (self.high is None or value < self.high
                   or (self.closed in ("right", "both") and value == self.high))
        return low_ok and high_ok

    def accepts(self, value):
        return (not isinstance(value, bool) and isinstance(value, Real)
                and bool(np.isfinite(value)) and self._inside(value))

    def describe(self):
        left = "[" if self.closed in ("left", "both") else "("
        right = "]" if self.closed in ("right", "both") else ")"
        low = "-inf" if self.low is None else self.low
        high = "inf" if self.high is None else self.high
        return f"a number in {left}{low}, {high}{right}"

    def check(self, value, name):
        if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value):
            raise TypeError(f"{name} must be {self.describe()}, got {value!r}.")
        if not self._inside(value):
            raise ValueError(f"{name} must be {self.describe()}, got {value!r}.")
        return float(value)


class OpenInterval(Number):
    """A finite real number strictly between ``low`` and ``high``, with the words of
    :func:`check_open_interval`."""

    def __init__(self, low, high):
        super().__init__(low, high, closed="neither")

    def check(self, value, name):
        return check_open_interval(value, name, self.low, self.high)


class Options:
    """One of a fixed set of strings."""

    def __init__(self, *choices):
        self.choices = choices

    def accepts(self, value):
        return isinstance(value, str) and value in self.choices

    def describe(self):
        return "one of " + ", ".join(repr(c) for c in self.choices)

    def check(self, value, name):
        return check_choice(value, name, self.choices)


class NoneValue:
    """The value None."""

    def accepts(self, value):
        return value is None

    def describe(self):
        return "None"

    def check(self, value, name):
        if value is not None:
            raise ValueError(f"{name} must be None, got {value!r}.")
        return None


class AnyOf:
    """Any value one of ``rules`` accepts. A value no rule accepts gets the error of
    the only rule of its own kind (a number's error for a number, say), or a message
    listing every allowed form."""

    def __init__(self, *rules):
        self.rules = rules

    def accepts(self, value):
        return any(rule.accepts(value) for rule in self.rules)

    def describe(self):
        return " or ".join(rule.describe() for rule in self.rules)

    def check(self, value, name):
        for rule in self.rules:
            if rule.accepts(value):
                return rule.check(value, name)
        same_kind = [rule for rule in self.rules if _same_kind(rule, value)]
        if len(same_kind) == 1:
            return same_kind[0].check(value, name)
        raise ValueError(f"{name} must be {self.describe()}; got {value!r}.")


class Either(AnyOf):
    """The value ``special`` (None, or a word such as "auto") or a value ``rule``
    accepts. Any other value gets ``rule``'s error, except a string: it gets
    ``message`` when one is given (formatted with ``value`` and ``name``; for a
    parameter whose words predate the table), else, when ``special`` is a word,
    the error of :class:`Options` (``special``).

    Unlike ``AnyOf(NoneValue(), rule)``, whose error for a value of no rule's kind
    lists every allowed form, a wrong value here always gets a specific error.
    """

    def __init__(self, special, rule, message=None):
        super().__init__(NoneValue() if special is None else Options(special), rule)
        self.special, self.rule, self.message = special, rule, message

    def check(self, value, name):
        if self.rules[0].accepts(value):
            return value
        if isinstance(value, str):
            if self.message is not None:
                raise ValueError(self.message.format(value=value, name=name))
            if isinstance(self.special, str):
                return self.rules[0].check(value, name)
        return self.rule.check(value, name)


class Condition:
    """A value for which ``test(value)`` is true; any other value gets a
    ``ValueError`` with ``message`` (formatted with ``value`` and ``name``). For a
    rule whose test and words are its own (``0 < tau <= 1`` with a note on
    convergence, say); the value is returned unchanged."""

    def __init__(self, test, message):
        self.test, self.message = test, message

    def accepts(self, value):
        return bool(self.test(value))

    def describe(self):
        return self.message.split(",")[0]

    def check(self, value, name):
        if not self.accepts(value):
            raise ValueError(self.message.format(value=value, name=name))
        return value


class Boolean:
    """True or False (numpy's bools too, returned as bool; 0 and 1 compare equal
    and pass)."""

    def accepts(self, value):
        return value in (True, False)

    def describe(self):
        return "True or False"

    def check(self, value, name):
        if not self.accepts(value):
            raise ValueError(f"{name} must be True or False, got {value!r}.")
        return bool(value)


def is_real_number(value):
    """Whether ``value`` is a real number (a bool is not), NaN and infinities
    included: for :class:`Condition` tests."""
    return not isinstance(value, bool) and isinstance(value, Real)


def _same_kind(rule, value):
    """Whether ``value`` is the kind of value ``rule`` is about (so its error fits)."""
    if isinstance(rule, Options):
        return isinstance(value, str)
    if isinstance(rule, (Integer, PositiveNumber, Number)):
        return isinstance(value, Real) and not isinstance(value, bool)
    return False


def check_params(estimator, rules):
    """Check the estimator's parameters against ``rules`` (name -> rule).

    Returns a dict of the checked values (ints as int, numbers as float); the
    estimator's own attributes are never changed.
    """
    return {name: rule.check(getattr(estimator, name), name) for name, rule in rules.items()}


class Check:
    """A rule given by a function ``check(value, name)`` that returns the checked
    value or raises with its own message (for rules the classes above do not
    express, such as ``n_jobs`` or a choice between a strategy name and an array)."""

    def __init__(self, check):
        self._check = check

    def accepts(self, value):
        try:
            self._check(value, "value")
        except (TypeError, ValueError):
            return False
        return True

    def describe(self):
        return (self._check.__doc__ or "").strip().split("\n")[0]

    def check(self, value, name):
        return self._check(value, name)


# ------------------------------------------------------------ sparse structure
#
# SciPy builds a matrix from (data, indices, indptr) or (data, (row, col)) after
# checking little more than the lengths: an index out of range, a negative one or a
# decreasing indptr is accepted, and later read by compiled code (SciPy's own
# sparse products as well as this library's compiled loops) that trusts every index and
# reads or writes outside its arrays. Every sparse matrix a user passes is checked
# here, in O(nnz + n_rows), before any compiled code sees it.

_FULL_CHECK = ("Build it with scipy.sparse.csr_matrix((data, indices, indptr), shape=...) "
               "from valid indices, or call {name}.check_format(full_check=True) to find "
               "the bad entry.")


def _index_array(array, name, what):
    array = np.asarray(array)
    if array.dtype.kind not in "iu":
        raise TypeError(
            f"{name} has {what} of dtype {array.dtype}, not integers; build it from "
            "integer index arrays (np.int32 or np.int64).")
    if array.ndim != 1:
        raise ValueError(f"{name} has {what} of shape {array.shape}, not 1-D; "
                         + _FULL_CHECK.format(name=name))
    return array


def _check_index_range(indices, bound, name, what):
    """Every entry of ``indices`` in [0, bound)."""
    if not indices.size:
        return
    low, high = int(indices.min()), int(indices.max())
    if low < 0 or high >= bound:
        found = low if low < 0 else high
        raise ValueError(
            f"{name} has a {what} index out of range [0, {bound}): found {found}. "
            + _FULL_CHECK.format(name=name))


def _check_compressed(A, name, n_major, n_minor, major, minor):
    indptr = _index_array(A.indptr, name, "an indptr")
    indices = _index_array(A.indices, name, "indices")
    data = np.asarray(A.data)
    if indptr.shape[0] != n_major + 1:
        raise ValueError(
            f"{name} has an indptr of length {indptr.shape[0]}, but its shape "
            f"{A.shape} needs {n_major + 1} (one more than its number of {major}s). "
            + _FULL_CHECK.format(name=name))
    if indptr[0] != 0:
        raise ValueError(f"{name} has indptr[0] = {int(indptr[0])}, not 0. "
                         + _FULL_CHECK.format(name=name))
    if n_major and np.any(indptr[1:] < indptr[:-1]):
        at = int(np.flatnonzero(indptr[1:] < indptr[:-1])[0])
        raise ValueError(
            f"{name} has a decreasing indptr (indptr[{at}] = {int(indptr[at])} > "
            f"indptr[{at + 1}] = {int(indptr[at + 1])}), so {major} {at} has a "
            "negative number of entries. " + _FULL_CHECK.format(name=name))
    nnz = int(indptr[-1])
    if nnz > indices.shape[0] or nnz > data.shape[0]:
        raise ValueError(
            f"{name} has indptr[-1] = {nnz} entries, but only {indices.shape[0]} indices "
            f"and {data.shape[0]} values. " + _FULL_CHECK.format(name=name))
    _check_index_range(indices[:nnz], n_minor, name, minor)


def check_sparse_structure(A, name="X"):
    """Check that the index arrays of the sparse matrix ``A`` describe its shape.

    For CSR and CSC (and BSR, by blocks): ``indptr`` has one entry per row (column)
    plus one, starts at 0, never decreases and ends at ``nnz <= len(indices),
    len(data)``; every index lies in ``[0, n_columns)`` (``[0, n_rows)``) and is an
    integer. For COO: the row and column indices lie in range. DIA, LIL and DOK
    matrices hold no raw indices that SciPy's conversions trust. Dense input passes
    unchecked. O(nnz + n_rows); nothing is copied or modified.

    Raises
    ------
    ValueError
        When an index or ``indptr`` is out of range or ``indptr`` decreases: the
        message names ``name``, the bad value and how to build a valid matrix.
    TypeError
        When an index array does not hold integers.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import sparse
    >>> A = sparse.csr_matrix((np.ones(2), np.array([0, 7]), np.array([0, 1, 2])),
    ...                       shape=(2, 3))
    >>> check_sparse_structure(A, "affinity")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: affinity has a column index out of range [0, 3): found 7. Build it ...
    """
    if not sparse.issparse(A):
        return
    shape = A.shape
    if len(shape) != 2 or min(shape) < 0:
        raise ValueError(f"{name} must be a 2-D sparse matrix, got shape {shape}.")
    n_rows, n_cols = shape
    fmt = A.format
    if fmt == "csr":
        _check_compressed(A, name, n_rows, n_cols, "row", "column")
    elif fmt == "csc":
        _check_compressed(A, name, n_cols, n_rows, "column", "row")
    elif fmt == "bsr":
        r, c = A.blocksize
        if r < 1 or c < 1 or n_rows % r or n_cols % c:
            raise ValueError(f"{name} has blocks of {A.blocksize} that do not tile its "
                             f"shape {shape}. " + _FULL_CHECK.format(name=name))
        _check_compressed(A, name, n_rows // r, n_cols // c, "block row", "block column")
    elif fmt == "coo":
        coords = getattr(A, "coords", None)
        if coords is None:  # SciPy < 1.13
            coords = (A.row, A.col)
        if len(coords) != 2:
            raise ValueError(f"{name} must be a 2-D sparse matrix, got {len(coords)} "
                             "index arrays.")
        rows = _index_array(coords[0], name, "row indices")
        cols = _index_array(coords[1], name, "column indices")
        nnz = np.asarray(A.data).shape[0]
        if rows.shape[0] != nnz or cols.shape[0] != nnz:
            raise ValueError(
                f"{name} has {rows.shape[0]} row and {cols.shape[0]} column indices for "
                f"{nnz} values. " + _FULL_CHECK.format(name=name))
        _check_index_range(rows, n_rows, name, "row")
        _check_index_range(cols, n_cols, name, "column")


def as_real_array(value, name, *, finite=False):
    """``value`` as a float64 NumPy array, refusing what is not real numbers.

    Complex numbers, strings, Python objects and sparse matrices get a
    ``ValueError`` naming ``name`` (NumPy would drop imaginary parts with only a
    warning, or fail with a message that names no argument); bools, integers and
    float16 are converted. ``finite=True`` also refuses NaN and infinity.

    Examples
    --------
    >>> as_real_array([[1, 2]], "landmarks")
    array([[1., 2.]])
    >>> as_real_array([[1j]], "landmarks")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: landmarks holds complex numbers; pass real numbers ...
    """
    if sparse.issparse(value):
        raise TypeError(f"{name} must be a dense array, got a sparse matrix; convert it "
                        f"with {name}.toarray().")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise ValueError(f"{name} must be an array of numbers: {exc}") from None
    if array.dtype.kind == "c":
        raise ValueError(f"{name} holds complex numbers; pass real numbers (np.real({name}) "
                         "where the imaginary parts are zero).")
    if array.dtype.kind not in "biuf":
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name} must hold numbers, got an array of dtype {array.dtype} ({exc}); "
                f"convert it with np.asarray({name}, dtype=float).") from None
    array = array.astype(np.float64, copy=False)
    if finite and not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinity; pass finite values.")
    return array
