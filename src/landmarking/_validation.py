"""Checks shared by every estimator: each error names the problem and the fix.

Estimators call these at the top of ``fit``; nothing here modifies the user's data.
"""

from numbers import Integral, Real

import numpy as np
from scipy import sparse

__all__ = [
    "check_positive_int",
    "check_positive_float",
    "check_open_interval",
    "check_choice",
    "check_enough_samples",
    "check_feasible_for_space",
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


def check_feasible_for_space(X, space):
    """Check that the data can live in ``space`` (nonnegative entries, nonzero rows).

    Works one block at a time on every kind of input (dense, sparse, memory map,
    Zarr, Dask) without densifying or loading it.
    """
    check_choice(space, "space", SPACES)
    if space == "euclidean":
        return
    from ._blocks import block_bounds, reduce_row_blocks

    bounds = block_bounds(X)
    parts = reduce_row_blocks(_minimum_and_zero_rows, X, bounds=bounds)
    minimum = min(part[0] for part in parts)
    if minimum < 0:
        raise ValueError(
            f"space={space!r} needs nonnegative data, but X has negative entries "
            f"(minimum {minimum:.3g}); use space='euclidean', or transform the data "
            "(for histograms: square roots of normalised counts)."
        )
    if space == "sphere":
        # bounds has one entry more than parts (the end of the last block): unpaired.
        zero_rows = np.concatenate(
            [start + part[1] for start, part in zip(bounds, parts, strict=False)]
        )
        if zero_rows.size:
            raise ValueError(
                f"space='sphere' needs every row to have a nonzero norm, but "
                f"{zero_rows.size} rows are all zero (first at index {zero_rows[0]}); "
                "drop the empty rows (e.g. documents with no vocabulary words) first."
            )


def _minimum_and_zero_rows(block):
    """Smallest entry of a block and the indices of its all-zero rows."""
    from sklearn.utils.extmath import row_norms

    data = block.data if sparse.issparse(block) else block
    minimum = float(data.min()) if data.size else 0.0
    return minimum, np.flatnonzero(row_norms(block, squared=True) == 0)


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
