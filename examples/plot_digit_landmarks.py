"""
Digit landmarks as images
=========================

On scikit-learn's bundled 8x8 digits (1,797 images, pixel values 0-16) the
landmarks are images too. GP landmarks learned in the nonnegative orthant
(``space="nonnegative"``) look like clean, typical digits, one per mode of the
data, and the first ten already cover most classes. k-means centres of the same
number are averages of many digits and look blurred.
"""

import numpy as np
from sklearn.datasets import load_digits

from landmarking import GPLandmarks, KMeansLandmarks
from landmarking.plotting import plot_image_grid

X, y = load_digits(return_X_y=True)
X = X / 16.0

gp = GPLandmarks(n_landmarks=20, space="nonnegative", n_steps=400, random_state=0).fit(X)
km = KMeansLandmarks(n_landmarks=20, random_state=0).fit(X)

# Name each landmark by the label of its nearest digit.
nearest = np.argmin(((X[:, None, :] - gp.landmarks_[None]) ** 2).sum(-1), axis=0)
titles = [f"#{k + 1}: {y[i]}" for k, i in enumerate(nearest)]
print("classes among the first ten GP landmarks:", sorted(set(y[nearest[:10]].tolist())))

plot_image_grid(gp.landmarks_, (8, 8), n_cols=10, titles=titles,
                title="GP landmarks, in order of selection (nearest digit's label)")
plot_image_grid(km.landmarks_, (8, 8), n_cols=10, title="k-means centres")
