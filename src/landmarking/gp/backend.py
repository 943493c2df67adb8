"""The backend binding of GP landmarking: where the steps run, chosen once.

:func:`gp_backend` resolves the ``device`` parameter and returns the backend:
the CPU one (:mod:`._cpu`, the steps on the host, compiled) or the torch one
(:mod:`._torch`, the steps on a torch device). Both offer the interface
:class:`GPBackend`, which :func:`.fit.learn_gp_landmarks` and
:func:`.refine_landmarks.refine_gp_landmarks` use, for blocks of landmarks and one landmark
at a time alike (the sequential fit is blocks of one): a fit's state
(:class:`FitState`) and a refinement's (:class:`RefinementState`; on the host for
every device).

This is the only place a GP fit branches on the device. torch itself is imported
(by :mod:`._torch`) only when a torch backend runs: it is an optional dependency.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import numpy as np

from .._torch import check_device, device_name
from .._typing import DeviceLike
from . import _cpu, _torch
from .sampling import Sample

__all__ = ["gp_backend", "GPBackend", "FitState", "RefinementState"]


class FitState(Protocol):
    """A fit's state on a backend: its kernel columns and batch factors.

    The driver starts blocks of landmarks k .. k + B - 1 (B = 1: one landmark),
    runs their steps, has a block's kernel columns computed for its greedy order,
    and adds the finished landmarks' columns.
    """

    def start(self, k: int, t0: np.ndarray, order: list[tuple[int, int]]) -> None:
        """Landmarks k .. k + B - 1 start at ``t0`` (B, d) and step on ``order``
        ((chunk, batch) of the sample's layout per step)."""

    def run(self, step_bar: Any = None) -> tuple[np.ndarray, int]:
        """Their steps; returns (their positions (B, d), the steps run)."""

    def block_gram(self, k: int, end: int, first: int) -> np.ndarray:
        """Phi[:, :end]^T Phi[:, first:end] over all rows ((end, end - first),
        float64), after the block k .. end - 1's kernel columns are computed."""

    def reorder(self, k: int, order: np.ndarray) -> None:
        """The block's landmarks k, k + 1, ... were put in ``order``: so are their
        kernel columns."""

    def add_column(self, k: int, t: np.ndarray) -> None:
        """Landmark k is finished at ``t``: its kernel column joins the span."""

    def gram(self, k: int) -> np.ndarray:
        """Phi^T Phi (k x k, float64) over all rows, for the first k landmarks."""


class RefinementState(Protocol):
    """The refinement's state: each landmark re-optimised against all the others,
    kept when that raises its posterior variance given them."""

    #: (K, d) float64, the landmarks, moved in place as moves are accepted.
    landmarks: np.ndarray
    #: Phi^T Phi (K x K, float64) over all rows, kept up to date.
    gram: np.ndarray

    def optimise(self, k: int, order: list[tuple[int, int]], *, auto: bool,
                 **settings: Any) -> tuple[np.ndarray, int]:
        """Landmark k's steps against the others; returns (its position, steps run)."""

    def accept(self, k: int, t: np.ndarray) -> bool:
        """Move landmark k to ``t`` where that raises its objective; whether it moved."""


class GPBackend(Protocol):
    """Where a GP fit's steps run (:func:`gp_backend`)."""

    #: Where it runs: "cpu" or e.g. "cuda:0" (``GPLandmarks.device_``).
    name: str

    def fit(self, sample: Sample, landmarks: np.ndarray, n_previous: int, *, eta: float,
            space: str, max_steps: int, s0: float, tau: float, auto: bool,
            n_jobs: int | None) -> AbstractContextManager[FitState]:
        """A fit's state on ``sample`` (its rows and batch layout), a context;
        ``landmarks`` is the fit's landmark table, its first ``n_previous`` rows
        finished."""

    def refinement(self, sample: Sample, landmarks: np.ndarray, *,
                   eta: float) -> RefinementState:
        """The refinement's state for ``landmarks`` on ``sample``."""


@dataclass(frozen=True)
class _Backend:
    """A :class:`GPBackend` made of its name and two functions."""

    name: str
    fit: Callable[..., AbstractContextManager[FitState]]
    refinement: Callable[..., RefinementState]


def gp_backend(device: DeviceLike = "cpu") -> GPBackend:
    """The backend that runs a GP fit on ``device``.

    Parameters
    ----------
    device : {"cpu", "cuda", "cuda:N", "auto"} or torch.device
        As ``GPLandmarks(device=...)``: resolved by
        :func:`landmarking._torch.check_device` (errors name the fix).

    Returns
    -------
    GPBackend
        Its ``name``, ``fit(sample, landmarks, n_previous, **settings)`` and
        ``refinement(sample, landmarks, eta=...)``; the refinement runs on the
        host for every device.
    """
    resolved = check_device(device)
    if resolved is None:
        return _Backend(device_name(None), _cpu.cpu_fit, _cpu.cpu_refinement)
    return _Backend(device_name(resolved), partial(_torch.torch_fit, device=resolved),
                    _cpu.cpu_refinement)
