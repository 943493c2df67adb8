"""Maximum variance unfolding (MVU) and its landmark version (L-MVU).

The baseline the Manifold Sculpting paper compares against (Gashler, Ventura &
Martinez 2011, Figs. 2, 7, 8, 10, 12 and 16):

- :func:`maximum_variance_unfolding`: Weinberger & Saul's semidefinite program.
  Over the n x n Gram matrix K of the embedding, maximise trace(K) subject to
  K >= 0 (positive semidefinite), sum(K) = 0 (centred), and
  K_ii - 2 K_ij + K_jj = |x_i - x_j|^2 for every edge (i, j) of the symmetrised
  k-nearest-neighbour graph (local distances kept);
- :func:`landmark_mvu`: Weinberger, Packer & Saul (AISTATS 2005). Pick m
  landmarks (floor(sqrt(n)) by default, as the sculpting paper did); write every
  point as the LLE reconstruction from its neighbours, W, and solve
  min |(I - W) Y|^2 with the landmarks' rows of Y held at L, which gives
  Y = Q L with an n x m matrix Q (Q's landmark rows are the identity). The
  program is then over the m x m Gram matrix K = L L^T: maximise
  trace(Q K Q^T) subject to K >= 0, 1^T Q K Q^T 1 = 0, and
  (q_i - q_j)^T K (q_i - q_j) <= |x_i - x_j|^2 on the edges (inequalities, as in
  the L-MVU paper: a reconstruction cannot keep every distance exactly).

With every point a landmark Q is the identity and L-MVU is MVU with the distance
equalities relaxed to inequalities (``distances="at_most"``); the tests compare
the two there.

The programs are solved with cvxpy (Clarabel by default, SCS on request), an
optional dependency: ``pip install landmarking[mvu]``. Importing this module does
not import cvxpy; the functions import it when called.

The program's size limits MVU, as in the paper: an n x n semidefinite variable
(a few hundred points at most). L-MVU's program has one dense row of about
m^2 / 2 entries per graph edge, about n k m^2 / 2 numbers, which Clarabel did not
solve from 2,000 points on. But only a few edges are tight at its optimum (in
general no more than the m^2 / 2 unknowns of K; tens in practice), so :func:`landmark_mvu`
solves it by constraint generation (:func:`_solve_gram_by_rounds`): the program
over a few edges, then again with the edges its solution stretches added, until
none is stretched. A relaxation's optimum that keeps every constraint is the
full program's optimum, so the answer is the same; each round's program is small.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse
from scipy.linalg import null_space
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu
from sklearn.utils import check_random_state

from .._typing import ArrayLike, NDArray, RandomStateLike
from .._validation import check_choice, check_positive_int
from ..local_weights import local_affine_weights
from ..neighbors import nearest_neighbors

__all__ = ["maximum_variance_unfolding", "landmark_mvu"]

#: Solvers that the functions accept (both ship with cvxpy).
SOLVERS = ("CLARABEL", "SCS")

# The relative ridge of the LLE reconstruction weights: scikit-learn's LLE default.
_RECONSTRUCTION_REG = 1e-3

# L-MVU's programs over a thousand points and more stall in Clarabel at a relative
# duality gap of about 5e-4 (a 1,000-point roll: NumericalError after 49
# iterations, primal residual 4e-6). A gap of 1e-3 in trace(Q K Q^T) moves the
# coordinates by about 0.05% of the extent, far below L-MVU's own error (a
# normalised MSE near 1), so such a stop counts as solved ("AlmostSolved", which
# cvxpy reports as optimal_inaccurate). Its static regularisation of the KKT
# system is raised from 1e-8 to 1e-6: with the default, a late round of the
# 1,000-point S-curve's program (k = 6, 837 edges) failed with a numerical error,
# and with 1e-6 it solved (normalised MSE 0.269); iterative refinement removes
# the perturbation from the solution. Options passed by the caller win.
_LMVU_CLARABEL = {"reduced_tol_gap_rel": 1e-3, "reduced_tol_gap_abs": 1e-3,
                  "static_regularization_constant": 1e-6}

# Constraint generation (:func:`_solve_gram_by_rounds`): the first round keeps
# this many edges per landmark, drawn at random, and each later round adds this
# many per landmark, the most stretched first; m landmarks leave about m^2 / 2
# unknowns in K, of which a few tens of edges are tight at the optimum (the
# 2,000-point star-hole roll, k = 6: 40-70 of 7,089).
_FIRST_EDGES_PER_LANDMARK = 4
_ADDED_EDGES_PER_LANDMARK = 4
# An edge outside the round's program is stretched when its squared length
# exceeds its bound by this share: 5e-6 of its length, below the solvers'
# tolerances at the scale of the whole embedding.
_STRETCH_TOLERANCE = 1e-5
# Rounds at most; each adds edges, so the last possible round is the full program.
_MAX_ROUNDS = 100


# ----------------------------------------------------------------- helpers

def _import_cvxpy():
    """cvxpy, or an ImportError that names the extra which installs it."""
    try:
        import cvxpy
    except ImportError as exc:
        raise ImportError(
            "maximum variance unfolding solves a semidefinite program with cvxpy, from "
            "the `mvu` extra: install it with `pip install landmarking[mvu]`."
        ) from exc
    return cvxpy


def _check_data(X, n_components, n_neighbors, solver):
    """Validated (X as float64, n_components, n_neighbors, solver)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got {X.ndim}-D.")
    if not np.isfinite(X).all():
        raise ValueError("X holds inf or NaN; pass finite values.")
    n_components = check_positive_int(n_components, "n_components")
    n_neighbors = check_positive_int(n_neighbors, "n_neighbors")
    if n_neighbors >= X.shape[0]:
        raise ValueError(f"n_neighbors must be < n_samples={X.shape[0]}, got {n_neighbors}; "
                         "pass fewer neighbours or more rows.")
    if n_components >= X.shape[0]:
        raise ValueError(f"n_components must be < n_samples={X.shape[0]}, got "
                         f"{n_components}.")
    check_choice(solver, "solver", SOLVERS)
    return X, n_components, n_neighbors, solver


