"""
The out-of-sample map
=====================

A fitted :class:`~landmarking.LocallyLinearLandmarks` places a new point with the
weights that reconstruct it from its nearest landmarks, ``x0 = X~ z0``: no new
eigenproblem, and only the landmarks and their embedding are needed. Here LLL is
fitted on 2,000 points of a Swiss roll and 1,000 new points are mapped; they land
where a fit on all 3,000 points puts them (right), up to the embedding's
rotation and scale.
"""

import matplotlib.pyplot as plt
from sklearn.datasets import make_swiss_roll

from landmarking import LocallyLinearLandmarks
from landmarking.metrics import procrustes_align, procrustes_error

X, position = make_swiss_roll(3000, noise=0.05, random_state=1)
X_fit, X_new = X[:2000], X[2000:]
params = dict(n_components=2, n_landmarks=200, n_neighbors=10, bandwidth=2.0,
              random_state=0)

lll = LocallyLinearLandmarks(**params).fit(X_fit)
new = lll.transform(X_new)
full = LocallyLinearLandmarks(**params).fit(X).embedding_[2000:]
print(f"Procrustes error of the mapped points to a fit on all points: "
      f"{procrustes_error(new, full):.3f}")

fig, axes = plt.subplots(1, 2, figsize=(10, 4.3))
axes[0].scatter(*lll.embedding_.T, c="0.8", s=3, label="fitted points")
axes[0].scatter(*new.T, c=position[2000:], s=6, cmap="viridis", label="new points")
axes[0].scatter(*lll.landmark_embedding_.T, c="red", s=8, label="landmarks")
axes[0].legend(loc="best", fontsize=8)
axes[0].set_title("new points through lll.transform")
aligned = procrustes_align(new, full)
axes[1].scatter(*full.T, c="0.6", s=10, label="fit on all points")
axes[1].scatter(*aligned.T, c=position[2000:], s=3, cmap="viridis",
                label="out-of-sample, aligned")
axes[1].legend(loc="best", fontsize=8)
axes[1].set_title("against a fit that saw them")
for ax in axes:
    ax.set_xticks([])
    ax.set_yticks([])
fig.tight_layout()
plt.show()
