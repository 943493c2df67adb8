"""
Locally Linear Landmarks against exact Laplacian eigenmaps
==========================================================

Laplacian eigenmaps (LE) of N points solve an N x N sparse eigenproblem. Locally
Linear Landmarks (LLL) write every point as an affine combination of a few
nearby landmarks, ``X = Z X~``, and solve the L x L problem of the landmarks
only. Both share one graph here, so the difference is the solver's alone.

The right panel shows how far LLL's embedding is from exact LE (Procrustes
error: the residual after the best rotation, scaling and shift, relative to the
exact embedding) as the number of landmarks grows, and the floor no solver
built on these weights can beat: the best embedding in the span of Z
(:func:`~landmarking.metrics.span_error`).
"""

import matplotlib.pyplot as plt
from sklearn.datasets import make_swiss_roll

from landmarking import LaplacianEigenmaps, LocallyLinearLandmarks
from landmarking.graph import knn_affinity
from landmarking.metrics import procrustes_error, span_error

X, position = make_swiss_roll(3000, noise=0.05, random_state=0)
W = knn_affinity(X, 10, 2.0)
exact = LaplacianEigenmaps(n_components=2).fit(X, affinity=W).embedding_

sizes = [50, 100, 200, 400]
errors, floors, models = [], [], {}
for L in sizes:
    lll = LocallyLinearLandmarks(n_components=2, n_landmarks=L, n_landmark_neighbors=5,
                                 random_state=0).fit(X, affinity=W)
    models[L] = lll
    errors.append(procrustes_error(lll.embedding_, exact))
    floors.append(span_error(lll.weights_, exact))
    print(f"L = {L:4d}: error to exact LE {errors[-1]:.4f}, span floor {floors[-1]:.4f}, "
          f"seconds {sum(lll.timings_.values()):.2f}")

fig, axes = plt.subplots(1, 3, figsize=(13, 4))
axes[0].scatter(exact[:, 0], exact[:, 1], c=position, s=3, cmap="viridis")
axes[0].set_title("exact LE (3,000 points)")
emb = models[200].embedding_
axes[1].scatter(emb[:, 0], emb[:, 1], c=position, s=3, cmap="viridis")
axes[1].set_title("LLL, 200 landmarks")
for ax in axes[:2]:
    ax.set_xticks([])
    ax.set_yticks([])
axes[2].loglog(sizes, errors, "o-", label="LLL to exact LE")
axes[2].loglog(sizes, floors, "k--", label="floor: best in span(Z)")
axes[2].set_xlabel("number of landmarks L")
axes[2].set_ylabel("Procrustes error")
axes[2].legend()
axes[2].set_title("error against L")
fig.tight_layout()
plt.show()
