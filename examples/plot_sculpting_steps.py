"""
Manifold Sculpting, step by step
================================

The Swiss roll with a star-shaped hole from the Manifold Sculpting paper. A
spectral method such as LTSA unrolls it but distorts it: its coordinates are
whitened and bent near the edges and the hole. Manifold Sculpting then restores
every point's distances to its neighbours and the angles between them, a few
hill-climbing passes at a time. Each panel is the embedding after that many
passes, mapped onto the true (u, v) coordinates by the best affine map, each
point coloured by how far it still is from its true place; the title gives the
paper's error measure (mean squared error after that map, over the squared mean
neighbour spacing).

The paper's own start (principal axes, then scaling the third axis away) cannot
unfold this roll: its width is the axis scaled out, and the band ends folded
(see the user guide).
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm
from sklearn.manifold import LocallyLinearEmbedding

from landmarking import ManifoldSculpting
from landmarking.datasets import make_sculpting_swiss_roll
from landmarking.metrics import affine_align, affine_normalized_mse, mean_nearest_neighbor_distance

X, uv = make_sculpting_swiss_roll(1500, hole=True, random_state=0)
start = LocallyLinearEmbedding(n_neighbors=14, n_components=2, method="ltsa",
                               random_state=0).fit_transform(X)

panels = [("LTSA start", start)]
for passes in (1, 5, 20, None):
    ms = ManifoldSculpting(n_neighbors=14, preprocess=start, max_iter=passes,
                           random_state=0).fit(X)
    label = f"after {ms.n_iter_} passes" + (" (converged)" if passes is None else "")
    panels.append((label, ms.embedding_))
errors = ms.error_

# Each point's distance from where it should be, after the best affine map of
# the whole embedding, in units of the mean neighbour spacing of the truth.
spacing = mean_nearest_neighbor_distance(uv)
norm = LogNorm(1e-3, 1)

fig = plt.figure(figsize=(13, 6.5))
ax = fig.add_subplot(2, 4, 1, projection="3d")
ax.scatter(*X.T, c=uv[:, 0], s=2, cmap="viridis")
ax.set_title("the data: a rolled sheet with a star hole")
ax.set_xticks([])
ax.set_yticks([])
ax.set_zticks([])
for i, (label, Y) in enumerate(panels, start=2):
    ax = fig.add_subplot(2, 4, i)
    aligned = affine_align(Y, uv)
    miss = np.linalg.norm(aligned - uv, axis=1) / spacing
    points = ax.scatter(aligned[:, 0], aligned[:, 1], c=np.clip(miss, 1e-3, 1), s=3,
                        cmap="magma_r", norm=norm)
    ax.set_title(f"{label}\nnormalised MSE {affine_normalized_mse(Y, uv):.4f}")
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    print(f"{label:28s} normalised MSE {affine_normalized_mse(Y, uv):.5f}")
ax = fig.add_subplot(2, 4, 7)
ax.scatter(*panels[-1][1].T, c=uv[:, 0], s=3, cmap="viridis")
ax.set_aspect("equal")
ax.set_title("converged embedding itself")
ax.set_xticks([])
ax.set_yticks([])
ax = fig.add_subplot(2, 4, 8)
ax.semilogy(errors)
ax.set_xlabel("pass")
ax.set_title("total relationship error")
fig.colorbar(points, ax=fig.axes[1:6], orientation="horizontal", fraction=0.04, pad=0.04,
             label="distance from the true position (neighbour spacings, after affine alignment)")
plt.show()
