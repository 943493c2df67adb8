"""
Landmarks on a Swiss roll
=========================

GP landmarks are learned one at a time: each one goes where the Gaussian process
given the landmarks before it is least certain, so the first landmarks spread
over the whole sheet and later ones fill the gaps. The numbers give the order of
selection. Coloured by the position along the roll.
"""

import matplotlib.pyplot as plt

from landmarking import GPLandmarks, RandomLandmarks
from landmarking.datasets import make_noisy_swiss_roll

X, position = make_noisy_swiss_roll(3000, noise=0.1, random_state=0)

gp = GPLandmarks(n_landmarks=30, n_steps=300, random_state=0).fit(X)
rand = RandomLandmarks(n_landmarks=30, random_state=0).fit(X)

fig = plt.figure(figsize=(11, 5))
for i, (name, lm) in enumerate([("GP landmarks", gp.landmarks_),
                                 ("random data points", rand.landmarks_)]):
    ax = fig.add_subplot(1, 2, i + 1, projection="3d")
    ax.scatter(X[:, 0], X[:, 1], X[:, 2], c=position, s=2, cmap="viridis", alpha=0.3)
    ax.scatter(lm[:, 0], lm[:, 1], lm[:, 2], c="red", s=35, edgecolors="black",
               depthshade=False)
    for k, (a, b, c) in enumerate(lm[:12], start=1):
        ax.text(a, b, c, str(k), color="darkred", fontsize=8)
    ax.view_init(elev=12, azim=-70)
    ax.set_title(f"{name} (first 12 numbered)")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_zticks([])

print(f"kernel width chosen by 'auto': {gp.kernel_width_:.3g}")
print(f"seconds per landmark: {gp.landmark_seconds_.mean():.3f}")
fig.tight_layout()
plt.show()
