"""
Scaling out with Dask
=====================

Data that does not fit in memory can be given as a Dask array: the passes over
all points (kernel values of finished landmarks, the landmark features) then run
block by block. This example learns GP landmarks from a chunked Dask array and
checks them against the same fit on the NumPy array.

When Dask is not installed, or this version of ``landmarking`` does not accept
Dask arrays yet, the example prints why and draws a note instead.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from landmarking import GPLandmarks


def note(text):
    print(text)
    fig, ax = plt.subplots(figsize=(6, 1))
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    ax.axis("off")


X = load_digits().data / 16.0
try:
    import dask.array as da
except ImportError:
    da = None

if da is None:
    note("Dask is not installed: pip install 'landmarking[dask]'.")
else:
    X_dask = da.from_array(X, chunks=(300, X.shape[1]))
    params = dict(n_landmarks=10, space="nonnegative", n_steps=200, random_state=0)
    try:
        on_dask = GPLandmarks(**params).fit(X_dask)
    except Exception as exc:  # this version has no Dask support yet
        note(f"GPLandmarks.fit does not accept a Dask array in this version "
             f"({type(exc).__name__}).")
    else:
        on_numpy = GPLandmarks(**params).fit(X)
        diff = np.abs(np.asarray(on_dask.landmarks_) - on_numpy.landmarks_).max()
        print(f"largest difference between the Dask and NumPy landmarks: {diff:.2e}")
        F = np.asarray(on_dask.transform(X_dask))
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
        axes[0].imshow(np.hstack([lm.reshape(8, 8) for lm in on_dask.landmarks_]),
                       cmap="gray")
        axes[0].set_title("landmarks learned from a Dask array")
        axes[0].axis("off")
        axes[1].imshow(F[:60], aspect="auto", cmap="magma")
        axes[1].set_title("features of the first 60 digits")
        axes[1].set_xlabel("landmark")
        fig.tight_layout()
plt.show()
