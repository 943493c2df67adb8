"""What the Manifold Sculpting experiment scripts share (Figs. 13, 14, 18, 19, IV-C).

- :func:`methods`: the method set, each a factory of a fitted-embedding call:
  ``MS (pca)`` (the paper's start), ``MS (ltsa)`` (the library's default start) and
  scikit-learn's Isomap, LLE, Hessian LLE and LTSA, all with the same k and t, and
  on request ``L-MVU`` (:func:`landmarking.baselines.landmark_mvu`, floor(sqrt(n))
  landmarks, its own k: the paper ran it with fewer neighbours; the ``mvu`` extra);
- :func:`embed_all`: every method on one data set, (seconds, embedding or the
  error message) per method, so that one failing eigensolver does not end a run;
- scores of a 1-D order: :func:`pose_neighbour_recall`,
  :func:`rank_correlation` and :func:`circular_rank_correlation` (a pose known,
  along an open arc or a closed turntable),
  :func:`path_length` and :func:`shortest_path_length` (no label: how smooth the
  order is).

The error against known coordinates is the library's
:func:`landmarking.metrics.affine_normalized_mse` (the paper's measure) and
``_common.intrinsic_error`` (the same residual over the target's spread); nothing
new is defined for it here.
"""

import itertools
import warnings

import numpy as np
from _common import timed
from sklearn.manifold import Isomap, LocallyLinearEmbedding

from landmarking import ManifoldSculpting

#: Method names in the order of every table and figure.
METHODS = ("MS (pca)", "MS (ltsa)", "Isomap", "LLE", "HLLE", "LTSA")
#: The same with L-MVU (the sweeps of Figs. 7, 8, 10 and 12).
WITH_LMVU = METHODS + ("L-MVU",)


class LandmarkMVU:
    """:func:`landmarking.baselines.landmark_mvu` behind ``fit_transform``.

    ``time_limit``: seconds for Clarabel's interior-point loop in each round of
    the constraint generation (the programs' compilation is not counted); past it
    the solve stops and ``fit_transform`` raises RuntimeError, reported as out of
    time.
    """

    def __init__(self, *, n_components, n_neighbors, random_state=0, time_limit=None):
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.random_state = random_state
        self.time_limit = time_limit

    def fit_transform(self, X):
        from landmarking.baselines import landmark_mvu

        options = {} if self.time_limit is None else {"time_limit": float(self.time_limit)}
        return landmark_mvu(X, self.n_components, n_neighbors=self.n_neighbors,
                            random_state=self.random_state, solver_options=options)


def _lle(method, k, t):
    # Dense eigensolvers: ARPACK often fails on HLLE/LTSA's near-singular
    # matrices at these sizes, and dense is the fast one here (as sculpting.py).
    return LocallyLinearEmbedding(n_neighbors=k, n_components=t, method=method,
                                  eigen_solver="dense", random_state=0)


def methods(k, t, *, seed=0, scale_rate=0.99, names=METHODS, lmvu_neighbors=None,
            time_limit=None):
    """{name: zero-argument factory of an object with ``fit_transform``}.

    ``lmvu_neighbors``: L-MVU's k (default ``k``); ``time_limit``: L-MVU's solver
    budget in seconds (see :class:`LandmarkMVU`)."""
    make = {
        "MS (pca)": lambda: ManifoldSculpting(n_components=t, n_neighbors=k,
                                              scale_rate=scale_rate, preprocess="pca",
                                              random_state=seed),
        "MS (ltsa)": lambda: ManifoldSculpting(n_components=t, n_neighbors=k,
                                               preprocess="ltsa", random_state=seed),
        "Isomap": lambda: Isomap(n_neighbors=k, n_components=t),
        "LLE": lambda: _lle("standard", k, t),
        "HLLE": lambda: _lle("hessian", k, t),
        "LTSA": lambda: _lle("ltsa", k, t),
        "L-MVU": lambda: LandmarkMVU(n_components=t, n_neighbors=lmvu_neighbors or k,
                                     random_state=seed, time_limit=time_limit),
    }
    return {name: make[name] for name in names}