def _neighbour_graph(X, n_neighbors):
    """The k-NN graph's neighbour indices (n, k) and its undirected edges.

    Returns ``(indices, edges, sq_lengths)``: each edge (i, j), i < j, once, and
    |x_i - x_j|^2. Raises when the graph falls apart: the variance of two
    unconnected pieces is unbounded (they can move apart freely).
    """
    _, indices = nearest_neighbors(X, n_neighbors)
    n = X.shape[0]
    rows = np.repeat(np.arange(n), n_neighbors)
    cols = indices.ravel()
    edges = np.unique(np.sort(np.column_stack([rows, cols]), axis=1), axis=0)
    graph = sparse.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    n_parts, _ = connected_components(graph, directed=False)
    if n_parts > 1:
        raise ValueError(
            f"the {n_neighbors}-nearest-neighbour graph has {n_parts} connected components; "
            "its variance would be unbounded. Pass a larger n_neighbors."
        )
    sq = np.sum((X[edges[:, 0]] - X[edges[:, 1]]) ** 2, axis=1)
    return indices, edges, sq


def _reconstruction_matrix(X, indices, landmarks):
    """Q (n x m): the rows of Y = Q L that minimise |(I - W) Y|^2 given the
    landmarks' rows L, W the LLE weights over each point's neighbours."""
    n, k = indices.shape
    diffs = X[indices] - X[:, None, :]
    weights = local_affine_weights(diffs @ diffs.transpose(0, 2, 1), _RECONSTRUCTION_REG)
    W = sparse.csr_matrix((weights.ravel(), (np.repeat(np.arange(n), k), indices.ravel())),
                          shape=(n, n))
    M = sparse.identity(n, format="csr") - W
    phi = (M.T @ M).tocsc()
    others = np.setdiff1d(np.arange(n), landmarks)
    Q = np.zeros((n, len(landmarks)))
    Q[landmarks, np.arange(len(landmarks))] = 1.0
    if len(others):
        # The stationarity condition of the quadratic in the free rows:
        # phi_uu Y_u = -phi_ul L. phi_uu is positive definite when every free
        # point reaches a landmark through the graph (checked connected).
        block = phi[others][:, others].tocsc()
        coupling = phi[others][:, landmarks].toarray()
        Q[others] = -splu(block).solve(coupling)
    return Q


