"""
GP landmarks on two circles
===========================

Two concentric circles are a one-dimensional manifold in the plane. A good set
of landmarks sits *on* the circles and spreads along them. Here GP manifold
landmarks (with the default ``kernel_width="auto"``) are drawn next to the
paper's ``kernel_width="variance"`` rule, which is too wide for such data and
puts landmarks between the circles, and next to k-means centres, which are
means of points and so fall inside the curves.
"""

import matplotlib.pyplot as plt

from landmarking import GPLandmarks, KMeansLandmarks
from landmarking.datasets import make_concentric_circles
from landmarking.evaluation import landmark_geometry

X, circle = make_concentric_circles(2000, random_state=0)

models = {
    'GP, kernel_width="auto"': GPLandmarks(n_landmarks=16, n_steps=300, random_state=0),
    'GP, kernel_width="variance"': GPLandmarks(n_landmarks=16, n_steps=300,
                                               kernel_width="variance", random_state=0),
    "k-means centres": KMeansLandmarks(n_landmarks=16, random_state=0),
}

# Titles at a size that fits a third of the figure's width, laid out inside it.
fig, axes = plt.subplots(1, 3, figsize=(12, 4.6), layout="constrained")
for ax, (name, model) in zip(axes, models.items(), strict=True):
    landmarks = model.fit(X).landmarks_
    geo = landmark_geometry(X, landmarks, random_state=0)
    ax.scatter(X[:, 0], X[:, 1], s=2, c=circle, cmap="Paired", alpha=0.5)
    ax.scatter(landmarks[:, 0], landmarks[:, 1], s=40, c="red", edgecolors="black")
    ax.set_title(f"{name}\nfarthest landmark "
                 f"{geo['to_data_relative'].max():.1f} spacings off the data", fontsize=10)
    # The box keeps its place in the layout and the limits give way, so the titles
    # stay inside the figure.
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xticks([])
    ax.set_yticks([])
    print(f"{name:28s} landmark -> nearest point, in units of the median "
          f"nearest-neighbour spacing: max {geo['to_data_relative'].max():.2f}")
plt.show()
