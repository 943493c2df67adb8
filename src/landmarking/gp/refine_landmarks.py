"""Joint refinement of GP landmarks: :func:`refine_gp_landmarks`.

:func:`refine_gp_landmarks` (``GPLandmarks(refine=n_sweeps)``) revisits the landmarks
in order, each re-optimised by the same steps with ``M`` projecting out the span of
all the others. Since det(Phi^T Phi) = f_1 f_2 ... f_K for the sequential objectives,
and a landmark's f given all the others is det(Phi^T Phi) over a quantity that does
not depend on it, a move is kept only when it raises that f on the fit's sample
(:mod:`.sampling`): the sweeps are coordinate ascent on det(Phi^T Phi), which never decreases.

The steps are those of the fit, for one landmark at a time, run by the backend
(:meth:`.backend.GPBackend.refinement`: on the host for every device); the symbols
are those of :mod:`.objective`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .._progress import progress_bar
from .._typing import ArrayLike, MatrixLike
from .backend import GPBackend, gp_backend
from .objective import _objectives, max_steps
from .sampling import Sample, draw_sample

__all__ = ["refine_gp_landmarks"]


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
    is kept only if it raises f given the others on the fit's sample (one pass per
    landmark), so each accepted move raises det(Phi^T Phi), the product of the
    sequential objectives: the sweeps are coordinate ascent on the joint objective,
    and the full objective never drops. Order and meaning of the list are kept.

    Parameters
    ----------
    X : validated array, as for :func:`.fit.learn_gp_landmarks`
    landmarks : ndarray (K, n_features)
    kernel_width, n_steps, batch_size, s0, tau, space, seed, chunk_size :
        as for :func:`.fit.learn_gp_landmarks` (the same seed and chunk size give the
        fit's batches); ``n_steps="auto"`` stops each run by the same rule.
    n_sweeps : int
        Passes over all landmarks.
    verbose : bool
        A progress bar over the landmarks of each sweep.

    Returns
    -------
    landmarks : ndarray (K, n_features), float64
    objectives : ndarray (K,)
        (1/P) phi_k^T M phi_k given the landmarks before k, on the fit's sample
        of P rows (:mod:`.sampling`; all the data unless N > n_steps x batch_size).
    n_steps : ndarray (n_sweeps, K), int
        Steps run by each landmark in each sweep.
    accepted : ndarray (n_sweeps, K), bool
        Whether the new position was kept.
    """
    sample = draw_sample(X, batch_size=batch_size, steps=max_steps(n_steps), seed=seed,
                         chunk_size=chunk_size)
    return _refine(sample, landmarks, gp_backend("cpu"), kernel_width=kernel_width,
                   n_sweeps=n_sweeps, n_steps=n_steps, s0=s0, tau=tau, space=space, seed=seed,
                   verbose=verbose)


def _refine(sample: Sample, landmarks, backend: GPBackend, *, kernel_width, n_sweeps, n_steps,
            s0, tau, space, seed, verbose):
    """:func:`refine_gp_landmarks` on the fit's sample, drawn by the caller."""
    landmarks = np.array(landmarks, dtype=np.float64)
    n_landmarks = len(landmarks)
    auto = isinstance(n_steps, str)
    steps_per_run = max_steps(n_steps)
    state = backend.refinement(sample, landmarks, eta=kernel_width)
    steps = np.zeros((n_sweeps, n_landmarks), dtype=np.int64)
    accepted = np.zeros((n_sweeps, n_landmarks), dtype=bool)
    for sweep in range(n_sweeps):
        for k in progress_bar(range(n_landmarks), desc=f"refinement sweep {sweep + 1}",
                      disable=not verbose, unit="landmark"):
            rng = np.random.default_rng([seed, k, 0x5EF1, sweep])
            order = sample.layout.order(rng, steps_per_run)
            t, steps[sweep, k] = state.optimise(
                k, order, s0=s0, tau=tau, space=space,
                first_step=(sweep + 1) * steps_per_run + 1, auto=auto)
            accepted[sweep, k] = state.accept(k, t)
    return state.landmarks, _objectives(state.gram, sample.n_rows, 0), steps, accepted
