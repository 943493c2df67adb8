"""
Scaling out with Dask and Zarr
==============================

Data that does not fit in memory can be given as a Zarr array, a memory map or a
Dask array: every pass over the rows then runs one block at a time (on the
workers of a ``dask.distributed`` client when one is active), and GP minibatches
are drawn chunk by chunk. The landmarks depend on the chunks, not on where the
data lives: the same data with the same chunks gives the same landmarks, bit for
bit. ``transform`` of a Dask array is lazy, so the features stream to a Zarr
store without ever being held in memory.

Without the ``scale`` extra (``pip install 'landmarking[scale]'``) the example
prints a note.
"""

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from landmarking import GPLandmarks

X = (load_digits().data / 16.0).astype(np.float32)
try:
    import dask.array as da
    import zarr
except ImportError:
    da = None

if da is None:
    print("Dask or Zarr is not installed: pip install 'landmarking[scale]'.")
    fig, ax = plt.subplots(figsize=(6, 1))
    ax.text(0.5, 0.5, "install landmarking[scale] to run this example", ha="center")
    ax.axis("off")
else:
    folder = Path(tempfile.mkdtemp())
    # The data in a Zarr store, 300 rows per chunk, as a large data set would be.
    store = zarr.create_array(store=str(folder / "digits.zarr"), shape=X.shape,
                              chunks=(300, X.shape[1]), dtype="float32")
    store[:] = X
    X_dask = da.from_zarr(store)

    params = dict(n_landmarks=10, space="nonnegative", n_steps=200, random_state=0)
    on_dask = GPLandmarks(**params).fit(X_dask)
    # In-memory data with the same 300-row chunks gives the same landmarks.
    on_numpy = GPLandmarks(chunk_size=300, **params).fit(X)
    difference = np.abs(on_dask.landmarks_ - on_numpy.landmarks_).max()
    print(f"largest difference between the Dask and NumPy landmarks: {difference}")

    # Lazy features, computed and written block by block.
    on_dask.transform(X_dask).to_zarr(str(folder / "features.zarr"))
    F = zarr.open_array(str(folder / "features.zarr"), mode="r")
    print(f"features on disk: {F.shape}, chunks {F.chunks}")

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    axes[0].imshow(np.hstack([lm.reshape(8, 8) for lm in on_dask.landmarks_]), cmap="gray")
    axes[0].set_title("landmarks learned from a Zarr-backed Dask array")
    axes[0].axis("off")
    axes[1].imshow(F[:60], aspect="auto", cmap="magma")
    axes[1].set_title("features of the first 60 digits, read back")
    axes[1].set_xlabel("landmark")
    fig.tight_layout()
plt.show()
