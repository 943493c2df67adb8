"""
Landmarks as features for a classifier
======================================

Landmarks turn any data into features: a point's Gaussian kernel value to each
landmark, ``exp(-||x - t_k||^2 / kernel_width_)``, is one column. A linear
classifier on those columns is a kernel machine with the landmarks as its basis.
This example compares GP landmarks with k-means centres and random data points
on the bundled 8x8 digits, with the GP paper's protocol: L2 logistic regression,
lambda chosen on a validation set, accuracy on a held-out test set. All three
use one kernel width, so only the landmarks differ.

GP landmarks are sequential: :meth:`~landmarking.GPLandmarks.extend` adds more
without changing the first ones, so the curve costs one run.
"""

import matplotlib.pyplot as plt
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from landmarking import GPLandmarks, KMeansLandmarks, RandomLandmarks
from landmarking.evaluation import select_by_validation

X, y = load_digits(return_X_y=True)
X = X / 16.0
X_train, X_rest, y_train, y_rest = train_test_split(X, y, train_size=0.5, random_state=0,
                                                    stratify=y)
X_val, X_test, y_val, y_test = train_test_split(X_rest, y_rest, train_size=0.4,
                                                random_state=0, stratify=y_rest)
sizes = [5, 10, 20, 40]
lambdas = [1e-2, 1e-1, 1.0]  # part of the paper's 1e-3 ... 1e3, kept short for speed


def accuracy(model):
    """Test accuracy of logistic regression on the model's landmark features."""
    res = select_by_validation(model.transform(X_train), y_train, model.transform(X_val),
                               y_val, model.transform(X_test), y_test, lambdas=lambdas,
                               max_iter=300)
    return res.test_accuracy


gp = GPLandmarks(n_landmarks=sizes[0], space="nonnegative", n_steps=200, random_state=0)
gp.fit(X_train)
width = gp.kernel_width_
scores = {"GP landmarks": [], "k-means centres": [], "random points": []}
for i, n in enumerate(sizes):
    if i:
        gp.extend(X_train, n - sizes[i - 1])
    scores["GP landmarks"].append(accuracy(gp))
    km = KMeansLandmarks(n_landmarks=n, kernel_width=width, random_state=0).fit(X_train)
    scores["k-means centres"].append(accuracy(km))
    rnd = RandomLandmarks(n_landmarks=n, kernel_width=width, random_state=0).fit(X_train)
    scores["random points"].append(accuracy(rnd))

print("landmarks " + " ".join(f"{n:>6d}" for n in sizes))
for name, acc in scores.items():
    print(f"{name:16s}" + " ".join(f"{a:6.3f}" for a in acc))

fig, ax = plt.subplots(figsize=(6, 4))
for (name, acc), marker in zip(scores.items(), "osD", strict=True):
    ax.plot(sizes, acc, marker=marker, label=name)
ax.set_xscale("log")
ax.set_xticks(sizes, [str(n) for n in sizes])
ax.set_xlabel("number of landmarks")
ax.set_ylabel("test accuracy")
ax.set_title("Logistic regression on landmark features (8x8 digits)")
ax.legend()
fig.tight_layout()
plt.show()
