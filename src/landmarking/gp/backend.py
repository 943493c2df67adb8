"""The backend binding of GP landmarking: where the steps run, chosen once.

:func:`gp_backend` resolves the ``device`` parameter and returns the backend:
the NumPy one (:mod:`._numpy`, the steps on the host, compiled) or the
torch one (:mod:`._torch`, the steps on a torch device). Both offer the same
small interface, used by :func:`.learn.learn_gp_landmarks`, for the sequential
steps and for blocks of landmarks alike (``block_size > 1``, :mod:`.blocks`; on
torch :class:`._torch._Steps`):

- ``name``: where it runs ("cpu" or e.g. "cuda:0"), for ``GPLandmarks.device_``;
- ``table_bytes()``: how large a kernel table the host layout keeps
  (:class:`.batches._Chunks`);
- ``fit(X, chunks, n_previous, **settings)``: a context giving the fit's state,
  with ``start(k, t0, order)`` (a landmark's start, or a block's starts (B, d), and
  the batch order), ``run(step_bar)`` (its steps; returns its position, or the
  block's, and the steps run), ``block_gram(k, end)`` (Phi^T Phi over all rows
  after the block k..end-1, for its greedy order), ``reorder(k, order)`` (the
  block's columns put in that order), ``add_column(k, t)`` (the finished
  landmark's kernel column) and ``gram(k)`` (Phi^T Phi over all rows, on the
  host).

This is the only place a GP fit branches on the device. torch itself is imported
(by :mod:`._torch`) only when a torch backend runs: it is an optional dependency.
"""

from dataclasses import dataclass
from functools import partial
from typing import Any

from .._torch import check_device, device_name
from .._typing import DeviceLike
from . import _numpy, _torch

__all__ = ["gp_backend"]


@dataclass(frozen=True)
class _Backend:
    """A backend: its device's name, and the two functions of the interface."""

    name: str
    fit: Any
    table_bytes: Any


def gp_backend(device: DeviceLike = "cpu") -> _Backend:
    """The backend that runs a GP fit on ``device``.

    Parameters
    ----------
    device : {"cpu", "cuda", "cuda:N", "auto"} or torch.device
        As ``GPLandmarks(device=...)``: resolved by
        :func:`landmarking._torch.check_device` (errors name the fix).

    Returns
    -------
    backend
        ``name``, ``table_bytes()`` and ``fit(X, chunks, n_previous, **settings)``
        (see the module's docstring).
    """
    resolved = check_device(device)
    if resolved is None:
        return _Backend(device_name(None), _numpy.numpy_fit, _numpy.table_bytes)
    return _Backend(device_name(resolved), partial(_torch.torch_fit, device=resolved),
                    _torch.table_bytes)