def embed_all(X, k, t, *, seed=0, scale_rate=0.99, names=METHODS, **options):
    """{name: (seconds, embedding)} or {name: (None, message)} when a method
    cannot run (Hessian LLE needs k > t (t + 3) / 2), its solver fails or stops
    at its time limit (L-MVU), or its embedding holds inf or NaN.
    Sculpting's SculptingWarning is silenced here: the score says the same.
    ``options``: ``lmvu_neighbors`` and ``time_limit`` of :func:`methods`."""
    out = {}
    for name, make in methods(k, t, seed=seed, scale_rate=scale_rate, names=names,
                              **options).items():
        if name == "HLLE" and k <= t * (t + 3) / 2:
            out[name] = (None, f"needs k > {t * (t + 3) // 2}")
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                secs, Y = timed(make().fit_transform, X)
        except (ValueError, np.linalg.LinAlgError) as exc:
            out[name] = (None, f"failed: {str(exc)[:60]}")
            continue
        except ImportError:
            out[name] = (None, "needs cvxpy (pip install landmarking[mvu])")
            continue
        except RuntimeError as exc:  # L-MVU's solver stopped (its time limit)
            out[name] = (None, f"solver stopped: {str(exc)[:70]}")
            continue
        Y = np.asarray(Y, dtype=float)
        if not np.isfinite(Y).all():
            # Reported, not scored: a score of inf or NaN coordinates means nothing.
            out[name] = (None, f"non-finite embedding ({int((~np.isfinite(Y)).sum())} values)")
            continue
        out[name] = (secs, Y)
    return out


# ----------------------------------------------------------------- scores of a 1-D order

def _ranks(y):
    return np.argsort(np.argsort(np.asarray(y, dtype=float).ravel(), kind="stable"),
                      kind="stable")


def pose_neighbour_recall(y, pose, period=None):
    """Share of the pose neighbours (pose and pose + 1, modulo ``period`` when the
    poses close a circle, both present) that sit next to each other in the 1-D
    order of ``y``. A circle cut once and laid flat keeps all but the one pair at
    the cut: (n - 1) / n for a full turn; an open arc in order keeps all."""
    rank = _ranks(y)
    where = {int(p): i for i, p in enumerate(pose)}

    def following(p):
        return (p + 1) % period if period else p + 1

    pairs = [(where[int(p)], where[following(int(p))]) for p in pose
             if following(int(p)) in where]
    if not pairs:
        return float("nan")
    return float(np.mean([abs(rank[i] - rank[j]) == 1 for i, j in pairs]))


def rank_correlation(y, pose):
    """|Spearman rho| between the order of ``y`` and ``pose`` (either direction)."""
    a, b = _ranks(y).astype(float), _ranks(pose).astype(float)
    a -= a.mean()
    b -= b.mean()
    return float(abs(a @ b) / np.sqrt((a @ a) * (b @ b)))


def circular_rank_correlation(y, pose, period):
    """Largest |Spearman rho| between the order of ``y`` and the pose read from any
    cut of the circle ((pose - c) mod period, every c): 1 when the 1-D axis is the
    turntable cut once and laid flat, in either direction."""
    return max(rank_correlation(y, (np.asarray(pose) - c) % period) for c in range(period))


def path_length(X, order):
    """Mean Euclidean distance between consecutive rows of X in ``order``."""
    Z = X[np.asarray(order)]
    return float(np.linalg.norm(np.diff(Z, axis=0), axis=1).mean())


def random_path_length(X, *, n_orders=2000, seed=0):
    """Mean of :func:`path_length` over random orders."""
    rng = np.random.default_rng(seed)
    return float(np.mean([path_length(X, rng.permutation(len(X))) for _ in range(n_orders)]))


def shortest_path_length(X):
    """:func:`path_length` of the shortest open path through all rows of X (exact,
    Held-Karp over subsets; only for a few rows: 2^n n^2 steps)."""
    n = len(X)
    if n > 14:
        raise ValueError(f"exact shortest path of {n} rows is too slow; pass at most 14.")
    D = np.linalg.norm(X[:, None, :] - X[None, :, :], axis=2)
    full = (1 << n) - 1
    best = np.full((1 << n, n), np.inf)
    for i in range(n):
        best[1 << i, i] = 0.0
    for mask in range(1, 1 << n):
        row = best[mask]
        ends = [i for i in range(n) if mask >> i & 1 and np.isfinite(row[i])]
        for i, j in itertools.product(ends, range(n)):
            if mask >> j & 1:
                continue
            new = mask | 1 << j
            value = row[i] + D[i, j]
            if value < best[new, j]:
                best[new, j] = value
    return float(best[full].min() / (n - 1))
