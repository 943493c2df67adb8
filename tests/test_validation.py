"""The parameter table of ``_validation``: each rule accepts what it names and refuses
the rest with a message that names the parameter, the value and what to pass; the
checks of sparse index arrays and of real-number arrays."""

import numpy as np
import pytest
from scipy import sparse

from landmarking._validation import (
    AnyOf,
    Boolean,
    Condition,
    Either,
    Integer,
    NoneValue,
    Number,
    Options,
    PositiveNumber,
    as_real_array,
    check_params,
    check_sparse_structure,
    is_real_number,
)


class _Stub:
    def __init__(self, **params):
        self.__dict__.update(params)


RULES = {
    "n_steps": AnyOf(Integer(), Options("auto")),
    "chunk_size": AnyOf(Integer(), NoneValue()),
    "tau": Number(0, 1, closed="right"),
    "width": AnyOf(PositiveNumber(), Options("auto", "variance")),
    "refine": Integer(0),
}
GOOD = dict(n_steps=5, chunk_size=None, tau=1.0, width="auto", refine=0)


def test_good_values_pass_and_are_returned_as_plain_types():
    checked = check_params(_Stub(**{**GOOD, "n_steps": np.int64(7), "width": 2}), RULES)
    assert checked == {"n_steps": 7, "chunk_size": None, "tau": 1.0, "width": 2.0,
                       "refine": 0}
    assert type(checked["n_steps"]) is int and type(checked["width"]) is float


@pytest.mark.parametrize("name, value, error, match", [
    ("n_steps", 0, ValueError, r"n_steps must be >= 1, got 0; pass a larger value"),
    ("n_steps", "fast", ValueError, r"n_steps must be one of 'auto'; got 'fast'"),
    ("n_steps", 2.5, TypeError, r"n_steps must be an integer, got 2.5"),
    ("n_steps", None, ValueError, r"n_steps must be an integer >= 1 or one of 'auto'; got None"),
    ("chunk_size", True, ValueError, r"chunk_size must be an integer >= 1 or None; got True"),
    ("tau", 0, ValueError, r"tau must be a number in \(0, 1\], got 0"),
    ("tau", float("nan"), TypeError, r"tau must be a number in \(0, 1\], got nan"),
    ("width", -1.0, ValueError, r"width must be a finite number > 0, got -1.0"),
    ("refine", -1, ValueError, r"refine must be >= 0, got -1"),
])
def test_bad_values_name_the_parameter_and_the_fix(name, value, error, match):
    with pytest.raises(error, match=match):
        check_params(_Stub(**{**GOOD, name: value}), RULES)


def test_check_params_leaves_the_estimator_unchanged():
    stub = _Stub(**{**GOOD, "n_steps": np.int64(3)})
    check_params(stub, RULES)
    assert type(stub.n_steps) is np.int64


# ------------------------------------------------------------ the special-value rules

@pytest.mark.parametrize("rule, value, error, match", [
    # A word with its own message for any other string, the rule's error otherwise.
    (Either("auto", Integer(), "{name} must be a positive int or 'auto', got {value!r}."),
     "fast", ValueError, r"n_steps must be a positive int or 'auto', got 'fast'\.$"),
    (Either("auto", Integer(), "unused"), 0, ValueError, r"n_steps must be >= 1, got 0"),
    (Either("auto", Integer(), "unused"), None, TypeError,
     r"n_steps must be an integer, got None of type NoneType"),
    # Without a message, another string gets the word's Options error.
    (Either("auto", PositiveNumber()), "wide", ValueError,
     r"n_steps must be one of 'auto'; got 'wide'\.$"),
    (Either("auto", PositiveNumber()), None, TypeError,
     r"n_steps must be a positive number, got None"),
    # None as the special value: a string gets the rule's error, not a list of forms.
    (Either(None, Integer()), "x", TypeError, r"n_steps must be an integer, got 'x'"),
    (Either(None, Integer()), 0, ValueError, r"n_steps must be >= 1, got 0"),
    (Condition(lambda v: is_real_number(v) and v >= 0, "{name} must be >= 0, got {value!r}."),
     -1, ValueError, r"n_steps must be >= 0, got -1\.$"),
    (Condition(lambda v: is_real_number(v) and v >= 0, "{name} must be >= 0, got {value!r}."),
     True, ValueError, r"n_steps must be >= 0, got True\.$"),
    (Boolean(), "yes", ValueError, r"n_steps must be True or False, got 'yes'\.$"),
    (Boolean(), 2, ValueError, r"n_steps must be True or False, got 2\.$"),
])
def test_special_value_rules_refuse_with_their_words(rule, value, error, match):
    with pytest.raises(error, match=match):
        check_params(_Stub(n_steps=value), {"n_steps": rule})
    assert not rule.accepts(value)


