"""GP manifold landmarking (Liang & Paisley, ICML 2015).

Symbols of the paper, used throughout this module:

- ``x_i``: a data point; ``t``: a landmark being optimised; ``eta``: the kernel width.
- ``phi_x(t) = exp(-||t - x||^2 / eta)``: the Gaussian kernel between point and landmark.
- ``Phi``: the b x k matrix of kernel values between the b points of a minibatch and the
  k landmarks already chosen.
- ``M = I - Phi (Phi^T Phi)^-1 Phi^T``: projection out of the span of Phi (never formed).
- ``f(t) = phi(t)^T M phi(t)``: the objective (eq. 7), the squared length of phi(t)
  outside the span of the existing landmarks' columns: the GP posterior variance of the
  plug-in manifold kernel. New landmarks are drawn to dense, unexplained data.
- ``u = M phi``; the gradient (eq. 10) is
  ``grad f = -(4 / eta) (t (phi^T u) - sum_i x_i phi_i u_i) = (4 f / eta) (m - t)``
  with ``m = sum_i x_i phi_i u_i / f``, a weighted mean of the batch.

The scale-free step
-------------------
The paper's step ``t + rho_s grad f`` has units of data / eta, so the same data in
other units gives other landmarks. Here the step moves a dimensionless fraction
``a_s = (s0 + s)^-tau`` (the paper's Robbins-Monro schedule) of the way to ``m``::

    t <- Proj_S(t + a_s (m - t)),

which is the gradient step with rate ``rho_s = a_s eta / (4 f)``. ``m`` is a weighted
mean of data points, so multiplying the data by c and shifting it multiplies and
shifts ``m`` and therefore every landmark; ``eta`` from the data scales by c^2. The
weights may be negative (points already explained by earlier landmarks repel), which
can send ``m`` far away when f is small: each step is therefore limited to
``MAX_STEP_WIDTHS * sqrt(eta)`` plus the distance to the batch's nearest point (so
that a start far from the data can still reach it), again a length in data units.

Kernel values are computed relative to the batch's nearest point (a common factor
of phi that cancels from ``m``), so a landmark far from the data, whose kernel values
would underflow to zero, still gets an exact step toward it.

Speed
-----
- The minibatches are drawn chunk by chunk: each landmark visits the chunks in a
  seeded random order and, in a chunk, its batches (slices of a seeded permutation
  of the chunk's rows) in a random order. No permuted copy of the data is made; a
  batch is a list of row indices into the chunk in memory.
- The steps of a landmark on a dense chunk run in one compiled call per chunk visit
  (:mod:`._gp_kernels`, numba; no Python between steps): each step reads the batch
  once for the distances and kernel values and once more (from cache) for the
  weighted sum, solves against the k finished landmarks and moves t, all in the
  same call. A long visit reads a copy of the chunk in the order of its
  permutation (``_gp_batches.IN_ORDER_STEPS_PER_BATCH``, ``IN_ORDER_BYTES``), so a
  batch is consecutive rows, as is its slice of the kernel table. A step then
  costs 1.4-1.6 times one read of the batch from memory on MNIST (see
  ``docs/results.md``). CSR chunks take the NumPy step
  (``_gp_batches._numpy_step``), which is also the reference the compiled steps are
  tested against.
- Kernel values of finished landmarks on a chunk (Phi) are computed once per
  landmark and kept while the table fits in ``KERNEL_TABLE_BYTES`` (else recomputed
  at each visit); a step reads only its batch's rows of Phi.
- The Cholesky factor of each batch's Gram matrix ``Phi^T Phi`` is kept and grows by
  one row per landmark, so a step costs O(b d + b k + k^2) and ``M`` (b x b) is never
  formed. A tiny ridge keeps the factor defined when two landmarks coincide or a batch
  sees none of a landmark's neighbourhood.
- ``n_steps="auto"`` stops a landmark when its batch objective has stopped rising
  (:class:`_Convergence`); the objectives on all the data come from one Gram pass at
  the end.
- Threads: a step is too small to gain from threads, and threaded BLAS loses badly
  when the cores are busy (ten times slower measured on 2 shared cores), so the step
  loop runs BLAS on one thread, within a ``threadpoolctl`` limit that ends with the
  loop. Everything else keeps the user's settings.

Joint refinement
----------------
:func:`refine_gp_landmarks` (``GPLandmarks(refine=n_sweeps)``) revisits the landmarks
in order, each re-optimised by the same steps with ``M`` projecting out the span of
all the others. Since det(Phi^T Phi) = f_1 f_2 ... f_K for the sequential objectives,
and a landmark's f given all the others is det(Phi^T Phi) over a quantity that does
not depend on it, a move is kept only when it raises that f on all the data: the
sweeps are coordinate ascent on det(Phi^T Phi), which never decreases.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import groupby
from numbers import Real
from typing import Any, Literal, Self

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import ThreadpoolController
from tqdm.auto import tqdm

from .._blocks import check_rows, chunk_bounds
from .._checkpoint import check_checkpoint, landmark_checkpoint
from .._torch import check_device, device_name
from .._typing import ArrayLike, DeviceLike, MatrixLike, NDArray, RandomStateLike, StrPath
from .._validation import (
    SPACES,
    check_choice,
    check_enough_samples,
    check_feasible_for_space,
    check_positive_int,
)
from ..kernels import column_mean_std, resolve_kernel_width
from ..spaces import project
from ._base import LandmarkTransformerMixin

# Re-exported for the tests: the batch layout (their transcription of Algorithm 1)
# and the NumPy step (the reference the compiled step is compared with).
from ._gp_batches import (  # noqa: F401
    RIDGE,
    _batches,
    _BatchGram,
    _BatchGrams,
    _CholeskyFactor,
    _Chunks,
    _CompiledStep,
    _conditional_objective,
    _numpy_step,
    _Others,
    _Preceding,
)
from ._gp_diagnostics import KernelWidthWarning, warn_if_kernel_width_is_off  # noqa: F401

__all__ = ["GPLandmarks", "learn_gp_landmarks", "refine_gp_landmarks", "step_size",
           "gp_objective_and_gradient"]

#: A step moves a landmark by at most this many kernel lengths sqrt(eta).
MAX_STEP_WIDTHS = 3.0
#: Cholesky factors of all batches are kept while they fit in this many bytes.
FACTOR_CACHE_BYTES = 512 * 2**20
#: Kernel values of finished landmarks on all rows are kept while they fit in this
#: many bytes; beyond, they are recomputed for each visited chunk.
KERNEL_TABLE_BYTES = 2 * 2**30
#: ``n_steps="auto"``: at most this many steps per landmark (the paper's fixed S) ...
AUTO_MAX_STEPS = 1000
#: ... at least this many ...
AUTO_MIN_STEPS = 100
#: ... and stop when the mean batch objective over a window of this many steps ...
AUTO_WINDOW = 50
#: ... improves on the window before by less than this fraction of itself.
AUTO_TOL = 0.01


def step_size(s: int | np.ndarray, s0: float, tau: float) -> float | np.ndarray:
    """Robbins-Monro step fraction a_s = (s0 + s)^-tau for step s = 1, 2, ..."""
    return (s0 + s) ** -tau


def gp_objective_and_gradient(t: ArrayLike, X: ArrayLike, Phi: np.ndarray, eta: float, *,
                              ridge: float = RIDGE) -> tuple[float, NDArray[np.float64]]:
    """The objective f(t) (eq. 7) and its gradient (eq. 10) on a batch X.

    A direct, readable evaluation (no caching), used by tests and for reporting.

    Parameters
    ----------
    t : ndarray (d,)
    X : ndarray (b, d), the batch
    Phi : ndarray (b, k), kernel values of the existing landmarks on the batch
    eta : float, kernel width

    Returns
    -------
    f : float
    grad : ndarray (d,)
    """
    t = np.asarray(t, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    phi = np.exp(-np.sum((X - t) ** 2, axis=1) / eta)
    u = phi.copy()
    if Phi.shape[1]:
        Phi = np.asarray(Phi, dtype=np.float64)
        gram = Phi.T @ Phi + ridge * len(X) * np.eye(Phi.shape[1])
        u -= Phi @ np.linalg.solve(gram, Phi.T @ phi)
    f = float(phi @ u)
    grad = -(4.0 / eta) * (t * f - X.T @ (phi * u))
    return f, grad


def _batch_step(n_features, batch_size):
    """The step function a fit uses (tests replace it to run the NumPy step)."""
    return _CompiledStep(n_features, batch_size)


class _Convergence:
    """The rule of ``n_steps="auto"``: stop when the mean batch objective over the
    last ``AUTO_WINDOW`` steps improves on the window before by less than
    ``AUTO_TOL`` of itself, after at least ``AUTO_MIN_STEPS`` steps.

    The batch objective is f / b with the true kernel values (the relative ones
    times exp(-2 shift / eta)), an unbiased estimate of the objective on all data.
    """

    def __init__(self, max_steps):
        self.values = np.zeros(max_steps)

    def converged(self, s, f, nearest_d2, eta, b):
        self.values[s - 1] = f * np.exp(-2.0 * nearest_d2 / eta) / b
        if s < max(AUTO_MIN_STEPS, 2 * AUTO_WINDOW) or s % AUTO_WINDOW:
            return False
        before = self.values[s - 2 * AUTO_WINDOW:s - AUTO_WINDOW].mean()
        now = self.values[s - AUTO_WINDOW:s].mean()
        return bool(now > 0 and now - before <= AUTO_TOL * now)


def _optimise_landmark(t, span, eta, order, *, s0, tau, space, step, first_step=1,
                       auto=False, step_bar=None):
    """Run the projected steps of Algorithm 1 for one landmark; returns (t, steps).

    ``span`` gives each chunk's rows, norms and the columns Phi to project out, and
    each batch's factor; ``order`` lists (chunk, batch) per step; the steps on one
    chunk are consecutive, so each visit reads the chunk once. Step s uses the
    fraction a_s with s counted from ``first_step``. With ``auto``, the run stops
    early by the rule of :class:`_Convergence`. A compiled step runs a visit's
    steps in one call (up to the rule's next check), else they run one at a time.
    """
    max_step = MAX_STEP_WIDTHS * np.sqrt(eta)
    t = np.asarray(t, dtype=np.float64).copy()
    rule = _Convergence(len(order)) if auto else None
    fused = getattr(step, "steps", None)
    s = 0
    for c, visit in groupby(order, key=lambda step: step[0]):
        chunk = span.visit(c)
        batches = [j for _, j in visit]
        visit_length = len(batches)
        while batches:
            n = len(batches) if rule is None else min(len(batches),
                                                      AUTO_WINDOW - s % AUTO_WINDOW)
            now, batches = batches[:n], batches[n:]
            sums = None if fused is None else fused(
                span, c, now, chunk, t, eta, first_step + s, s0=s0, tau=tau,
                max_step=max_step, space=space, visit_length=visit_length)
            if sums is None:
                t, sums = _steps_one_at_a_time(t, span, c, now, chunk, eta, first_step + s,
                                               s0=s0, tau=tau, space=space, step=step,
                                               max_step=max_step)
            for (f, _, nearest_d2), j in zip(sums, now, strict=True):
                s += 1
                if step_bar is not None and s % 100 == 0:
                    step_bar.update(100)
                if rule is not None and rule.converged(
                        s, max(f, 0.0), nearest_d2, eta, len(span.chunks.batch_rows(c, j))):
                    return t, s
    return t, s


def _steps_one_at_a_time(t, span, c, batches, chunk, eta, first, *, s0, tau, space, step,
                         max_step):
    """The steps on ``batches`` of chunk c, one call of ``step`` each; returns the
    moved t and each step's (f, phi^T phi, nearest squared distance)."""
    Xc, xsq_c, Phi_c = chunk
    sums = []
    for q, j in enumerate(batches):
        rows = span.chunks.batch_rows(c, j)
        positions = span.chunks.batch_positions(c, j)
        factor = span.factor(c, j, Phi_c, positions)
        weighted, f, phi_sq, nearest_d2 = step(Xc, xsq_c, rows, Phi_c, factor, t, eta,
                                               positions=positions)
        if f > 1e-10 * phi_sq:
            move = step_size(first + q, s0, tau) * (weighted / f - t)
            length = np.linalg.norm(move)
            limit = max_step + np.sqrt(nearest_d2)
            if length > limit:
                move *= limit / length
            t = t + move
            if space != "euclidean":
                t = project(t, space)
        sums.append((f, phi_sq, nearest_d2))
    return t, sums


def _initial_point(k, init, mean, std, rng, space):
    if isinstance(init, str):
        t = mean + std * rng.standard_normal(mean.shape[0])
    else:
        t = np.asarray(init[k], dtype=np.float64)
    return project(t, space)


def _batch_order(rng, batches_per_chunk, n_steps):
    """(chunk, batch) for each step: the chunks in a random order, the batches of
    each chunk in a random order, repeated until there are ``n_steps``."""
    order = []
    while len(order) < n_steps:
        for c in rng.permutation(len(batches_per_chunk)):
            order.extend((int(c), int(j)) for j in rng.permutation(batches_per_chunk[c]))
            if len(order) >= n_steps:
                break
    return order[:n_steps]


def _objectives(gram, n_samples, start):
    """(1/N) phi_k^T M phi_k on all the data for landmarks k >= start.

    From the Gram matrix of all kernel columns, Phi^T Phi: the Schur complement of
    landmark k against the landmarks before it, with the fit's ridge.
    """
    factor = _CholeskyFactor(len(gram), RIDGE * n_samples)
    objectives = []
    for k in range(len(gram)):
        if k >= start:
            objectives.append(_full_objective(gram[k, k], gram[:k, k], factor, n_samples))
        factor.append(gram[:k, k], gram[k, k])
    return np.asarray(objectives)


def _full_objective(square_norm, cross, full_factor, n_samples):
    """(1/N) phi^T M phi on all the data: the posterior variance at the landmark.

    ``square_norm`` is phi^T phi and ``cross`` is Phi^T phi over all N points.
    """
    total = square_norm
    if full_factor.size:
        total -= cross @ full_factor.solve(cross)
    return max(total, 0.0) / n_samples


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
                       return_n_steps: bool = False, verbose: bool = False,
                       ) -> tuple[np.ndarray, ...]:
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
    plus copies of dense chunks in the batches' order (``_gp_batches.IN_ORDER_BYTES``):
    of all chunks while they fit in 2 GiB and a quarter of the memory available, for
    data in memory; else of one chunk (never for chunks over 2 GiB).
    The objectives are computed after the last landmark, in one more pass.
    """
    n_samples, n_features = X.shape
    landmarks, n_previous = _landmark_table(previous_landmarks, n_landmarks, n_features)
    auto = isinstance(n_steps, str)
    max_steps = AUTO_MAX_STEPS if auto else n_steps

    bounds = chunk_bounds(X, chunk_size)
    chunks = _Chunks(X, bounds, batch_size, landmarks, kernel_width, seed,
                     KERNEL_TABLE_BYTES)
    gram = _BatchGram(chunks.n_batches, n_landmarks, chunks.batch_sizes(),
                      FACTOR_CACHE_BYTES)
    step = _batch_step(n_features, batch_size)
    mean, std = column_mean_std(X, bounds)
    seconds, steps = [], []
    outer = tqdm(range(n_previous, n_landmarks), desc="landmarks", disable=not verbose,
                 unit="landmark")

    def result(done):
        chunks.close()
        objectives = _objectives(chunks.gram(done), n_samples, 0)
        out = (landmarks[:done].copy() if done < n_landmarks else landmarks, objectives,
               np.asarray(seconds))
        return out + (np.asarray(steps, dtype=np.int64),) if return_n_steps else out

    # The BLAS libraries are looked up once per fit: threadpool_limits would look
    # them up again for every landmark, inside a ctypes callback that swallows a
    # Ctrl-C arriving during it (the run then goes on instead of stopping).
    blas = ThreadpoolController()
    try:
        for k in outer:
            start = time.perf_counter()
            rng = np.random.default_rng([seed, k])
            t0 = _initial_point(k, init, mean, std, rng, space)
            order = _batch_order(rng, chunks.batches_per_chunk, max_steps)
            chunks.plan(order)
            with tqdm(total=max_steps, desc=f"landmark {k + 1}", leave=False,
                      disable=not verbose, unit="step") as step_bar, \
                    blas.limit(limits=1, user_api="blas"):
                landmarks[k], taken = _optimise_landmark(
                    t0, _Preceding(chunks, gram, k), kernel_width, order, s0=s0, tau=tau,
                    space=space, step=step, auto=auto, step_bar=step_bar)
            seconds.append(time.perf_counter() - start)
            steps.append(taken)
            if callback is not None and k < n_landmarks - 1:
                callback(landmarks[:k + 1], np.full(len(seconds), np.nan), np.asarray(seconds))
        out = result(n_landmarks)
        if callback is not None and n_landmarks > n_previous:
            callback(landmarks, out[1][n_previous:], np.asarray(seconds))
    except KeyboardInterrupt as interrupt:
        interrupt.partial_result = result(n_previous + len(seconds))
        raise
    finally:
        chunks.close()
    return out


def refine_gp_landmarks(X: MatrixLike, landmarks: ArrayLike, *, kernel_width: float,
                        n_sweeps: int = 1, n_steps: int | Literal["auto"] = 1000,
                        batch_size: int = 1000, s0: float = 10.0, tau: float = 0.51,
                        space: Literal["euclidean", "nonnegative", "sphere"] = "euclidean",
                        seed: int = 0, chunk_size: int | None = None, verbose: bool = False,
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Re-optimise each landmark against all the others, for a few sweeps.

    The paper's future work: its landmarks are chosen one at a time and never
    revisited. Here landmark k, in order, runs the same projected steps on the same
    objective f, with M projecting out the span of the other K - 1 landmarks'
    columns instead of the k before it, starting where it is, with the step schedule
    continued after the ``n_steps`` (per earlier pass) it has had. The new position
    is kept only if it raises f given the others on all the data (one pass per
    landmark), so each accepted move raises det(Phi^T Phi), the product of the
    sequential objectives: the sweeps are coordinate ascent on the joint objective,
    and the full objective never drops. Order and meaning of the list are kept.

    Parameters
    ----------
    X : validated array, as for :func:`learn_gp_landmarks`
    landmarks : ndarray (K, n_features)
    kernel_width, n_steps, batch_size, s0, tau, space, seed, chunk_size :
        as for :func:`learn_gp_landmarks` (the same seed and chunk size give the
        fit's batches); ``n_steps="auto"`` stops each run by the same rule.
    n_sweeps : int
        Passes over all landmarks.
    verbose : bool
        A progress bar over the landmarks of each sweep.

    Returns
    -------
    landmarks : ndarray (K, n_features), float64
    objectives : ndarray (K,)
        (1/N) phi_k^T M phi_k given the landmarks before k, on all the data.
    n_steps : ndarray (n_sweeps, K), int
        Steps run by each landmark in each sweep.
    accepted : ndarray (n_sweeps, K), bool
        Whether the new position was kept.
    """
    n_samples, n_features = X.shape
    landmarks = np.array(landmarks, dtype=np.float64)
    n_landmarks = len(landmarks)
    auto = isinstance(n_steps, str)
    max_steps = AUTO_MAX_STEPS if auto else n_steps
    chunks = _Chunks(X, chunk_bounds(X, chunk_size), batch_size, landmarks, kernel_width,
                     seed, KERNEL_TABLE_BYTES)
    full_gram = chunks.gram(n_landmarks)
    grams = _BatchGrams(chunks, n_landmarks, FACTOR_CACHE_BYTES)
    step = _batch_step(n_features, batch_size)
    steps = np.zeros((n_sweeps, n_landmarks), dtype=np.int64)
    accepted = np.zeros((n_sweeps, n_landmarks), dtype=bool)
    blas = ThreadpoolController()  # looked up once, as in learn_gp_landmarks
    for sweep in range(n_sweeps):
        for k in tqdm(range(n_landmarks), desc=f"refinement sweep {sweep + 1}",
                      disable=not verbose, unit="landmark"):
            rng = np.random.default_rng([seed, k, 0x5EF1, sweep])
            order = _batch_order(rng, chunks.batches_per_chunk, max_steps)
            with blas.limit(limits=1, user_api="blas"):
                t, steps[sweep, k] = _optimise_landmark(
                    landmarks[k], _Others(chunks, grams, k), kernel_width, order, s0=s0,
                    tau=tau, space=space, step=step, first_step=(sweep + 1) * max_steps + 1,
                    auto=auto)
            column, per_chunk = chunks.cross(t, n_landmarks)
            old = np.append(full_gram[:, k], full_gram[k, k])
            if (_conditional_objective(full_gram, k, column, n_samples)
                    < _conditional_objective(full_gram, k, old, n_samples)):
                continue
            accepted[sweep, k] = True
            landmarks[k] = t
            chunks.replace(k, per_chunk)
            full_gram[k, :] = column[:-1]
            full_gram[:, k] = column[:-1]
            full_gram[k, k] = column[-1]
            if grams.keep:
                grams.replace(k, per_chunk)
            else:
                grams.grams.clear()
    return landmarks, _objectives(full_gram, n_samples, 0), steps, accepted


