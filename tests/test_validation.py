"""The parameter table of ``_validation``: each rule accepts what it names and refuses
the rest with a message that names the parameter, the value and what to pass."""

import numpy as np
import pytest

from landmarking._validation import (
    AnyOf,
    Integer,
    NoneValue,
    Number,
    Options,
    PositiveNumber,
    check_params,
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
