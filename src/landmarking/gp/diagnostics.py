"""Can a GP landmark fit tell that its kernel width is off? From ``objective_`` alone.

The objective of landmark k is (1/N) phi_k^T M phi_k: the mean over the data of
the squared kernel values phi_k = exp(-||x - t_k||^2 / eta), less what the
landmarks before it already explain. For the first landmark, M = I, so

- ``N * objective_[0]`` is the number of points its kernel covers (weighted by
  the squared kernel value). The first landmark is the one that covers the most,
  so when it covers fewer than :data:`MIN_COVERED_POINTS` points, no landmark sees
  more than its own point: the width is far below the spacing of the data, and
  the posterior variance stays ~1 everywhere however many landmarks are added;
- ``objective_[0]`` itself is at most 1; at :data:`MAX_FIRST_OBJECTIVE` or above,
  the kernel is nearly constant over the data: the first landmark explains
  almost everything, the posterior variance is ~0 after it, and every later
  landmark gains almost nothing.

On the library's own data (circles, digits, Swiss roll, uniform and Gaussian
blobs) the default ``kernel_width="auto"`` gives 13 to 130 covered points and a
first objective of 0.01 to 0.3; a width 1,000 times smaller covers one point or
none, and one 100 to 1,000 times larger gives 0.96 to 1.0.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._typing import ArrayLike

__all__ = ["KernelWidthWarning", "diagnose_kernel_width", "warn_if_kernel_width_is_off",
           "MIN_COVERED_POINTS", "MAX_FIRST_OBJECTIVE"]

#: Fewer points than this under the first landmark's kernel: the width is too small.
MIN_COVERED_POINTS = 2.0
#: A first objective this close to its maximum of 1: the width is too large.
MAX_FIRST_OBJECTIVE = 0.9


class KernelWidthWarning(UserWarning):
    """The fitted GP landmarks show that the kernel width does not suit the data."""


def diagnose_kernel_width(objective: ArrayLike, n_samples: int,
                          kernel_width: float) -> str | None:
    """A sentence naming the measure and the fix when the width is off, else None.

    Parameters
    ----------
    objective : ndarray of shape (n_landmarks,)
        ``GPLandmarks.objective_``: (1/N) phi^T M phi of each landmark, in order.
    n_samples : int
        N, the rows the objectives were averaged over.
    kernel_width : float
        The width used (``kernel_width_``).

    Returns
    -------
    str or None

    Examples
    --------
    >>> diagnose_kernel_width(np.array([0.0004, 0.0004]), 2500, 1e-3) is None
    False
    >>> diagnose_kernel_width(np.array([0.02, 0.015]), 2500, 1.0) is None
    True
    """
    objective = np.asarray(objective, dtype=np.float64)
    if objective.size == 0 or not np.isfinite(objective[0]):
        return None
    covered = n_samples * objective[0]
    if covered < MIN_COVERED_POINTS:
        return (
            f"kernel_width_={kernel_width:.4g} is too small for these data: the first "
            f"landmark's kernel covers {covered:.2g} points (n_samples * objective_[0]; "
            f"below {MIN_COVERED_POINTS:g}), so each landmark sees only its own point and "
            "the posterior variance stays ~1 everywhere. Pass kernel_width='auto' or a "
            "larger width (about the squared distance to the 20th nearest neighbour), or "
            "more n_steps if the landmarks did not reach the data."
        )
    if objective[0] >= MAX_FIRST_OBJECTIVE:
        return (
            f"kernel_width_={kernel_width:.4g} is too large for these data: the first "
            f"landmark's objective is {objective[0]:.3g} of the maximum 1 (objective_[0]; "
            f"{MAX_FIRST_OBJECTIVE:g} or more), so the kernel is nearly constant over the "
            "data, the posterior variance is ~0 after the first landmark and later "
            "landmarks gain almost nothing. Pass kernel_width='auto' or a smaller width."
        )
    return None


def warn_if_kernel_width_is_off(objective: ArrayLike, n_samples: int, kernel_width: float, *,
                                stacklevel: int = 3) -> str | None:
    """Issue a :class:`KernelWidthWarning` when :func:`diagnose_kernel_width` finds one."""
    message = diagnose_kernel_width(objective, n_samples, kernel_width)
    if message is not None:
        warnings.warn(message, KernelWidthWarning, stacklevel=stacklevel)
    return message