@pytest.mark.parametrize("rule, value, expected", [
    (Either("auto", Integer()), "auto", "auto"),
    (Either("auto", Integer()), np.int64(4), 4),
    (Either(None, Integer()), None, None),
    (Either("auto", PositiveNumber()), 2, 2.0),
    (Condition(lambda v: v is None or v > 0, "{name}: no"), None, None),
    (Boolean(), True, True),
    (Boolean(), np.False_, False),
])
def test_special_value_rules_accept_and_return(rule, value, expected):
    assert rule.accepts(value)
    checked = check_params(_Stub(v=value), {"v": rule})["v"]
    assert checked == expected and type(checked) is type(expected)


def test_is_real_number():
    assert is_real_number(1) and is_real_number(np.float32(0.5)) and is_real_number(np.nan)
    assert not is_real_number(True) and not is_real_number("1") and not is_real_number(None)


# The estimators' tables keep the words their errors always had.
@pytest.mark.parametrize("make, name, value, error, match", [
    ("GPLandmarks", "n_steps", "fast", ValueError,
     r"n_steps must be a positive int, 'auto' or None"),
    ("GPLandmarks", "chunk_size", "big", TypeError, r"chunk_size must be an integer, got 'big'"),
    ("GPLandmarks", "chunk_size", 0, ValueError, r"chunk_size must be >= 1, got 0"),
    ("GPLandmarks", "n_jobs", 0, ValueError,
     r"n_jobs must be None, a positive number of threads, or -1 for all cores"),
    ("GPLandmarks", "s0", -1.0, ValueError, r"s0 must be a number >= 0, got -1\.0\.$"),
    ("GPLandmarks", "tau", 0, ValueError,
     r"tau must lie in \(0, 1\] \(0\.5 < tau <= 1 for guaranteed convergence\), got 0\.$"),
    ("LocallyLinearLandmarks", "refine", "yes", ValueError,
     r"refine must be False, True \(iterate to convergence\), 'auto' or a number of "
     r"LOBPCG iterations >= 0, got 'yes'\.$"),
    ("LocallyLinearLandmarks", "bandwidth", "wide", ValueError,
     r"bandwidth must be one of 'auto'; got 'wide'\.$"),
    ("LocallyLinearLandmarks", "bandwidth", None, TypeError,
     r"bandwidth must be a positive number, got None"),
    ("LaplacianEigenmaps", "tol", -1, ValueError, r"tol must be None or a number >= 0, got -1"),
    ("LaplacianEigenmaps", "bandwidth", 0.0, ValueError, r"bandwidth must be a finite number > 0"),
])
def test_estimator_tables_keep_their_messages(make, name, value, error, match):
    import landmarking

    estimator = getattr(landmarking, make)(**{name: value})
    with pytest.raises(error, match=match):
        check_params(estimator, estimator._parameter_rules)


@pytest.mark.parametrize("make, params", [
    ("GPLandmarks", dict(n_steps="auto", chunk_size=None, s0=0.0, tau=1.0, n_jobs=-1)),
    ("LocallyLinearLandmarks", dict(refine=True, bandwidth="auto")),
    ("LaplacianEigenmaps", dict(tol=None, bandwidth=0.5)),
    ("LaplacianEigenmaps", dict(tol=1e-6)),
])
def test_estimator_tables_accept_their_special_values(make, params):
    import landmarking

    estimator = getattr(landmarking, make)(**params)
    check_params(estimator, estimator._parameter_rules)


# ------------------------------------------------------------ sparse structure

def _csr(indices, indptr, shape=(3, 4)):
    indices, indptr = np.asarray(indices), np.asarray(indptr)
    return sparse.csr_matrix((np.ones(len(indices)), indices, indptr), shape=shape)