def _edge_coefficients(V, m):
    """The squared edge lengths as a linear map of a symmetric K (m x m): A
    (sparse, edges x m^2) with v_e^T K v_e = A @ vec(K), vec row by row, for the
    rows v_e of V.

    Only K's diagonal and upper triangle get coefficients (v_a^2, and 2 v_a v_b
    for a < b), which halves the matrix, dense in those columns, one row per
    edge. (cvxpy's ``upper_tri`` would say the same more shortly, but cvxpy 1.9.3
    canonicalises it wrongly: a program that pins ``upper_tri(K)`` of a
    symmetric K comes out infeasible.)
    """
    n_edges = len(V)
    upper_i, upper_j = np.triu_indices(m, 1)
    columns = np.concatenate([np.arange(m) * (m + 1), upper_i * m + upper_j])
    dense = np.hstack([V**2, 2.0 * V[:, upper_i] * V[:, upper_j]])
    return sparse.csr_matrix((dense.ravel(), np.tile(columns, n_edges),
                              np.arange(n_edges + 1) * len(columns)), shape=(n_edges, m * m))


def _centring_basis(Q):
    """P (m x (m-1)), an orthonormal basis of the complement of c = Q^T 1.

    The centring 1^T Q K Q^T 1 = 0 with K >= 0 means K c = 0: every feasible K
    lies on the boundary of the cone, where interior-point solvers stall
    (Clarabel fails on an 80-point MVU so). So K = P K' P^T, and the programs are
    over K' ((m-1) x (m-1)), whose feasible set has an interior.
    """
    return null_space(Q.sum(axis=0)[None, :])


def _solve_program(cp, objective, V, bounds, *, equality, summed=None, solver,
                   solver_options):
    """K' >= 0 maximising <objective, K'> subject to v^T K' v = (or <=) the bound,
    for the rows v of V, and, given ``summed = (G, total)``, <G, K'> <= total;
    raises RuntimeError when the solver stops without an optimal point."""
    K = cp.Variable(objective.shape, PSD=True)
    lengths = _edge_coefficients(V, objective.shape[0]) @ cp.vec(K, order="C")
    constraints = [lengths == bounds if equality else lengths <= bounds]
    if summed is not None:
        G, total = summed
        constraints.append(cp.sum(cp.multiply(G, K)) <= total)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(objective, K))), constraints)
    try:
        problem.solve(solver=solver, **(solver_options or {}))
    except cp.error.SolverError as exc:
        raise RuntimeError(f"the semidefinite program failed in {solver}: {exc}") from exc
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or K.value is None:
        raise RuntimeError(
            f"the semidefinite program ended with status {problem.status!r} ({solver}); "
            "a time limit in solver_options, or a problem too large for the solver."
        )
    return (K.value + K.value.T) / 2


def _solve_gram(cp, Q, edges, sq, *, equality, solver, solver_options):
    """K (m x m), the optimum of the semidefinite program of the module
    docstring over every edge at once (MVU's program)."""
    basis = _centring_basis(Q)
    Qc = Q @ basis
    inner = _solve_program(cp, Qc.T @ Qc, Qc[edges[:, 0]] - Qc[edges[:, 1]], sq,
                           equality=equality, solver=solver, solver_options=solver_options)
    return basis @ inner @ basis.T


