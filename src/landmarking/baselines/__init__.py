"""Baseline landmark methods behind the ``GPLandmarks`` interface.

Every estimator here learns ``landmarks_`` (n_landmarks x n_features, in the order
the method gives) and, except :class:`~landmarking.NMFLandmarks`, a kernel width
``kernel_width_`` resolved from ``kernel_width`` exactly as ``GPLandmarks`` does,
so that ``transform`` yields the same Gaussian landmark features
exp(-||x - t_k||^2 / kernel_width_) and methods compare like for like.

One module per method:

- :mod:`.random`: :class:`~landmarking.RandomLandmarks`, random data points (the paper's "Rand").
- :mod:`.active_learning`: :class:`~landmarking.ActiveLearningLandmarks`, GP active learning,
  eq. 3 of Liang & Paisley (2015), as greedy pivoted Cholesky on a random
  subsample (the paper's "Act5K").
- :mod:`.rp_cholesky`: :class:`~landmarking.RPCholeskyLandmarks`, randomly pivoted Cholesky
  (not in the paper; a strong modern choice of Nystroem centres).
- :mod:`.kmeans`: :class:`~landmarking.KMeansLandmarks`, k-means++ then Lloyd centroids
  (scikit-learn).
- :mod:`.nmf`: :class:`~landmarking.NMFLandmarks`, NMF components under the Kullback-Leibler
  loss, with the factorisation weights as features (:func:`kl_nmf_weights`).
- :mod:`.mvu`: :func:`maximum_variance_unfolding` and :func:`landmark_mvu`
  (L-MVU), the Manifold Sculpting paper's semidefinite baselines (an embedding, not
  Gaussian features); they need cvxpy, the ``mvu`` extra, imported only when called.
- :mod:`._common`: the fit shared by the methods whose landmarks are data points.

Every ``fit`` and ``transform`` accepts NumPy arrays, scipy CSR matrices, memory
maps, Zarr and Dask arrays (landmarks are always dense). Random landmarks and
the features read the data one block at a time; the pivoted-Cholesky methods
hold their candidate rows in memory (all rows when ``subsample=None``), and
k-means and NMF hold all rows: those refuse a larger-than-memory input with a
``MemoryError`` that names the alternative.

The estimators are imported from ``landmarking`` (``from landmarking import
KMeansLandmarks``), each name from one place; this package offers the tools that are
its own, :func:`kl_nmf_weights` and the two MVU functions, resolved on first use
(PEP 562), so importing this package imports none of its modules.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Public name -> module (relative to this package) that defines it.
_EXPORTS = {
    "kl_nmf_weights": ".nmf",
    "maximum_variance_unfolding": ".mvu",
    "landmark_mvu": ".mvu",
}

__all__ = list(_EXPORTS)

# Static tools read these ordinary imports; at run time __getattr__ loads the names.
if TYPE_CHECKING:
    from .mvu import landmark_mvu, maximum_variance_unfolding  # noqa: F401
    from .nmf import kl_nmf_weights  # noqa: F401

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