def _corrupted(make):
    """A matrix SciPy would refuse to build: built valid, then its arrays replaced."""
    A = _csr([0, 1, 2], [0, 1, 2, 3])
    make(A)
    return A


@pytest.mark.parametrize("matrix, error, match", [
    (_csr([0, 9, 2], [0, 1, 2, 3]), ValueError,
     r"W has a column index out of range \[0, 4\): found 9\. Build it with "
     r"scipy\.sparse\.csr_matrix\(\(data, indices, indptr\), shape=\.\.\.\) from valid "
     r"indices, or call W\.check_format\(full_check=True\)"),
    (_csr([0, -1, 2], [0, 1, 2, 3]), ValueError, r"out of range \[0, 4\): found -1"),
    (_csr([0, 1, 2], [0, 2, 1, 3]), ValueError,
     r"W has a decreasing indptr \(indptr\[1\] = 2 > indptr\[2\] = 1\), so row 1"),
    (_corrupted(lambda A: setattr(A, "indptr", np.array([0, 1, 3]))), ValueError,
     r"indptr of length 3, but its shape \(3, 4\) needs 4"),
    (_corrupted(lambda A: setattr(A, "indptr", np.array([1, 1, 2, 3]))), ValueError,
     r"indptr\[0\] = 1, not 0"),
    (_corrupted(lambda A: setattr(A, "indptr", np.array([0, 1, 2, 7]))), ValueError,
     r"indptr\[-1\] = 7 entries, but only 3 indices and 3 values"),
    (_corrupted(lambda A: setattr(A, "indices", np.array([0.0, 1.0, 2.0]))), TypeError,
     r"W has indices of dtype float64, not integers"),
    (sparse.csc_matrix((np.ones(2), np.array([0, 5]), np.array([0, 1, 2])), shape=(3, 2)),
     ValueError, r"W has a row index out of range \[0, 3\): found 5"),
])
def test_check_sparse_structure_names_the_bad_entry_and_the_fix(matrix, error, match):
    with pytest.raises(error, match=match):
        check_sparse_structure(matrix, "W")


def test_check_sparse_structure_checks_coo_and_passes_good_matrices():
    A = sparse.coo_matrix((np.ones(2), (np.array([0, 1]), np.array([1, 0]))), shape=(2, 2))
    for fmt in ("csr", "csc", "coo", "bsr", "lil", "dok", "dia"):
        check_sparse_structure(A.asformat(fmt), "W")
    check_sparse_structure(np.ones((2, 2)), "W")  # dense: nothing to check
    check_sparse_structure(sparse.csr_matrix((0, 5)), "W")  # empty
    A.col[1] = 2  # SciPy checks COO indices when it builds one, not later
    with pytest.raises(ValueError, match=r"column index out of range \[0, 2\): found 2"):
        check_sparse_structure(A, "W")
    A.col[1], A.row[0] = 0, -4
    with pytest.raises(ValueError, match=r"row index out of range \[0, 2\): found -4"):
        check_sparse_structure(A, "W")


@pytest.mark.parametrize("value, match", [
    ([[1j, 2]], "landmarks holds complex numbers; pass real numbers"),
    ([["a", "b"]], r"landmarks must hold numbers, got an array of dtype <U1"),
    (np.array([[None, {}]], dtype=object), "landmarks must hold numbers"),
    ([[1.0], [2.0, 3.0]], "landmarks must be an array of numbers"),
])
def test_as_real_array_refuses_what_is_not_real_numbers(value, match):
    with pytest.raises(ValueError, match=match):
        as_real_array(value, "landmarks")


def test_as_real_array_converts_numbers_and_checks_finite_on_request():
    for value in ([[True, False]], np.ones((1, 2), np.float16), np.ones((1, 2), np.int8)):
        assert as_real_array(value, "x").dtype == np.float64
    with pytest.raises(TypeError, match=r"x must be a dense array.*x\.toarray\(\)"):
        as_real_array(sparse.csr_matrix(np.ones((2, 2))), "x")
    with pytest.raises(ValueError, match="x contains NaN or infinity"):
        as_real_array([np.nan], "x", finite=True)
