"""Model selection for Laplacian eigenmaps with Locally Linear Landmarks.

The reconstruction weights Z depend only on the landmarks, not on the affinity's
bandwidth sigma or its number of neighbours K_W. :func:`sweep_lll` therefore
computes the landmarks, Z and one neighbour search (with the largest K_W; the
graph :class:`~landmarking.lll.estimator.LocallyLinearLandmarks` builds) once,
and for each (sigma, K_W) only rebuilds W from the first K_W neighbours and
solves the small L x L problem. The paper's point (its Fig. 4) is that the
minimum of LLL's error curve sits where exact LE's does, so LLL finds good
parameters for exact LE cheaply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from sklearn.utils import check_random_state

from .._blocks import check_rows, to_memory
from .._parallel import blas_limit
from .._progress import progress_bar
from .._timings import stage
from .._typing import ArrayLike, MatrixLike, RandomStateLike
from .._validation import as_real_array, check_choice, check_positive_float, check_positive_int
from ..graph import GRAPH_SEARCHES, check_affinity, check_connected, gaussian_affinity
from ..metrics import procrustes_error
from ..spectral.laplacian import spectral_embedding
from ._cpu import reconstruction_weights, reduced_problem, solve_reduced_problem
from .cell_graph import graph_neighbors, nearest_landmarks
from .landmark_selection import resolve_landmarks

__all__ = ["sweep_lll", "format_table"]


def sweep_lll(X: MatrixLike, *, bandwidths: Sequence[float], n_neighbors: Sequence[int],
              score: ArrayLike | Callable[[np.ndarray], float], n_components: int = 2,
              n_landmarks: int = 100, n_landmark_neighbors: int = 5,
              landmarks: Literal["random", "random-pruned", "kmeans"] | ArrayLike = "random",
              reg: float = 1e-3, exact: bool = False,
              symmetrize: Literal["union", "mean"] = "union",
              neighbors_method: Literal["auto", "exact", "approximate", "cells"] = "auto",
              random_state: RandomStateLike = None,
              verbose: bool = False) -> dict[str, Any]:
    """Quality of LLL (and optionally exact LE) over a grid of sigma and K_W.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        NumPy array, CSR matrix, memory map, Zarr or Dask array; gathered into
        memory (the neighbour graph needs every row).
    bandwidths : sequence of float
        Gaussian widths sigma to try.
    n_neighbors : sequence of int
        Neighbour counts K_W to try (each < n_samples).
    score : ndarray of shape (n_samples, n_components) or callable
        Lower is better. An array is a reference embedding (e.g. the ground
        truth of a toy manifold), scored with
        :func:`landmarking.metrics.procrustes_error`; a callable maps an
        embedding (n_samples, n_components) to a float (e.g. a classification
        error).
    n_components, n_landmarks, n_landmark_neighbors, reg, symmetrize
        As in :class:`~landmarking.lll.estimator.LocallyLinearLandmarks`.
    landmarks : {"random", "random-pruned", "kmeans"} or ndarray
        Landmark strategy, or the landmark coordinates.
    exact : bool
        Also run exact Laplacian eigenmaps on each graph (slow; for comparison).
    neighbors_method : {"auto", "exact", "approximate", "cells"}
        The search of the graph on all points, as in
        :class:`~landmarking.lll.estimator.LocallyLinearLandmarks`: with
        ``"auto"`` the same graph as the estimator's (from 10,000 points of
        more than 3 features the cells graph, which reuses the landmarks and Z's
        nearest landmarks when the landmarks have its cells' size). Before 0.2.0
        the default was ``"exact"``.
    random_state : int, RandomState or None
    verbose : bool
        Progress bar over the grid.

    Returns
    -------
    table : dict of ndarrays
        One entry per setting: ``bandwidth``, ``n_neighbors``, ``lll_score``,
        ``lll_seconds`` (affinity + reduced problem + eigensolver; a score is
        NaN where the graph is numerically degenerate), and with
        ``exact=True`` also ``exact_score`` and ``exact_seconds``. The shared
        set-up cost is in ``table["setup_seconds"]`` (a float: landmarks, Z and
        the neighbour search).

    Examples
    --------
    >>> from sklearn.datasets import make_swiss_roll
    >>> X, t = make_swiss_roll(600, random_state=0)
    >>> truth = np.column_stack([t, X[:, 1]])
    >>> table = sweep_lll(X, bandwidths=[1.0, 3.0], n_neighbors=[8], score=truth,
    ...                   n_landmarks=60, random_state=0)
    >>> table["lll_score"].shape
    (2,)
    """
    X = to_memory(check_rows(X, min_samples=2),
                  what="sweep_lll (its neighbour graph needs every row at once)",
                  alternative="sweep on a random sample of rows.")
    bandwidths = [check_positive_float(b, "bandwidth") for b in bandwidths]
    ks = [check_positive_int(k, "n_neighbors") for k in n_neighbors]
    if not bandwidths or not ks:
        raise ValueError("bandwidths and n_neighbors must each hold at least one value.")
    check_choice(neighbors_method, "neighbors_method", GRAPH_SEARCHES)
    if max(ks) >= X.shape[0]:
        raise ValueError(
            f"n_neighbors up to {max(ks)} needs more than {X.shape[0]} samples; "
            "pass smaller neighbour counts."
        )
    if callable(score):
        scorer = score
    else:
        reference = as_real_array(score, "score", finite=True)
        if reference.ndim != 2:
            raise ValueError(
                f"score must be a reference embedding of shape (n_samples, n_components) "
                f"or a callable, got an array of shape {reference.shape}; for labels "
                "pass a callable that scores an embedding against them.")
        if reference.shape[0] != X.shape[0]:
            raise ValueError(
                f"the reference embedding has {reference.shape[0]} rows but X has "
                f"{X.shape[0]}; pass one row per sample."
            )

        def scorer(embedding):
            return procrustes_error(embedding[:, : reference.shape[1]], reference)

    rng = check_random_state(random_state)
    timings = {}
    with stage(timings, "setup"):
        T, _ = resolve_landmarks(X, landmarks, n_landmarks, rng)
        Z = reconstruction_weights(X, T, n_landmark_neighbors, reg=reg)
        dist, idx, _ = graph_neighbors(X, neighbors_method, max(ks), landmarks=T,
                                       nearest=nearest_landmarks(Z), rng=rng,
                                       random_state=random_state)
    rows = []
    grid = [(k, b) for k in ks for b in bandwidths]
    for k, b in progress_bar(grid, disable=not verbose, desc="sweep", leave=False):
        row = {"bandwidth": b, "n_neighbors": k}
        with stage(row, "lll_seconds"):
            try:
                W = check_affinity(gaussian_affinity(dist[:, :k], idx[:, :k], b,
                                                     symmetrize=symmetrize))
                check_connected(W)
                A, B = reduced_problem(W, Z)
                # One BLAS thread, as in the estimator: LAPACK's answer on the
                # L x L problem depends on the BLAS thread count.
                with blas_limit(1):
                    vecs, _ = solve_reduced_problem(A, B, n_components, random_state=rng)
                row["lll_score"] = scorer(np.asarray(Z @ vecs))
            except (ValueError, np.linalg.LinAlgError):
                # A degenerate graph (bandwidth far below the neighbour distances)
                # has no embedding: record it as missing, keep sweeping.
                W = None
                row["lll_score"] = np.nan
        if exact:
            with stage(row, "exact_seconds"):
                try:
                    emb_exact, _ = spectral_embedding(W, n_components, random_state=rng)
                    row["exact_score"] = scorer(emb_exact)
                except (ValueError, TypeError, AttributeError, np.linalg.LinAlgError):
                    row["exact_score"] = np.nan
        rows.append(row)
    table = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    table["setup_seconds"] = timings["setup"]
    return table


def format_table(table: dict[str, Any], columns: Sequence[str] | None = None,
                 floatfmt: str = "{:.4g}") -> str:
    """The sweep table as aligned plain text, one row per setting."""
    columns = columns or [k for k, v in table.items() if np.ndim(v) == 1]
    cells = [[floatfmt.format(v) if isinstance(v, (float, np.floating)) else str(v)
              for v in (table[c][i] for c in columns)]
             for i in range(len(table[columns[0]]))]
    widths = [max(len(c), *(len(row[j]) for row in cells)) for j, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)
