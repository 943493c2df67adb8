"""
Manifold Sculpting, step by step
================================

The Swiss roll with a star-shaped hole from the Manifold Sculpting paper. A
spectral method such as LTSA unrolls it but distorts it: its coordinates are
whitened and bent near the edges and the hole. Manifold Sculpting then restores
every point's distances to its neighbours and the angles between them, a few
hill-climbing passes at a time. Each panel is the embedding after that many
passes, aligned to the true (u, v) coordinates, with the paper's error measure
(mean squared error after the best affine map, over the squared mean
neighbour spacing).

The paper's own start (principal axes, then scaling the third axis away) cannot
unfold this roll: its width is the axis scaled out, and the band ends folded
(see the user guide).
"""

import matplotlib.pyplot as plt
from sklearn.manifold import LocallyLinearEmbedding

from landmarking import ManifoldSculpting
from landmarking.datasets import make_sculpting_swiss_roll
from landmarking.metrics import affine_align, affine_normalized_mse

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

fig, axes = plt.subplots(2, 3, figsize=(12, 7))
for ax, (label, Y) in zip(axes.ravel(), panels):
    err = affine_normalized_mse(Y, uv)
    aligned = affine_align(Y, uv)
    ax.scatter(aligned[:, 0], aligned[:, 1], c=uv[:, 0], s=3, cmap="viridis")
    ax.set_title(f"{label}\nnormalised MSE {err:.4f}")
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    print(f"{label:28s} normalised MSE {err:.5f}")
ax = axes.ravel()[-1]
ax.semilogy(errors)
ax.set_xlabel("pass")
ax.set_ylabel("total relationship error")
ax.set_title("error_ of the converged run")
fig.tight_layout()
plt.show()
