"""The fit of GP landmarking, for every backend: :func:`learn_gp_landmarks`.

The one driver of a fit (the symbols are those of :mod:`.objective`): for each
block of ``block_size`` landmarks in turn (one landmark: the sequential fit) it
draws the starts and the order of batches from ``(seed, k)``, has the backend
(:mod:`landmarking.gp.backend`: NumPy on the host or torch on a device) run the steps and add
the kernel columns, puts a block's landmarks in greedy order
(:func:`.objective.greedy_order`, on the Gram matrix of the kernel columns kept
here and extended block by block), reports to the callback after each block, and
computes the objectives on the fit's sample (:mod:`.sampling`: the rows its
minibatches come from, all the data unless N > steps x batch_size) from the Gram
matrix at the end. A ``KeyboardInterrupt`` carries the landmarks finished so far
(``partial_result``). The step schedule, the move and the stopping rule of
``n_steps="auto"`` are in :mod:`.objective`.

:class:`~landmarking.gp.estimator.GPLandmarks` runs the same driver on its own
settings: :func:`plan_gp_run` draws the fit's sample and resolves what "auto" and
None leave open (kernel width, block size, steps, start), and :func:`run_gp_fit`
runs the driver, the refinement and the check of the kernel width.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Literal

import numpy as np

from .._blocks import check_feasible_for_space, check_rows
from .._parallel import NJobs
from .._progress import progress_bar
from .._typing import ArrayLike, DeviceLike, MatrixLike, RandomStateLike
from .._validation import (
    SPACES,
    Check,
    Condition,
    Either,
    Integer,
    Options,
    as_real_array,
    check_enough_samples,
    check_params,
    check_positive_float,
    is_real_number,
)
from ..kernels import resolve_kernel_width, sample_mean_std
from ..spaces import project
from .backend import GPBackend, gp_backend
from .diagnostics import warn_if_kernel_width_is_off
from .objective import RIDGE, _Gram, _objectives, greedy_order, max_steps
from .refine_landmarks import _refine
from .sampling import Sample, draw_sample

__all__ = ["learn_gp_landmarks", "PARAMETER_RULES", "GPSettings", "GPRun", "GPResult",
           "plan_gp_run", "run_gp_fit"]

#: ``init="auto"`` on the sphere starts landmarks learned one at a time at the centre
#: of the sphere-orthant when the kernel width is at least this (a quarter of the
#: largest squared distance there, 2): text under the variance rule's width is
#: wide, and topics from the centre are purer there; under a narrow kernel (clusters
#: of ``make_sphere_orthant``) landmarks from one start find the same few clusters.
#: The measurements: docs/results/gp.md, "20 Newsgroups topics (the paper's Table 1)".
UNIFORM_START_WIDTH = 0.5

#: ``GPLandmarks(block_size="auto")``: blocks of this many landmarks when a run
#: learns at least this many, else one landmark at a time. Measured (the guide's
#: "Blocks of landmarks", ``benchmarks/gp_block_default.py``): at 50 landmarks and
#: more, blocks of 50 match or beat the sequential fit on MNIST, faces and 20
#: Newsgroups; with 12 and 25 landmarks on 20 Newsgroups they lose topic purity.
AUTO_BLOCK_SIZE = 50
#: ``n_steps=None``: steps per landmark of the sequential fit (the paper's S) ...
SEQUENTIAL_STEPS = 1000
#: ... and per block: a block of 50 reaches the sequential fit's accuracy in 100.
BLOCK_STEPS = 100

#: The parameters of GP landmarking and their rules, in the order they are checked
#: (the estimator's ``_parameter_rules``; :func:`learn_gp_landmarks` checks those it
#: takes, with ``n_steps`` and ``block_size`` resolved: no None, no "auto").
PARAMETER_RULES = {
    "n_landmarks": Integer(),
    "n_steps": Either(None, Either(
        "auto", Integer(), "n_steps must be a positive int, 'auto' or None, got {value!r}.")),
    "refine": Integer(minimum=0),
    "block_size": Either("auto", Integer()),
    "n_jobs": NJobs(),
    "batch_size": Integer(),
    "space": Options(*SPACES),
    "chunk_size": Either(None, Integer()),
    "s0": Condition(lambda s0: is_real_number(s0) and s0 >= 0,
                    "s0 must be a number >= 0, got {value!r}."),
    "tau": Condition(lambda tau: is_real_number(tau) and 0 < tau <= 1,
                     "tau must lie in (0, 1] (0.5 < tau <= 1 for guaranteed "
                     "convergence), got {value!r}."),
}


def _check_kernel_width(value, name):
    """a finite number > 0"""
    if isinstance(value, str):
        raise TypeError(
            f"{name} must be a number > 0 here, got {value!r}; learn_gp_landmarks takes "
            f"the width itself: resolve the rule with landmarking.kernels."
            f"resolve_kernel_width(X, {value!r}), or use GPLandmarks, which does."
        )
    return check_positive_float(value, name)


#: What :func:`learn_gp_landmarks` checks, with the words of the estimator: the
#: table's rules for the settings they share, and ``n_steps`` and ``block_size``
#: as resolved numbers (``GPLandmarks`` resolves None and "auto" before its fit).
_FUNCTION_RULES = {
    "n_landmarks": PARAMETER_RULES["n_landmarks"],
    "kernel_width": Check(_check_kernel_width),
    "n_steps": Either("auto", Integer(), "n_steps must be a positive int or 'auto', got "
                      "{value!r}; pass a number of steps (the paper's: 1000) or 'auto'."),
    "block_size": Integer(),
    **{name: PARAMETER_RULES[name]
       for name in ("batch_size", "s0", "tau", "space", "chunk_size", "n_jobs")},
    "seed": Integer(minimum=0),
}


def check_start(init, n_landmarks, n_features, space, names):
    """``init`` checked, for the function and the estimator: one of ``names`` (the
    estimator's include "auto"), "uniform" only on the sphere, or a finite array of
    at least ``n_landmarks`` starting points with ``n_features`` columns."""
    listed = ", ".join(repr(name) for name in names)
    if isinstance(init, str):
        if init not in names:
            raise ValueError(
                f"init must be {listed} or an array of starting points, got {init!r}.")
        if init == "uniform" and space != "sphere":
            others = " or ".join(repr(name) for name in names if name != "uniform")
            raise ValueError(
                "init='uniform' is the centre of the sphere-orthant and needs "
                f"space='sphere', got space={space!r}; use init={others}.")
        return
    start = as_real_array(init, "init")
    if (start.ndim != 2 or start.shape[1] != n_features or start.shape[0] < n_landmarks
            or not np.all(np.isfinite(start))):
        raise ValueError(
            f"init must be {listed} or a finite array of shape (n_landmarks, n_features) "
            f"= ({n_landmarks}, {n_features}); got shape {start.shape}.")


def check_previous_landmarks(previous, n_landmarks, n_features):
    """``previous_landmarks`` as float64, checked: finite, ``n_features`` columns and
    at most ``n_landmarks`` rows (the run continues the list); None stays None."""
    if previous is None:
        return None
    previous = as_real_array(previous, "previous_landmarks")
    if previous.ndim != 2 or previous.shape[1] != n_features:
        raise ValueError(
            f"previous_landmarks must have shape (k, {n_features}), got {previous.shape}.")
    if previous.shape[0] > n_landmarks:
        raise ValueError(
            f"there are already {previous.shape[0]} landmarks but n_landmarks is "
            f"{n_landmarks}; ask for more landmarks to continue the list.")
    if not np.all(np.isfinite(previous)):
        raise ValueError("previous_landmarks contain NaN or infinity; pass the finite "
                         "landmarks of an earlier run.")
    return previous


def _check_arguments(X, settings, init, previous_landmarks, callback):
    """The arguments of :func:`learn_gp_landmarks` checked: ``settings`` (a namespace
    of the scalar arguments) against their rules, then X as ``GPLandmarks.fit``
    checks it, then ``init``, ``previous_landmarks`` and ``callback``; returns the
    validated X. Every error names the problem and the fix. Out-of-core X is checked
    for NaN and infinity as the sample is read (unless ``chunk_size`` makes X the
    sample), so that it is read once."""
    check_params(settings, _FUNCTION_RULES)
    X = check_rows(X, scan_finite=settings.chunk_size is not None)
    check_enough_samples(X.shape[0], 2, "learn_gp_landmarks")
    check_feasible_for_space(X, settings.space)
    check_start(init, settings.n_landmarks, X.shape[1], settings.space,
                names=("gaussian", "uniform"))
    check_previous_landmarks(previous_landmarks, settings.n_landmarks, X.shape[1])
    if callback is not None and not callable(callback):
        raise TypeError(
            f"callback must be None or a function called as callback(landmarks, objectives, "
            f"seconds), got a {type(callback).__name__}.")
    return X


def _initial_point(k, init, mean, std, rng, space):
    """Landmark k's start: a draw from the Gaussian with the data's per-dimension mean
    and spread (the paper's, ``init="gaussian"``), the centre 1 / sqrt(d) of the
    sphere-orthant (the authors' code's, ``"uniform"``; no draw) or row k of the
    given ``init``; projected onto ``space``."""
    if isinstance(init, str) and init == "uniform":
        t = np.full(mean.shape[0], 1.0 / np.sqrt(mean.shape[0]))
    elif isinstance(init, str):
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
                       init: Literal["gaussian", "uniform"] | ArrayLike = "gaussian",
                       previous_landmarks: ArrayLike | None = None, seed: int = 0,
                       chunk_size: int | None = None,
                       callback: Callable[[np.ndarray, np.ndarray, np.ndarray], Any]
                       | None = None,
                       return_n_steps: bool = False, device: DeviceLike = "cpu",
                       block_size: int = 1, n_jobs: int | None = None,
                       verbose: bool = False) -> tuple[np.ndarray, ...]:
    """Learn landmarks one after another by stochastic projected ascent on f.

    The plain-array function behind :class:`landmarking.GPLandmarks`. It checks its
    arguments as the estimator does (see Raises), with the kernel width, the number
    of steps and the block size given as numbers (the estimator resolves "auto" and
    None). ``X`` may be a NumPy array, a CSR matrix, a memory map, a Zarr array or a
    Dask array: the rows the minibatches come from (:mod:`.sampling`) are read once,
    front to back, in blocks bounded by scikit-learn's ``working_memory``, and the
    steps run on them in memory, so the landmarks are the same from every container
    and chunking (see Notes).

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
    init : "gaussian", "uniform" (the centre of the sphere-orthant) or ndarray
        (n_landmarks, n_features)
    previous_landmarks : ndarray (k, n_features), optional
        Landmarks of an earlier run on the same data with the same settings; they
        are kept and the run continues with landmark k + 1.
    seed : int
        The sample and its batches come from ``seed`` (:func:`.sampling.draw_sample`;
        with ``chunk_size``, the batches of chunk c from a permutation drawn from
        ``(seed, c)``); landmark k draws its start and its order of batches from
        ``(seed, k)``, so landmark k never depends on how many landmarks are asked
        for.
    callback : callable, optional
        Called as ``callback(landmarks, objectives, seconds)`` right after each
        landmark is finished: the landmarks so far (k + 1 rows, a view: copy to
        keep) and the ``objectives`` and ``seconds`` of the new ones so far. The
        objectives are computed for all landmarks at the end, in one pass over the
        sample: they are NaN in every call but the last, which comes after that pass.
        Used to save a run as it goes (``GPLandmarks.fit(checkpoint=...)``).
    return_n_steps : bool
        Also return the number of steps each new landmark ran.
    device : {"cpu", "cuda", "cuda:N", "auto"} or torch.device, default="cpu"
        Where the steps run (see :class:`landmarking.GPLandmarks`): "cpu" is the
        CPU backend (:mod:`._cpu`), a torch device the torch backend
        (:mod:`._torch`); both give the same landmarks to rounding.
    block_size : int, default=1
        Landmarks learned together (:mod:`.objective`, "The joint objective of a
        block"): the new landmarks are cut into blocks of ``block_size`` from the
        first new one on (the last block may be smaller), each block runs
        ``n_steps`` joint steps on the batches drawn from ``(seed, k)`` for its first
        landmark k, and its landmarks are put in greedy order. 1 is the sequential
        algorithm: the same step with one landmark per block.
    n_jobs : int or None, default=None
        Threads of a block step on the CPU backend (scikit-learn's meaning; see
        :func:`landmarking._parallel.thread_limits`); the landmarks do not depend on it.
    verbose : bool
        tqdm progress bars over landmarks and steps.

    Returns
    -------
    landmarks : ndarray (n_landmarks, n_features), float64
    objectives : ndarray (n_landmarks,)
        f at each landmark (the previous ones included) on the sample, divided by
        its P rows (all the data unless N > steps x batch_size), computed after the
        last landmark in one pass.
    seconds : ndarray (n_landmarks - k,)
        Wall time for each new landmark (a block's time shared evenly by its
        landmarks).
    n_steps : ndarray (n_landmarks - k,), int
        Steps run by each new landmark (by its block); only with ``return_n_steps``.

    If interrupted (``KeyboardInterrupt``), the exception carries the partial
    result (the same tuple, for the finished landmarks) in its ``partial_result``
    attribute before it propagates.

    Raises
    ------
    ValueError, TypeError
        For a setting outside its rule (:data:`PARAMETER_RULES`, with
        ``kernel_width`` a number > 0, ``n_steps`` a positive int or "auto",
        ``block_size`` a positive int and ``seed`` an int >= 0), for X that is not a
        2-D table of at least 2 rows of finite numbers or that ``space`` cannot
        hold, and for ``init``, ``previous_landmarks`` or ``callback`` of the wrong
        kind or shape; each message names the problem and the fix.

    Notes
    -----
    Memory, with P rows in the sample (P = N, or ``steps x batch_size`` when that
    is smaller; steps = ``n_steps``, or ``objective.AUTO_MAX_STEPS`` for "auto"),
    d features, K landmarks, s bytes per value of X's working dtype and
    n_b = P // batch_size batches::

        P d s                the sample (none for an in-memory array with P = N);
                             a sample smaller than N is held in batch order
      + P d s                a copy of all rows (P = N) in batch order, when
                             steps >= 4 n_b and it fits _tables.IN_ORDER_BYTES
                             (2 GiB); never for a sample smaller than N
      + P K s                the kernel table on the sample, while it fits
                             KERNEL_TABLE_BYTES (2 GiB) and half the memory
                             available; else recomputed for each landmark
      + n_b K^2 8            the batches' Cholesky factors (<= FACTOR_CACHE_BYTES)
      + 2 W / 64 (+ 1/d)     while out-of-core X is read, once (the gather of the
                             sample, which checks every block whole for NaN and
                             infinity): two pieces at a time (the next is read on
                             a second thread) of at most W / 64, W = scikit-learn's
                             working_memory, or one storage chunk of a Zarr or Dask
                             array where that is larger, and a sum per row (on
                             Dask, the sample's rows of up to 8 pieces)

    never N x K or a block of all N rows of out-of-core input; with
    ``kernel_width="auto"`` the estimator also holds a 2000 x 2000 distance table
    (64 MB) once, with the sample (whose rows it comes from), before the steps.
    With ``chunk_size``: one chunk of X at a time and the kernel table on all N rows
    (the earlier layout). On a torch device the memory is that of
    :func:`._torch.torch_fit`, for the sample.
    """
    settings = SimpleNamespace(
        n_landmarks=n_landmarks, kernel_width=kernel_width, n_steps=n_steps,
        block_size=block_size, batch_size=batch_size, s0=s0, tau=tau, space=space,
        chunk_size=chunk_size, n_jobs=n_jobs, seed=seed)
    X = _check_arguments(X, settings, init, previous_landmarks, callback)
    sample = draw_sample(X, batch_size=batch_size, steps=max_steps(n_steps), seed=seed,
                         chunk_size=chunk_size, check_finite=chunk_size is None)
    return _learn(sample, n_landmarks, gp_backend(device), kernel_width=kernel_width,
                  n_steps=n_steps, s0=s0, tau=tau, space=space, init=init,
                  previous_landmarks=previous_landmarks, seed=seed, callback=callback,
                  return_n_steps=return_n_steps, block_size=block_size, n_jobs=n_jobs,
                  verbose=verbose)


def _learn(sample: Sample, n_landmarks, backend: GPBackend, *, kernel_width, n_steps, s0,
           tau, space, init, previous_landmarks, seed, callback, return_n_steps, block_size,
           n_jobs, verbose):
    """:func:`learn_gp_landmarks` on the fit's sample, drawn by the caller
    (``GPLandmarks.fit`` takes its kernel width from it, so that out-of-core X is
    read once)."""
    landmarks, n_previous = _landmark_table(previous_landmarks, n_landmarks, sample.X.shape[1])
    auto = isinstance(n_steps, str)
    steps_per_landmark = max_steps(n_steps)
    mean, std = sample_mean_std(sample.X, sample.chunks)  # for the starting points
    seconds, steps = [], []
    firsts = range(n_previous, n_landmarks, block_size)
    outer = progress_bar(firsts, desc="landmarks" if block_size == 1 else "blocks",
                 disable=not verbose, unit="landmark" if block_size == 1 else "block")
    with backend.fit(sample, landmarks, n_previous, eta=kernel_width, space=space,
                     max_steps=steps_per_landmark, s0=s0, tau=tau, auto=auto,
                     n_jobs=n_jobs) as fit:
        gram = _Gram(fit)

        def result(done):
            objectives = _objectives(gram.of(done), sample.n_rows, 0)
            out = (landmarks[:done].copy() if done < n_landmarks else landmarks, objectives,
                   np.asarray(seconds))
            return out + (np.asarray(steps, dtype=np.int64),) if return_n_steps else out

        try:
            for k in outer:
                start = time.perf_counter()
                end = min(k + block_size, n_landmarks)
                # Landmark j starts where the sequential fit starts it; the block
                # steps on the batches of its first landmark.
                rngs = [np.random.default_rng([seed, j]) for j in range(k, end)]
                t0 = np.array([_initial_point(j, init, mean, std, rng, space)
                               for j, rng in zip(range(k, end), rngs, strict=True)])
                order = sample.layout.order(rngs[0], steps_per_landmark)
                fit.start(k, t0, order)
                label = f"landmark {k + 1}" if end == k + 1 else f"landmarks {k + 1}-{end}"
                with progress_bar(total=steps_per_landmark, desc=label, leave=False,
                          disable=not verbose, unit="step") as step_bar:
                    landmarks[k:end], taken = fit.run(step_bar)
                if end > k + 1:
                    # Greedy order inside the block: every prefix of the list stays a
                    # landmark set (largest posterior variance on all the data first).
                    picked, _ = greedy_order(gram.extended(k, end), k, RIDGE * sample.n_rows)
                    landmarks[k:end] = landmarks[k:end][picked]
                    gram.reorder(k, picked)
                for j in range(k, end):
                    fit.add_column(j, landmarks[j])
                seconds.extend([(time.perf_counter() - start) / (end - k)] * (end - k))
                steps.extend([taken] * (end - k))
                if callback is not None and end < n_landmarks:
                    callback(landmarks[:end], np.full(len(seconds), np.nan),
                             np.asarray(seconds))
            out = result(n_landmarks)
            if callback is not None and n_landmarks > n_previous:
                callback(landmarks, out[1][n_previous:], np.asarray(seconds))
        except KeyboardInterrupt as interrupt:
            interrupt.partial_result = result(n_previous + len(seconds))
            raise
    return out


# ------------------------------------------------------------------ GPLandmarks' run

@dataclass(frozen=True)
class GPSettings:
    """The parameters of :class:`~landmarking.gp.estimator.GPLandmarks`, as given
    (``GPSettings(**estimator.get_params())``); each as documented there."""

    n_landmarks: int
    n_steps: int | Literal["auto"] | None
    batch_size: int
    s0: float
    tau: float
    kernel_width: float | Literal["auto", "variance"]
    space: str
    init: str | ArrayLike
    chunk_size: int | None
    block_size: int | Literal["auto"]
    n_jobs: int | None
    refine: int
    warm_start: bool
    random_state: RandomStateLike
    device: DeviceLike
    verbose: bool


@dataclass(frozen=True)
class GPRun:
    """One run of :func:`run_gp_fit`: the fit's sample and the settings that "auto"
    and None leave open, resolved (the estimator's trailing-underscore attributes
    of the same names)."""

    #: The rows the minibatches come from (:func:`.sampling.draw_sample`).
    sample: Sample
    kernel_width: float
    block_size: int
    #: Steps per landmark (per block): a number or "auto".
    n_steps: int | Literal["auto"]
    #: "gaussian", "uniform" or "given" (the rows of ``init``).
    init: str


@dataclass(frozen=True)
class GPResult:
    """What :func:`run_gp_fit` learned (the estimator's attributes of the same
    names with a trailing underscore)."""

    landmarks: np.ndarray
    objective: np.ndarray
    #: Seconds and steps of the new landmarks (the run's, not those it continues).
    landmark_seconds: np.ndarray
    n_steps: np.ndarray
    refine_n_steps: np.ndarray
    refine_accepted: np.ndarray
    refine_seconds: float = 0.0


def starts_at_centre(p: GPSettings, kernel_width: float | None) -> bool:
    """Whether one-at-a-time landmarks start at the centre of the sphere-orthant:
    ``init="uniform"``, or "auto" on the sphere under a kernel at least
    :data:`UNIFORM_START_WIDTH` wide (False while the width is unknown, None)."""
    if not isinstance(p.init, str):
        return False
    if p.init == "uniform":
        return True
    return (p.init == "auto" and p.space == "sphere" and kernel_width is not None
            and kernel_width >= UNIFORM_START_WIDTH)


def resolve_block_size(p: GPSettings, n_landmarks: int,
                       kernel_width: float | None = None) -> int:
    """``block_size``, or for "auto" :data:`AUTO_BLOCK_SIZE` when a run learns at
    least that many landmarks (``n_landmarks``, the total), else 1; and 1 when the
    landmarks start at the centre of the sphere (:func:`starts_at_centre`, for
    ``kernel_width`` once it is known)."""
    if p.block_size != "auto":
        return p.block_size
    if n_landmarks < AUTO_BLOCK_SIZE or starts_at_centre(p, kernel_width):
        return 1
    return AUTO_BLOCK_SIZE


def resolve_steps(n_steps: int | Literal["auto"] | None, block_size: int) -> int | str:
    """``n_steps``, or for None the default of the run's block size
    (:data:`SEQUENTIAL_STEPS` one landmark at a time, else :data:`BLOCK_STEPS`)."""
    if n_steps is not None:
        return n_steps
    return SEQUENTIAL_STEPS if block_size == 1 else BLOCK_STEPS


def resolve_init(p: GPSettings, block_size: int, kernel_width: float) -> str:
    """The start: "given" for an array in ``init``; for "auto" the centre of the
    sphere-orthant ("uniform") on the sphere when landmarks are learned one at a
    time with a kernel at least :data:`UNIFORM_START_WIDTH` wide, else "gaussian"
    (the landmarks of a block must start apart, and under a narrow kernel
    landmarks from one start all find the same few clusters)."""
    if not isinstance(p.init, str):
        return "given"
    if p.init != "auto":
        return p.init
    return ("uniform" if block_size == 1 and starts_at_centre(p, kernel_width)
            else "gaussian")


def _sample_and_width(X, p, block_size, seed, kernel_width):
    """The fit's sample for runs of ``block_size`` (:func:`.sampling.draw_sample`),
    read with the check for NaN and infinity that ``check_rows(...,
    scan_finite=False)`` left out for out-of-core X (with ``chunk_size`` X is the
    sample and was scanned there); and the kernel width: ``kernel_width`` when
    given (a continued run keeps its width), else ``p.kernel_width`` resolved on the
    sample."""
    sample = draw_sample(X, batch_size=p.batch_size,
                         steps=max_steps(resolve_steps(p.n_steps, block_size)), seed=seed,
                         chunk_size=p.chunk_size, check_finite=p.chunk_size is None)
    if kernel_width is None:
        kernel_width = resolve_kernel_width(sample.X, p.kernel_width, random_state=seed)
    return sample, kernel_width


def plan_gp_run(X: MatrixLike, p: GPSettings, *, n_landmarks: int, seed: int,
                kernel_width: float | None = None) -> GPRun:
    """The sample and the resolved settings of a :class:`GPLandmarks` run.

    One read of out-of-core X: the sample's read checks it for NaN and infinity,
    and the kernel width (``p.kernel_width`` resolved when ``kernel_width`` is None,
    a new fit; a continued run keeps its width) comes from the sample (when the
    sample is all rows, the same rows from the same stream as from X itself).
    Where "auto" then takes the sequential fit on the sphere (landmarks from its
    centre, :func:`resolve_block_size`), the blocks' sample stays when it holds all
    rows; else it is redrawn, and the width taken again, for the sequential fit's
    steps, as a fit with ``block_size=1`` draws it.

    Parameters
    ----------
    X : validated array (``check_rows``)
    p : GPSettings
    n_landmarks : int
        The run's total, counting the landmarks it continues.
    seed : int
        The seed of the sample and the batches (``seed_``).
    kernel_width : float or None
        The width of the run continued; None resolves ``p.kernel_width``.

    Returns
    -------
    GPRun
    """
    block_size = resolve_block_size(p, n_landmarks, kernel_width)
    sample, width = _sample_and_width(X, p, block_size, seed, kernel_width)
    if kernel_width is None:
        drawn_for, block_size = block_size, resolve_block_size(p, n_landmarks, width)
        if (block_size != drawn_for and sample.n_rows < X.shape[0]
                and p.chunk_size is None):
            sample, width = _sample_and_width(X, p, block_size, seed, None)
    return GPRun(sample=sample, kernel_width=width, block_size=block_size,
                 n_steps=resolve_steps(p.n_steps, block_size),
                 init=resolve_init(p, block_size, width))


def run_gp_fit(run: GPRun, p: GPSettings, backend: GPBackend, *, n_landmarks: int,
               previous_landmarks: np.ndarray | None, seed: int, n_samples: int,
               callback: Any = None) -> GPResult:
    """The fit of a :class:`GPLandmarks` run on its sample (:func:`plan_gp_run`),
    on ``backend``, then ``p.refine`` sweeps of refinement and the check of the
    kernel width.

    ``callback`` is None or the object of
    :func:`landmarking._checkpoint.landmark_checkpoint`: called after each finished
    landmark, and closed (what the last throttled call held back is written) when
    the fit ends, before the refinement. A ``KeyboardInterrupt`` carries the
    landmarks finished so far in ``partial_result``, as from
    :func:`learn_gp_landmarks` (with ``return_n_steps``); in the refinement, the
    fit's.
    """
    settings = dict(kernel_width=run.kernel_width, n_steps=run.n_steps, s0=p.s0,
                    tau=p.tau, space=p.space, seed=seed, verbose=p.verbose)
    try:
        landmarks, *record = _learn(
            run.sample, n_landmarks, backend,
            init=p.init if run.init == "given" else run.init,
            previous_landmarks=previous_landmarks, return_n_steps=True,
            callback=callback, block_size=run.block_size, n_jobs=p.n_jobs, **settings)
    finally:
        if callback is not None:
            callback.close()
    objective, seconds, steps = record
    refine_steps = np.zeros((p.refine, n_landmarks), dtype=np.int64)
    accepted = np.zeros((p.refine, n_landmarks), dtype=bool)
    refine_seconds = 0.0
    if p.refine:
        start = time.perf_counter()
        try:
            landmarks, objective, refine_steps, accepted = _refine(
                run.sample, landmarks, backend, n_sweeps=p.refine, **settings)
        except KeyboardInterrupt as interrupt:
            interrupt.partial_result = (landmarks, objective, seconds, steps)
            raise
        refine_seconds = time.perf_counter() - start
    # The warning points at the caller of GPLandmarks.fit (or extend), through
    # GPLandmarks._fit_landmarks.
    warn_if_kernel_width_is_off(objective, n_samples, run.kernel_width, stacklevel=5)
    return GPResult(landmarks=landmarks, objective=objective, landmark_seconds=seconds,
                    n_steps=steps, refine_n_steps=refine_steps, refine_accepted=accepted,
                    refine_seconds=refine_seconds)
