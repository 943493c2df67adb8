"""The GP landmarking estimator: :class:`GPLandmarks`.

A thin scikit-learn estimator: it checks its parameters (the table
:data:`.fit.PARAMETER_RULES`, kept beside the function they go to) and its data,
draws the seed, has :func:`.fit.plan_gp_run` draw the fit's sample and resolve
the settings that "auto" leaves open (kernel width, block size, steps, start) and
:func:`.fit.run_gp_fit` run the fit (and the refinement) on the backend, and
stores what they return. The mathematics is in :mod:`.objective`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Self

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._blocks import check_feasible_for_space, check_rows
from .._checkpoint import check_checkpoint, landmark_checkpoint
from .._landmark_features import LandmarkTransformerMixin
from .._typing import ArrayLike, DeviceLike, MatrixLike, RandomStateLike, StrPath
from .._validation import (
    check_enough_samples,
    check_params,
    check_positive_int,
)
from .backend import gp_backend
from .fit import (
    PARAMETER_RULES,
    GPSettings,
    check_previous_landmarks,
    check_start,
    plan_gp_run,
    run_gp_fit,
)

__all__ = ["GPLandmarks"]


class GPLandmarks(LandmarkTransformerMixin, BaseEstimator):
    """Landmarks on the data manifold by Gaussian-process landmarking.

    Landmarks are chosen one after another; each maximises the posterior variance
    of a Gaussian process with the plug-in manifold kernel given the landmarks
    before it (Liang & Paisley 2015), by stochastic projected ascent on minibatches.
    From 50 landmarks on they are learned in blocks of 50 that maximise the same
    variances jointly, then put in greedy order (``block_size``). They are points
    of the ambient space (not data points) that lie on the data, spread along it,
    in order of importance. See :mod:`landmarking.gp.objective` for the
    mathematics, the scale-free step and the joint objective of a block.

    Parameters
    ----------
    n_landmarks : int, default=10
        Number of landmarks to learn.
    n_steps : int, "auto" or None, default=None
        Steps of stochastic ascent per landmark (the paper's S), or per block of
        landmarks when they are learned in blocks (``block_size_ > 1``). None:
        ``fit.SEQUENTIAL_STEPS`` (1000, the paper's) one landmark at a time,
        ``fit.BLOCK_STEPS`` (100) per block (measured in the guide's "Blocks of
        landmarks": a block of 50 reaches the sequential fit's accuracy in 100
        steps). "auto" stops a landmark (a block) when the mean batch objective
        over the last ``AUTO_WINDOW`` (50) steps improves on the window before by
        less than ``AUTO_TOL`` (1%) of itself, after at least ``AUTO_MIN_STEPS``
        (100) and at most ``AUTO_MAX_STEPS`` (1000) steps; its steps are a prefix
        of the 1000 steps of ``n_steps=1000`` with the same seed. Steps run:
        ``n_steps_``.
    batch_size : int, default=1000
        Points per minibatch (|B_s|); all points when the data has fewer.
    s0, tau : float, default=10, 0.51
        Step schedule a_s = (s0 + s)^-tau, the fraction of the way to the weighted
        mean m moved at step s; tau in (0.5, 1] for Robbins-Monro convergence.
    kernel_width : float, "auto" or "variance", default="auto"
        eta in phi_x(t) = exp(-||t - x||^2 / eta), in squared data units.
        "variance" is the paper's heuristic, the sum of the per-dimension variances;
        it is far too wide for low-dimensional manifolds. "auto" is the variance
        rule unless that is more than 5 times the local rule (the median squared
        distance to the 20th nearest neighbour in a subsample of 2,000 points),
        which then follows the spacing along the manifold
        (:func:`landmarking.kernels.auto_kernel_width`). Both rules run on the fit's
        sample (see ``chunk_size``): all rows unless N > ``n_steps x batch_size``,
        and then the sample's rows, not all N (so that out-of-core data is read
        once; the width may differ slightly from the rules on all rows). The value
        used is ``kernel_width_``.
    space : {"euclidean", "nonnegative", "sphere"}, default="euclidean"
        Where landmarks live: anywhere; the nonnegative orthant (images); or the
        unit sphere within the nonnegative orthant (square-root histograms).
    init : "auto", "gaussian", "uniform" or array of shape (n_landmarks, n_features), \
default="auto"
        Starting points: "gaussian", draws from a Gaussian with the data's mean and
        per-dimension variance (the paper's), projected onto ``space``; "uniform",
        the centre of the sphere-orthant, 1 / sqrt(d) in every entry (the authors'
        code's start, ``space="sphere"`` only); or one given row per landmark.
        "auto" (``init_``): "uniform" on the sphere under a wide kernel
        (``kernel_width_ >= UNIFORM_START_WIDTH``, 0.5) when landmarks are learned
        one at a time (``block_size_ == 1``, which ``block_size="auto"`` then
        always takes), else "gaussian" (a block needs distinct starts; under a
        narrow kernel landmarks from one start find the same few clusters; the
        purities behind the rule are in docs/results/gp.md).
    chunk_size : int or None, default=None
        None: the minibatches are slices of a seeded random order of the fit's
        sample, every row when a landmark's ``n_steps`` can visit all
        N // ``batch_size`` batches (the paper's sampling), else ``n_steps x
        batch_size`` rows drawn from all N; the sample is read once, front to
        back, and the landmarks are the same from a NumPy array, a memory map, a
        Zarr or a Dask array in any chunking, and every batch mixes rows from the
        whole array however they are ordered (see the guide's page "Data larger
        than memory"). An int: the earlier chunked sampling, where each landmark
        visits chunks of that many rows in a random order and, within a chunk, its
        batches (slices of a fixed random permutation of the chunk's rows); its
        landmarks depend on the chunks, the same in any container, and data
        sorted by class should be shuffled first, since the last chunk a landmark
        visits weighs most.
    block_size : int or "auto", default="auto"
        Landmarks learned together: each block of ``block_size`` new landmarks
        runs ``n_steps`` steps of joint stochastic ascent on the log-determinant of
        their posterior covariance given the landmarks before (the sum of their
        sequential log posterior variances; the paper's future work, see
        :mod:`landmarking.gp.objective`), each step reading its batch once for the
        whole block on ``n_jobs`` threads, and its landmarks are then put in greedy
        order (largest posterior variance on all the data first), so that every
        prefix of ``landmarks_`` is a landmark set. 1 is the paper's sequential
        algorithm (the same step with one landmark per block). "auto"
        (``block_size_``): ``fit.AUTO_BLOCK_SIZE`` (50) when a run learns at least 50
        landmarks (``n_landmarks``, with those it continues),
        else 1; and 1 on the sphere whenever the start is its centre
        (``init="uniform"``, or "auto" under a kernel at least
        ``fit.UNIFORM_START_WIDTH`` wide; a block needs distinct starts): on 20
        Newsgroups the sequential fit from the centre gives purer topics than
        blocks from Gaussian draws (docs/results/gp.md, "20 Newsgroups topics").
        Blocks gave the sequential fit's accuracy or better at 50 landmarks and
        more on MNIST, faces and 20 Newsgroups (from Gaussian draws) in a tenth of
        its time, but lower topic purity with 12 or 25 landmarks on 20 Newsgroups
        (the guide's "Blocks of landmarks"); below 50 the sequential fit is fast
        anyway.
        Blocks run from the first new landmark: a run continued by ``extend``,
        ``warm_start`` or ``previous_landmarks`` equals one longer run when the
        landmarks it continues end at a block boundary (a multiple of 50 under
        "auto"), and always with ``block_size=1``. Runs on every ``device``: on
        ``"cpu"`` on ``n_jobs`` threads, on a torch device with the same
        arithmetic on tensors (the same landmarks to rounding).
    n_jobs : int or None, default=None
        Threads of a block step (``block_size > 1``) on ``device="cpu"``. None:
        scikit-learn's rule (``OMP_NUM_THREADS`` if set, else the CPUs this process
        may use: affinity mask, cgroup quota; within an enclosing
        ``threadpool_limits``; inside ``joblib.parallel_config(n_jobs=...)`` that
        many), -1 all cores. The landmarks are the same bit for bit whatever
        the number.
        The sequential step (``block_size=1``), and every step of the torch path
        on the CPU, runs on one thread.
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
        Where the sequential pass (in blocks too, ``block_size > 1``) and
        ``transform`` run: "cpu" is the CPU path;
        "cuda" a GPU through PyTorch (``pip install "landmarking[gpu]"``); "auto"
        "cuda" when one is available, else "cpu"; a ``torch.device("cpu")`` the
        torch path on the CPU. Every device gives the CPU path's landmarks to
        rounding for the same seed; ``refine`` runs on the CPU path. See the
        guide's page "On a GPU".
    verbose : bool, default=False
        Progress bars over landmarks and steps.

    Attributes
    ----------
    landmarks_ : ndarray of shape (n_landmarks, n_features)
        The landmarks, in order of selection.
    objective_ : ndarray of shape (n_landmarks,)
        The objective each landmark reached: (1/P) phi^T M phi on the fit's
        sample of P rows (all the data unless N > ``n_steps x batch_size``).
    kernel_width_ : float
        The kernel width eta used.
    init_ : str
        The start of the last ``fit`` or ``extend``: "gaussian", "uniform" or
        "given" (an array in ``init``); what "auto" resolved to.
    block_size_ : int
        The block size of the last ``fit`` or ``extend``: ``block_size``, or what
        "auto" resolved to (1 or 50).
    landmark_seconds_ : ndarray of shape (n_landmarks,)
        Wall time spent on each landmark in the sequential pass.
    n_steps_ : ndarray of shape (n_landmarks,)
        Steps each landmark ran in the sequential pass, or its block ran
        (``n_steps`` or what None resolved to, or fewer with ``n_steps="auto"``).
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

    _parameter_rules = PARAMETER_RULES

    #: Files saved before ``block_size`` existed were fitted one landmark at a time
    #: (see :mod:`landmarking.persistence`).
    _persistence_earlier_defaults = {"block_size": 1}

    def __init__(self, *, n_landmarks: int = 10, n_steps: int | Literal["auto"] | None = None,
                 batch_size: int = 1000, s0: float = 10.0, tau: float = 0.51,
                 kernel_width: float | Literal["auto", "variance"] = "auto",
                 space: Literal["euclidean", "nonnegative", "sphere"] = "euclidean",
                 init: Literal["auto", "gaussian", "uniform"] | ArrayLike = "auto",
                 chunk_size: int | None = None, block_size: int | Literal["auto"] = "auto",
                 n_jobs: int | None = None,
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
        self.block_size = block_size
        self.n_jobs = n_jobs
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
        backend = gp_backend(self.device)
        check_checkpoint(checkpoint)
        self._check_settings()
        # A warm-started estimator keeps the features it was fitted on.
        warm = self.warm_start and hasattr(self, "landmarks_")
        if warm and previous_landmarks is None:
            return self._fit_landmarks(
                X, backend, n_landmarks=self.n_landmarks, seed=self.seed_,
                kernel_width=self.kernel_width_, previous_landmarks=self.landmarks_,
                previous_record=self._record(), reset=False, checkpoint=checkpoint)
        return self._fit_landmarks(
            X, backend, n_landmarks=self.n_landmarks, seed=None, kernel_width=None,
            previous_landmarks=previous_landmarks,
            previous_record=(np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)),
            reset=not warm, checkpoint=checkpoint)

    def extend(self, X: MatrixLike, n_more: int) -> Self:
        """Learn ``n_more`` landmarks after the ones already fitted (same X).

        The first landmarks stay as they are; the new ones are learned in blocks of
        ``block_size`` ("auto" resolved for the new total) from the first new one.
        The result equals a single fit with ``n_landmarks + n_more`` landmarks and
        the same seed when the fitted landmarks end at a block boundary (always
        with ``block_size=1``).

        Returns
        -------
        self
        """
        check_is_fitted(self, "landmarks_")
        backend = gp_backend(self.device)
        n_more = check_positive_int(n_more, "n_more")
        total = len(self.landmarks_) + n_more
        if not isinstance(self.init, str) and len(self.init) < total:
            raise ValueError(
                f"init has {len(self.init)} starting points but {total} landmarks are "
                "needed; pass more rows in init or use init='auto'."
            )
        return self._fit_landmarks(
            X, backend, n_landmarks=total, seed=self.seed_, kernel_width=self.kernel_width_,
            previous_landmarks=self.landmarks_, previous_record=self._record(), reset=False)

    def _settings(self):
        return GPSettings(**self.get_params(deep=False))

    def _check_settings(self):
        """The parameters checked, at the top of ``fit``."""
        check_params(self, self._parameter_rules)
        if self.block_size != "auto" and self.block_size > self.n_landmarks:
            raise ValueError(
                f"block_size={self.block_size} is larger than n_landmarks="
                f"{self.n_landmarks}; pass a block_size between 1 and n_landmarks.")

    def _check_rows(self, X, reset):
        """X validated for ``fit`` and ``extend``. Out-of-core X is checked for NaN
        and infinity as the fit's sample is read (:func:`.fit.plan_gp_run`), unless
        chunk_size makes X itself the sample: one read of the data."""
        return check_rows(X, estimator=self, reset=reset,
                          scan_finite=self.chunk_size is not None)

    def _record(self):
        return self.objective_, self.landmark_seconds_, self.n_steps_

    def _fit_landmarks(self, X, backend, *, n_landmarks, seed, kernel_width,
                       previous_landmarks, previous_record, reset, checkpoint=None):
        """The run that ``fit`` and ``extend`` share, to ``n_landmarks`` in all.

        Checks X and the arguments that depend on it, has :func:`.fit.plan_gp_run`
        draw the sample and resolve the settings (the width ``kernel_width`` of a
        continued run, or from ``kernel_width`` when None; the seed ``seed``, or
        drawn from ``random_state`` when None), records them, has
        :func:`.fit.run_gp_fit` run the fit on ``backend`` after the
        ``previous_landmarks``, and stores what it learned after their
        ``previous_record`` (objectives, seconds, steps).
        """
        X = self._check_rows(X, reset=reset)
        check_enough_samples(X.shape[0], 2, "GPLandmarks")
        check_feasible_for_space(X, self.space)
        check_start(self.init, n_landmarks, X.shape[1], self.space,
                    names=("auto", "gaussian", "uniform"))
        previous = check_previous_landmarks(previous_landmarks, n_landmarks, X.shape[1])
        if seed is None:
            seed = int(check_random_state(self.random_state).randint(2**31 - 1))
        run = plan_gp_run(X, self._settings(), n_landmarks=n_landmarks, seed=seed,
                          kernel_width=kernel_width)
        self.seed_ = seed
        self.kernel_width_, self.block_size_, self.init_ = (run.kernel_width, run.block_size,
                                                            run.init)
        self.device_ = backend.name
        callback = landmark_checkpoint(checkpoint, self, n_landmarks, previous_record[0],
                                       previous_record[1])
        try:
            result = run_gp_fit(run, self._settings(), backend, n_landmarks=n_landmarks,
                                previous_landmarks=previous, seed=seed,
                                n_samples=X.shape[0], callback=callback)
        except KeyboardInterrupt as interrupt:
            # Keep what was finished so that a caller can save it and continue.
            partial = getattr(interrupt, "partial_result", None)
            if partial is not None:
                self._store(partial[0], partial[1:], previous_record)
                # The landmarks kept are the fit's, not refined: no sweep counts.
                self.refine_n_steps_ = np.zeros((self.refine, len(partial[0])),
                                                dtype=np.int64)
                self.refine_accepted_ = np.zeros_like(self.refine_n_steps_, dtype=bool)
                self.refine_seconds_ = 0.0
            raise
        self._store(result.landmarks, (result.objective, result.landmark_seconds,
                                       result.n_steps), previous_record)
        self.refine_n_steps_ = result.refine_n_steps
        self.refine_accepted_ = result.refine_accepted
        self.refine_seconds_ = result.refine_seconds
        return self

    def _store(self, landmarks, record, previous_record):
        self.landmarks_ = landmarks
        # The objectives come for all landmarks (previous ones included), from one
        # pass at the end of the run; seconds and steps for the new ones.
        self.objective_ = record[0]
        self.landmark_seconds_, self.n_steps_ = (
            np.concatenate([before, now])
            for before, now in zip(previous_record[1:], record[1:], strict=True))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = True
        return tags
