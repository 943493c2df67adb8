"""The sequential pass of GP landmarking, for every backend: :func:`learn_gp_landmarks`.

The one driver of a fit (the symbols are those of :mod:`.objective`): for each
landmark in turn it draws the start and the order of batches from ``(seed, k)``,
has the backend (:func:`.backend.gp_backend`: NumPy on the host or torch on a
device) run the steps and add the landmark's kernel column, reports to the
callback after each landmark, and computes the objectives on all the data from
the backend's Gram matrix at the end. A ``KeyboardInterrupt`` carries the
landmarks finished so far (``partial_result``). The step schedule, the move and
the stopping rule of ``n_steps="auto"`` are in :mod:`.objective`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from tqdm.auto import tqdm

from .._blocks import chunk_bounds
from .._typing import ArrayLike, DeviceLike, MatrixLike
from ..kernels import column_mean_std
from ..spaces import project
from .backend import gp_backend
from .batches import _batch_order, _Chunks
from .objective import _objectives, max_steps

__all__ = ["learn_gp_landmarks"]


def _initial_point(k, init, mean, std, rng, space):
    """Landmark k's start: a draw from the Gaussian with the data's per-dimension mean
    and spread (the paper's), or row k of the given ``init``; projected onto ``space``."""
    if isinstance(init, str):
        t = mean + std * rng.standard_normal(mean.shape[0])
    else:
        t = np.asarray(init[k], dtype=np.float64)
    return project(t, space)


def _landmark_table(previous_landmarks, n_landmarks, n_features):
    """(n_landmarks x n_features table with the previous landmarks first, how many
    there were): the list a fit continues."""
    previous = (np.zeros((0, n_features)) if previous_landmarks is None
                else np.asarray(previous_landmarks, dtype=np.float64))
    landmarks = np.zeros((n_landmarks, n_features))
    landmarks[:previous.shape[0]] = previous
    return landmarks, previous.shape[0]


def learn_gp_landmarks(X: MatrixLike, n_landmarks: int, *, kernel_width: float,
                       n_steps: int | Literal["auto"] = 1000, batch_size: int = 1000,
                       s0: float = 10.0, tau: float = 0.51,
                       space: Literal["euclidean", "nonnegative", "sphere"] = "euclidean",
                       init: Literal["gaussian"] | ArrayLike = "gaussian",
                       previous_landmarks: ArrayLike | None = None, seed: int = 0,
                       chunk_size: int | None = None,
                       callback: Callable[[np.ndarray, np.ndarray, np.ndarray], Any]
                       | None = None,
                       return_n_steps: bool = False, device: DeviceLike = "cpu",
                       verbose: bool = False) -> tuple[np.ndarray, ...]:
    """Learn landmarks one after another by stochastic projected ascent on f.

    The plain-array function behind :class:`landmarking.GPLandmarks`; ``X`` must
    already be validated (finite, 2-D, feasible for ``space``). It may be a NumPy
    array, a CSR matrix, a memory map, a Zarr array or a Dask array: X is read one
    chunk at a time and never copied whole, except an in-memory array while the
    copy is small (see Notes).

    Parameters
    ----------
    X : array of shape (n_samples, n_features), float32 or float64 (or any kind
        :func:`landmarking._blocks.check_rows` accepts)
    n_landmarks : int
        Total number of landmarks, counting ``previous_landmarks``.
    kernel_width : float
        eta > 0.
    n_steps, batch_size, s0, tau, chunk_size : see :class:`landmarking.GPLandmarks`
    space : {"euclidean", "nonnegative", "sphere"}
    init : "gaussian" or ndarray (n_landmarks, n_features)
    previous_landmarks : ndarray (k, n_features), optional
        Landmarks of an earlier run on the same data with the same settings; they
        are kept and the run continues with landmark k + 1.
    seed : int
        Landmark k draws its start and its order of chunks and batches from
        ``(seed, k)``, and the batches of chunk c come from a permutation drawn from
        ``(seed, c)``, so landmark k never depends on how many landmarks are asked
        for.
    callback : callable, optional
        Called as ``callback(landmarks, objectives, seconds)`` right after each
        landmark is finished: the landmarks so far (k + 1 rows, a view: copy to
        keep) and the ``objectives`` and ``seconds`` of the new ones so far. The
        objectives are computed for all landmarks at the end, in one pass over the
        data: they are NaN in every call but the last, which comes after that pass.
        Used to save a run as it goes (``GPLandmarks.fit(checkpoint=...)``).
    return_n_steps : bool
        Also return the number of steps each new landmark ran.
    device : {"cpu", "cuda", "cuda:N", "auto"} or torch.device, default="cpu"
        Where the steps run (see :class:`landmarking.GPLandmarks`): "cpu" is the
        NumPy backend (:mod:`._numpy`), a torch device the torch backend
        (:mod:`._torch`); both give the same landmarks to rounding.
    verbose : bool
        tqdm progress bars over landmarks and steps.

    Returns
    -------
    landmarks : ndarray (n_landmarks, n_features), float64
    objectives : ndarray (n_landmarks,)
        f at each landmark (the previous ones included) on all the data, divided
        by N, computed after the last landmark in one pass.
    seconds : ndarray (n_landmarks - k,)
        Wall time for each new landmark.
    n_steps : ndarray (n_landmarks - k,), int
        Steps run by each new landmark; only with ``return_n_steps``.

    If interrupted (``KeyboardInterrupt``), the exception carries the partial
    result (the same tuple, for the finished landmarks) in its ``partial_result``
    attribute before it propagates.

    Notes
    -----
    Memory: one chunk of X (rows x n_features) at a time, plus the kernel table
    Phi, n_samples x n_landmarks values of X's dtype, when it fits in
    ``KERNEL_TABLE_BYTES`` (else only the visited chunk's Phi, recomputed at each
    visit), plus the batches' Cholesky factors (at most ``FACTOR_CACHE_BYTES``),
    plus copies of dense chunks in the batches' order (``batches.IN_ORDER_BYTES``):
    of all chunks while they fit in 2 GiB and a quarter of the memory available, for
    data in memory; else of one chunk (never for chunks over 2 GiB).
    The objectives are computed after the last landmark, in one more pass.
    On a torch device the memory is that of :func:`._torch.torch_fit`.
    """
    n_samples, n_features = X.shape
    backend = gp_backend(device)
    landmarks, n_previous = _landmark_table(previous_landmarks, n_landmarks, n_features)
    auto = isinstance(n_steps, str)
    steps_per_landmark = max_steps(n_steps)
    bounds = chunk_bounds(X, chunk_size)
    chunks = _Chunks(X, bounds, batch_size, landmarks, kernel_width, seed,
                     backend.table_bytes())
    mean, std = column_mean_std(X, bounds)
    seconds, steps = [], []
    outer = tqdm(range(n_previous, n_landmarks), desc="landmarks", disable=not verbose,
                 unit="landmark")
    with backend.fit(X, chunks, n_previous, batch_size=batch_size, eta=kernel_width,
                     space=space, max_steps=steps_per_landmark, s0=s0, tau=tau,
                     auto=auto) as fit:

        def result(done):
            objectives = _objectives(fit.gram(done), n_samples, 0)
            out = (landmarks[:done].copy() if done < n_landmarks else landmarks, objectives,
                   np.asarray(seconds))
            return out + (np.asarray(steps, dtype=np.int64),) if return_n_steps else out

        try:
            for k in outer:
                start = time.perf_counter()
                rng = np.random.default_rng([seed, k])
                t0 = _initial_point(k, init, mean, std, rng, space)
                fit.start(k, t0, _batch_order(rng, chunks.batches_per_chunk,
                                              steps_per_landmark))
                with tqdm(total=steps_per_landmark, desc=f"landmark {k + 1}", leave=False,
                          disable=not verbose, unit="step") as step_bar:
                    landmarks[k], taken = fit.run(step_bar)
                fit.add_column(k, landmarks[k])
                seconds.append(time.perf_counter() - start)
                steps.append(taken)
                if callback is not None and k < n_landmarks - 1:
                    callback(landmarks[:k + 1], np.full(len(seconds), np.nan),
                             np.asarray(seconds))
            out = result(n_landmarks)
            if callback is not None and n_landmarks > n_previous:
                callback(landmarks, out[1][n_previous:], np.asarray(seconds))
        except KeyboardInterrupt as interrupt:
            interrupt.partial_result = result(n_previous + len(seconds))
            raise
    return out
