"""The backend binding of Locally Linear Landmarks: where Z, A~, B~ and the map run.

:func:`lll_backend` resolves the ``device`` parameter once and returns the NumPy
path (:mod:`~landmarking.lll._cpu` and :mod:`.out_of_sample`, with the compiled loops of
:mod:`._loops`) or the torch one (:mod:`._torch`, bound to the device). Both
offer the same small interface:

- ``weights(X, landmarks, K_Z, *, reg, verbose)``: the sparse weights Z;
- ``reduced_problem(W, Z)``: A~ = Z L Z^T and B~ = Z D Z^T;
- ``out_of_sample(Y, landmarks, landmark_embedding, K_Z, reg)``: the map of
  validated rows, x_0 = X~ z_0.

This is the only place an LLL fit branches on the device. torch itself is
imported (by :mod:`._torch`) only when a torch backend runs: it is an optional
dependency.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from .._torch import check_device
from .._typing import DeviceLike
from . import _torch
from ._cpu import reconstruction_weights, reduced_problem
from .out_of_sample import lll_map_rows

__all__ = ["lll_backend", "LLLBackend"]


@dataclass(frozen=True)
class LLLBackend:
    """The three computations of LLL that run where the data go (see the module)."""

    weights: Callable
    reduced_problem: Callable
    out_of_sample: Callable


def lll_backend(device: DeviceLike = "cpu") -> LLLBackend:
    """The NumPy functions for ``device="cpu"``, else the torch ones on ``device``.

    Parameters
    ----------
    device : {"cpu", "cuda", "cuda:N", "auto"} or torch.device
        As ``LocallyLinearLandmarks(device=...)``, resolved by
        :func:`landmarking._torch.check_device` (its errors name the fix).

    Returns
    -------
    LLLBackend
    """
    resolved = check_device(device)
    if resolved is None:
        return LLLBackend(reconstruction_weights, reduced_problem, lll_map_rows)
    return LLLBackend(partial(_torch.reconstruction_weights, device=resolved),
                      partial(_torch.reduced_problem, device=resolved),
                      partial(_torch.lll_out_of_sample, device=resolved))