class GPLandmarks(LandmarkTransformerMixin, BaseEstimator):
    """Landmarks on the data manifold by Gaussian-process landmarking.

    Landmarks are chosen one after another; each maximises the posterior variance
    of a Gaussian process with the plug-in manifold kernel given the landmarks
    before it (Liang & Paisley 2015), by stochastic projected ascent on minibatches.
    They are points of the ambient space (not data points) that lie on the data,
    spread along it, in order of importance. See :mod:`landmarking.landmarks.gp`
    for the mathematics and the scale-free step.

    Parameters
    ----------
    n_landmarks : int, default=10
        Number of landmarks to learn.
    n_steps : int or "auto", default=1000
        Steps of stochastic ascent per landmark (the paper's S). "auto" stops a
        landmark when the mean batch objective over the last ``AUTO_WINDOW`` (50)
        steps improves on the window before by less than ``AUTO_TOL`` (1%) of
        itself, after at least ``AUTO_MIN_STEPS`` (100) and at most
        ``AUTO_MAX_STEPS`` (1000) steps; its steps are a prefix of the 1000 steps
        of ``n_steps=1000`` with the same seed. Steps run: ``n_steps_``.
    batch_size : int, default=1000
        Points per minibatch (|B_s|); all points when the data has fewer.
    s0, tau : float, default=10, 0.51
        Step schedule a_s = (s0 + s)^-tau, the fraction of the way to the weighted
        mean m moved at step s; tau in (0.5, 1] for Robbins-Monro convergence.
    kernel_width : float, "auto" or "variance", default="auto"
        eta in phi_x(t) = exp(-||t - x||^2 / eta), in squared data units.
        "variance" is the paper's heuristic, the sum of the per-dimension variances;
        it is far too wide for low-dimensional manifolds. "auto" follows the data's
        local spacing: the median squared distance to the 20th nearest neighbour in
        a subsample of 2,000 points. The value used is ``kernel_width_``.
    space : {"euclidean", "nonnegative", "sphere"}, default="euclidean"
        Where landmarks live: anywhere; the nonnegative orthant (images); or the
        unit sphere within the nonnegative orthant (square-root histograms).
    init : "gaussian" or array of shape (n_landmarks, n_features), default="gaussian"
        Starting points: draws from a Gaussian with the data's mean and
        per-dimension variance (the paper's), or one given row per landmark.
    chunk_size : int or None, default=None
        Rows per chunk the minibatches are drawn from. Each landmark visits the
        chunks in a random order and, within a chunk, its batches (slices of a
        fixed random permutation of the chunk's rows) in a random order, so one
        chunk at a time is read. None: the storage chunks of a Zarr or Dask array,
        and all rows as one chunk for other input (the paper's sampling). The
        landmarks depend on the chunks: the same data in any container with the
        same chunks gives the same landmarks. Data sorted by class should be
        shuffled, or cut into small chunks, since the last chunk a landmark visits
        weighs most.
    refine : int, default=0
        Sweeps of joint refinement after the sequential pass (see
        :func:`refine_gp_landmarks`): each landmark in turn is re-optimised with
        the same steps against the span of all the others, and its new position
        kept only if it raises its posterior variance given the others on all the
        data. The order and meaning of the list stay; with ``refine > 0`` a longer
        list is no longer an extension of a shorter one.
    warm_start : bool, default=False
        When True and the estimator is fitted, ``fit`` keeps the landmarks it has
        and continues the list up to ``n_landmarks``.
    random_state : int, RandomState or None, default=None
        Seeds the batches and the starting points.
    device : {"cpu", "cuda", "cuda:N", "auto"} or torch.device, default="cpu"
        Where the sequential pass and ``transform`` run: "cpu" is the NumPy path;
        "cuda" a GPU through PyTorch (``pip install "landmarking[gpu]"``); "auto"
        "cuda" when one is available, else "cpu"; a ``torch.device("cpu")`` the
        torch path on the CPU. Every device gives the NumPy path's landmarks to
        rounding for the same seed; ``refine`` runs on the NumPy path. See the
        guide's page "On a GPU".
    verbose : bool, default=False
        Progress bars over landmarks and steps.

    Attributes
    ----------
    landmarks_ : ndarray of shape (n_landmarks, n_features)
        The landmarks, in order of selection.
    objective_ : ndarray of shape (n_landmarks,)
        The objective each landmark reached: (1/N) phi^T M phi on all the data.
    kernel_width_ : float
        The kernel width eta used.
    landmark_seconds_ : ndarray of shape (n_landmarks,)
        Wall time spent on each landmark in the sequential pass.
    n_steps_ : ndarray of shape (n_landmarks,)
        Steps each landmark ran in the sequential pass (``n_steps``, or fewer
        with ``n_steps="auto"``).
    refine_n_steps_ : ndarray of shape (refine, n_landmarks)
        Steps each landmark ran in each refinement sweep (empty when
        ``refine=0``).
    refine_accepted_ : ndarray of shape (refine, n_landmarks), bool
        Whether each refined position was kept.
    refine_seconds_ : float
        Wall time of the refinement.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names of a DataFrame given to ``fit``.
    seed_ : int
        The seed drawn from ``random_state``; landmark k depends only on it, k and
        the landmarks before it.
    device_ : str
        Where the last ``fit`` or ``extend`` ran: "cpu" or e.g. "cuda:0".

    Examples
    --------
    >>> from landmarking import GPLandmarks
    >>> from landmarking.datasets import make_concentric_circles
    >>> X, _ = make_concentric_circles(500, random_state=0)
    >>> gp = GPLandmarks(n_landmarks=6, n_steps=200, random_state=0).fit(X)
    >>> gp.landmarks_.shape, gp.transform(X).shape
    ((6, 2), (500, 6))
    """

    def __init__(self, *, n_landmarks: int = 10, n_steps: int | Literal["auto"] = 1000,
                 batch_size: int = 1000, s0: float = 10.0, tau: float = 0.51,
                 kernel_width: float | Literal["auto", "variance"] = "auto",
                 space: Literal["euclidean", "nonnegative", "sphere"] = "euclidean",
                 init: Literal["gaussian"] | ArrayLike = "gaussian",
                 chunk_size: int | None = None,
                 refine: int = 0, warm_start: bool = False,
                 random_state: RandomStateLike = None, device: DeviceLike = "cpu",
                 verbose: bool = False) -> None:
        self.n_landmarks = n_landmarks
        self.n_steps = n_steps
        self.batch_size = batch_size
        self.s0 = s0
        self.tau = tau
        self.kernel_width = kernel_width
        self.space = space
        self.init = init
        self.chunk_size = chunk_size
        self.refine = refine
        self.warm_start = warm_start
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def fit(self, X: MatrixLike, y: Any = None, *, previous_landmarks: ArrayLike | None = None,
            checkpoint: StrPath | Callable[..., Any] | None = None) -> Self:
        """Learn ``n_landmarks`` landmarks of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A NumPy array, a scipy sparse matrix (CSR; the landmarks are dense), a
            memory map, a Zarr array or a Dask array; never read whole into memory
            (see :func:`learn_gp_landmarks` for the memory used).
        y : ignored
        previous_landmarks : array of shape (k, n_features), optional
            Landmarks of an earlier run with the same data, settings and seed
            (e.g. loaded from a file); kept as the first k rows while the run
            continues, giving what one longer run would give.
        checkpoint : str, path or callable, optional
            Save the run as it goes, so that a killed process (out of memory, a
            preempted node) loses at most the last second of work. A path to an
            ``.npz``: the landmarks so far, rewritten atomically after finished
            landmarks (at most once a second, and at the end) and marked
            ``complete=False`` until the run ends; resume with the same
            ``random_state`` and ``fit(X, previous_landmarks=read_result(path)
            ["landmarks"])``. A callable: called as ``checkpoint(landmarks,
            objective, seconds)`` after each finished landmark, with all so far
            (the objectives are NaN until the last call: they come from one pass
            over the data at the end).

        Returns
        -------
        self
        """
        device = check_device(self.device)
        check_checkpoint(checkpoint)
        X = self._validate_fit_data(X)
        if previous_landmarks is None and self.warm_start and hasattr(self, "landmarks_"):
            previous_landmarks = self.landmarks_
            previous_record = self._record()
        else:
            previous_record = (np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64))
            self.seed_ = int(check_random_state(self.random_state).randint(2**31 - 1))
            self.kernel_width_ = resolve_kernel_width(X, self.kernel_width,
                                                      random_state=self.seed_)
        previous = self._check_previous(previous_landmarks, X.shape[1])
        self._run(X, previous, previous_record, device, checkpoint=checkpoint)
        return self

    def extend(self, X: MatrixLike, n_more: int) -> Self:
        """Learn ``n_more`` landmarks after the ones already fitted (same X).

        The first landmarks stay as they are; the result equals a single fit with
        ``n_landmarks + n_more`` landmarks and the same seed.

        Returns
        -------
        self
        """
        check_is_fitted(self, "landmarks_")
        device = check_device(self.device)
        n_more = check_positive_int(n_more, "n_more")
        X = check_rows(X, estimator=self, reset=False)
        check_feasible_for_space(X, self.space)
        total = len(self.landmarks_) + n_more
        if not isinstance(self.init, str) and len(self.init) < total:
            raise ValueError(
                f"init has {len(self.init)} starting points but {total} landmarks are "
                "needed; pass more rows in init or use init='gaussian'."
            )
        self._run(X, self.landmarks_, self._record(), device, n_landmarks=total)
        return self

    def _record(self):
        return self.objective_, self.landmark_seconds_, self.n_steps_

    def _run(self, X, previous, previous_record, device, n_landmarks=None, checkpoint=None):
        n_landmarks = self.n_landmarks if n_landmarks is None else n_landmarks
        self.device_ = device_name(device)
        learn, on_device = learn_gp_landmarks, {}
        if device is not None:
            from ._gp_torch import learn_gp_landmarks_torch

            learn, on_device = learn_gp_landmarks_torch, {"device": device}
        callback = landmark_checkpoint(checkpoint, self, n_landmarks, previous_record[0],
                                       previous_record[1])
        settings = dict(kernel_width=self.kernel_width_, n_steps=self.n_steps,
                        batch_size=self.batch_size, s0=self.s0, tau=self.tau,
                        space=self.space, seed=self.seed_, chunk_size=self.chunk_size)
        try:
            landmarks, *record = learn(
                X, n_landmarks, init=self.init, previous_landmarks=previous,
                return_n_steps=True, callback=callback, verbose=self.verbose, **settings,
                **on_device)
        except KeyboardInterrupt as interrupt:
            # Keep what was finished so that a caller can save it and continue.
            partial = getattr(interrupt, "partial_result", None)
            if partial is not None:
                self._store(partial[0], partial[1:], previous_record)
            raise
        finally:
            if callback is not None:
                callback.close()  # writes what the last throttled call held back
        self._store(landmarks, record, previous_record)
        self.refine_n_steps_ = np.zeros((self.refine, n_landmarks), dtype=np.int64)
        self.refine_accepted_ = np.zeros((self.refine, n_landmarks), dtype=bool)
        self.refine_seconds_ = 0.0
        if self.refine:
            start = time.perf_counter()
            (self.landmarks_, self.objective_, self.refine_n_steps_,
             self.refine_accepted_) = refine_gp_landmarks(
                X, self.landmarks_, n_sweeps=self.refine, verbose=self.verbose, **settings)
            self.refine_seconds_ = time.perf_counter() - start
        warn_if_kernel_width_is_off(self.objective_, X.shape[0], self.kernel_width_,
                                    stacklevel=4)

    def _store(self, landmarks, record, previous_record):
        self.landmarks_ = landmarks
        # The objectives come for all landmarks (previous ones included), from one
        # pass at the end of the run; seconds and steps for the new ones.
        self.objective_ = record[0]
        self.landmark_seconds_, self.n_steps_ = (
            np.concatenate([before, now])
            for before, now in zip(previous_record[1:], record[1:], strict=True))

    def _validate_fit_data(self, X):
        check_positive_int(self.n_landmarks, "n_landmarks")
        if not (isinstance(self.n_steps, str) and self.n_steps == "auto"):
            if isinstance(self.n_steps, str):
                raise ValueError(
                    f"n_steps must be a positive int or 'auto', got {self.n_steps!r}.")
            check_positive_int(self.n_steps, "n_steps")
        check_positive_int(self.refine, "refine", minimum=0)
        check_positive_int(self.batch_size, "batch_size")
        check_choice(self.space, "space", SPACES)
        if self.chunk_size is not None:
            check_positive_int(self.chunk_size, "chunk_size")
        if isinstance(self.s0, bool) or not isinstance(self.s0, Real) or self.s0 < 0:
            raise ValueError(f"s0 must be a number >= 0, got {self.s0!r}.")
        if isinstance(self.tau, bool) or not isinstance(self.tau, Real) or not 0 < self.tau <= 1:
            raise ValueError(
                f"tau must lie in (0, 1] (0.5 < tau <= 1 for guaranteed convergence), "
                f"got {self.tau!r}."
            )
        reset = not (self.warm_start and hasattr(self, "landmarks_"))
        X = check_rows(X, estimator=self, reset=reset)
        check_enough_samples(X.shape[0], 2, "GPLandmarks")
        check_feasible_for_space(X, self.space)
        if not isinstance(self.init, str):
            self._check_init(X.shape[1])
        elif self.init != "gaussian":
            raise ValueError(
                f"init must be 'gaussian' or an array of starting points, got {self.init!r}."
            )
        return X

    def _check_init(self, n_features):
        init = np.asarray(self.init)
        if (init.ndim != 2 or init.shape[1] != n_features
                or init.shape[0] < self.n_landmarks or not np.all(np.isfinite(init))):
            raise ValueError(
                f"init must be 'gaussian' or a finite array of shape (n_landmarks, "
                f"n_features) = ({self.n_landmarks}, {n_features}); got shape {init.shape}."
            )

    def _check_previous(self, previous, n_features):
        if previous is None:
            return None
        previous = np.asarray(previous, dtype=np.float64)
        if previous.ndim != 2 or previous.shape[1] != n_features:
            raise ValueError(
                f"previous_landmarks must have shape (k, {n_features}), got {previous.shape}."
            )
        if previous.shape[0] > self.n_landmarks:
            raise ValueError(
                f"there are already {previous.shape[0]} landmarks but n_landmarks is "
                f"{self.n_landmarks}; ask for more landmarks to continue the list."
            )
        return previous

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = True
        return tags