def _solve_gram_by_rounds(cp, Q, edges, sq, *, rng, solver, solver_options):
    """K (m x m), the optimum of L-MVU's program (edges may shrink, never grow),
    by constraint generation.

    Each round solves the program over a working set of edges, plus the sum of
    every edge's constraint (which the full program implies, and which bounds K'
    in every direction: a few edges alone may leave the variance unbounded).
    That is a relaxation: its optimum is at least the full program's. When its
    solution stretches no edge outside the working set, it is feasible for the
    full program and so its optimum; otherwise the most stretched edges join the
    set and the program is solved again.

    Two rescalings that leave the optimum unchanged help the solvers: every
    edge's row v and bound are divided by |v|^2 (Q's rows range over orders of
    magnitude), and the objective by its trace.
    """
    m = Q.shape[1]
    basis = _centring_basis(Q)
    Qc = Q @ basis
    V = Qc[edges[:, 0]] - Qc[edges[:, 1]]
    norms_sq = np.einsum("ij,ij->i", V, V)
    # An edge between two points of the same reconstruction (v = 0) has length 0
    # whatever K: its constraint always holds.
    moving = norms_sq > 0
    V = V[moving] / np.sqrt(norms_sq[moving])[:, None]
    bounds = sq[moving] / norms_sq[moving]
    objective = Qc.T @ Qc
    objective = objective / np.trace(objective)
    every_edge_summed = (V.T @ V, float(bounds.sum()))
    n_edges = len(V)
    working = np.sort(rng.choice(n_edges, min(n_edges, _FIRST_EDGES_PER_LANDMARK * m),
                                 replace=False))
    for _ in range(_MAX_ROUNDS):
        inner = _solve_program(cp, objective, V[working], bounds[working], equality=False,
                               summed=every_edge_summed, solver=solver,
                               solver_options=solver_options)
        # Squared lengths past the bound and its tolerance (no division: two equal
        # points have a bound of 0).
        excess = np.einsum("ij,jk,ik->i", V, inner, V) - bounds * (1.0 + _STRETCH_TOLERANCE)
        excess[working] = -np.inf
        stretched = np.flatnonzero(excess > 0)
        if stretched.size == 0:
            return basis @ inner @ basis.T
        worst = stretched[np.argsort(-excess[stretched], kind="stable")]
        working = np.union1d(working, worst[:_ADDED_EDGES_PER_LANDMARK * m])
    raise RuntimeError(
        f"L-MVU's constraint generation still stretched {stretched.size} edges after "
        f"{_MAX_ROUNDS} rounds ({solver}); pass solver='SCS', or fewer neighbours."
    )


def _embed(Q, K, n_components):
    """The top ``n_components`` principal axes of the points Q K^(1/2) (the best
    rank-d approximation of the Gram matrix Q K Q^T), signs fixed so that each
    column's largest entry in magnitude is positive."""
    values, vectors = np.linalg.eigh(K)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    Z = Q @ root
    Z = Z - Z.mean(axis=0)
    U, s, _ = np.linalg.svd(Z, full_matrices=False)
    Y = U[:, :n_components] * s[:n_components]
    signs = np.sign(Y[np.abs(Y).argmax(axis=0), np.arange(Y.shape[1])])
    return Y * np.where(signs == 0, 1.0, signs)


def _unit_scale(sq):
    """The median squared edge length: the programs are solved on data scaled to
    unit edges (Clarabel's and SCS's tolerances are absolute as well as
    relative), and the embedding scaled back."""
    scale = float(np.median(sq))
    return scale if scale > 0 else 1.0


# ----------------------------------------------------------------- public functions

def maximum_variance_unfolding(
    X: ArrayLike, n_components: int, n_neighbors: int, *, distances: str = "equal",
    solver: str = "CLARABEL", solver_options: dict[str, Any] | None = None,
) -> NDArray[np.float64]:
    """Maximum variance unfolding (Weinberger & Saul 2004): the n x n program.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Dense, finite. The program has an n x n semidefinite variable: a few
        hundred rows at most.
    n_components : int
        Dimension of the embedding, < n_samples.
    n_neighbors : int
        k of the k-nearest-neighbour graph whose edge lengths are kept; the
        graph must be connected.
    distances : {"equal", "at_most"}
        ``"equal"``: the edges keep their lengths (Weinberger & Saul). On a
        graph rigid in every dimension (a densely sampled surface with k >= 6,
        say) that leaves only the data's own Gram matrix, with no interior, and
        the interior-point solver fails; ``"at_most"``: edges may shrink, never
        grow (L-MVU's relaxation; the optimum pulls points apart, so most edges
        stay tight).
    solver : {"CLARABEL", "SCS"}
        cvxpy's solver. Clarabel (interior point) reaches tolerances of about
        1e-8; SCS (first order) about 1e-4 but takes larger programs.
    solver_options : dict, optional
        Passed to ``cvxpy.Problem.solve`` (e.g. ``{"time_limit": 60}`` for
        Clarabel, ``{"time_limit_secs": 60}`` for SCS).

    Returns
    -------
    ndarray of shape (n_samples, n_components)
        The top principal axes of the unfolded Gram matrix.

    Raises
    ------
    ImportError
        When cvxpy is not installed (``pip install landmarking[mvu]``).
    ValueError
        On bad input, or when the neighbour graph is not connected.
    RuntimeError
        When the solver stops without an optimal point.

    Examples
    --------
    >>> t = np.linspace(0.0, 3.0, 12) ** 2            # uneven steps along a line
    >>> X = np.column_stack([t, 2 * t, -t]) / np.sqrt(6)
    >>> Y = maximum_variance_unfolding(X, 1, 2)       # doctest: +SKIP
    >>> bool(np.allclose(Y[:, 0] - Y[0, 0], t, atol=1e-4))  # doctest: +SKIP
    True
    """
    X, n_components, n_neighbors, solver = _check_data(X, n_components, n_neighbors, solver)
    check_choice(distances, "distances", ("equal", "at_most"))
    cp = _import_cvxpy()
    _, edges, sq = _neighbour_graph(X, n_neighbors)
    scale = _unit_scale(sq)
    Q = np.eye(X.shape[0])
    K = _solve_gram(cp, Q, edges, sq / scale, equality=distances == "equal", solver=solver,
                    solver_options=solver_options)
    return _embed(Q, K, n_components) * np.sqrt(scale)


