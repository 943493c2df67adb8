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
