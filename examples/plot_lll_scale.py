"""
Locally Linear Landmarks on more points than one graph can hold
================================================================

The k-NN graph behind Laplacian eigenmaps needs every point at once, so
``LocallyLinearLandmarks.fit`` gathers its input into memory. The route at scale
is to fit on a random sample of M points (for a large M, with the graph from
the approximate search), then place all N points with LLL's own out-of-sample map
x = X~ z(y): each point's weights z(y) come from its nearest landmarks alone, so
``transform`` works one block of rows at a time. On a Dask array it returns a
lazy Dask array, and ``.to_zarr(...)`` streams the embedding to disk block by
block (on a ``dask.distributed`` cluster, the workers do the blocks).

Here N = 200,000 points of a Swiss roll, stored as a Zarr array, a sample of
M = 5,000 for the fit, and the embedding of all N written to a second Zarr store.
"""

import tempfile
import time
from pathlib import Path

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
import zarr
from sklearn.datasets import make_swiss_roll

from landmarking import LocallyLinearLandmarks

N, M = 200_000, 5_000
folder = Path(tempfile.mkdtemp())

# %%
# The data on disk: a Zarr array in chunks of 20,000 rows. (Real data would already
# be there; ``da.from_zarr``, ``da.from_array(np.load(path, mmap_mode="r"))`` or
# any Dask array will do.)
X, t = make_swiss_roll(N, random_state=0)
store = zarr.open_array(str(folder / "roll.zarr"), mode="w", shape=X.shape,
                        chunks=(20_000, 3), dtype="float64")
store[:] = X
big = da.from_zarr(store)

# %%
# Fit on a sample of M rows: only these are in memory, with their graph. For a
# sample of hundreds of thousands of rows ``neighbors_method="auto"`` (the
# default) takes the approximate search (usearch, the ``ann`` extra); this small
# example asks for the exact one.
rng = np.random.default_rng(0)
sample = np.sort(rng.choice(N, M, replace=False))
start = time.perf_counter()
lll = LocallyLinearLandmarks(n_components=2, n_landmarks=300, n_neighbors=10,
                             neighbors_method="exact", random_state=0)
lll.fit(big[sample].compute())
print(f"fit on {M} points: {time.perf_counter() - start:.1f} s")

# %%
# Map all N rows block by block into a Zarr store: nothing of size N is held in
# memory at once.
start = time.perf_counter()
lll.transform(big).to_zarr(str(folder / "embedding.zarr"))
print(f"transform of {N} points to Zarr: {time.perf_counter() - start:.1f} s")
embedding = zarr.open_array(str(folder / "embedding.zarr"), mode="r")

# %%
# The out-of-sample map reproduces the fitted embedding on the sample, and the
# whole roll comes out unrolled (colour: position along the roll).
print("largest gap on the sample:",
      float(np.abs(embedding[sample] - lll.embedding_).max()))
show = rng.choice(N, 20_000, replace=False)
fig, ax = plt.subplots(figsize=(5, 4))
ax.scatter(embedding[np.sort(show), 0], embedding[np.sort(show), 1], c=t[np.sort(show)],
           s=1, cmap="viridis")
ax.set_title(f"LLL fitted on {M} points, {N} placed through Dask")
plt.show()