def landmark_mvu(
    X: ArrayLike, n_components: int, *, n_landmarks: int | None = None, n_neighbors: int,
    random_state: RandomStateLike = None, solver: str = "CLARABEL",
    solver_options: dict[str, Any] | None = None,
) -> NDArray[np.float64]:
    """Landmark maximum variance unfolding (Weinberger, Packer & Saul 2005).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Dense, finite.
    n_components : int
        Dimension of the embedding, < n_landmarks.
    n_landmarks : int, optional
        Landmarks, drawn at random without replacement; default
        floor(sqrt(n_samples)), as the Manifold Sculpting paper used it.
        ``n_samples`` makes every point a landmark (MVU with inequality
        constraints).
    n_neighbors : int
        k of the neighbour graph: the LLE reconstruction of each point from its
        k neighbours, and the edges whose lengths may not grow. The graph must
        be connected.
    random_state : int, RandomState or None
        Draws the landmarks, and the edges of the program's first round (the
        optimum does not depend on them, to the solver's tolerance).
    solver : {"CLARABEL", "SCS"}
        cvxpy's solver, as in :func:`maximum_variance_unfolding`.
    solver_options : dict, optional
        Passed to ``cvxpy.Problem.solve``.

    Returns
    -------
    ndarray of shape (n_samples, n_components)
        Y = Q L reduced to its top principal axes.

    Raises
    ------
    ImportError
        When cvxpy is not installed (``pip install landmarking[mvu]``).
    ValueError
        On bad input, or when the neighbour graph is not connected.
    RuntimeError
        When the solver stops without an optimal point.

    Examples
    --------
    >>> from landmarking.datasets import make_sculpting_swiss_roll
    >>> X, uv = make_sculpting_swiss_roll(400, random_state=0)
    >>> Y = landmark_mvu(X, 2, n_neighbors=6, random_state=0)  # doctest: +SKIP
    >>> Y.shape  # doctest: +SKIP
    (400, 2)
    """
    X, n_components, n_neighbors, solver = _check_data(X, n_components, n_neighbors, solver)
    n = X.shape[0]
    m = int(np.sqrt(n)) if n_landmarks is None else check_positive_int(n_landmarks,
                                                                       "n_landmarks")
    if not n_components < m <= n:
        raise ValueError(
            f"n_landmarks must lie in (n_components, n_samples] = ({n_components}, {n}], "
            f"got {m}" + (" (floor(sqrt(n_samples)))" if n_landmarks is None else "")
            + "; pass n_landmarks within that range."
        )
    cp = _import_cvxpy()
    rng = check_random_state(random_state)
    landmarks = np.sort(rng.choice(n, size=m, replace=False))
    indices, edges, sq = _neighbour_graph(X, n_neighbors)
    Q = _reconstruction_matrix(X, indices, landmarks)
    scale = _unit_scale(sq)
    options = {**(_LMVU_CLARABEL if solver == "CLARABEL" else {}), **(solver_options or {})}
    K = _solve_gram_by_rounds(cp, Q, edges, sq / scale, rng=rng, solver=solver,
                              solver_options=options)
    return _embed(Q, K, n_components) * np.sqrt(scale)
