"""Locally Linear Landmarks on a PyTorch device (``LocallyLinearLandmarks(device=...)``).

The same three computations as the CPU path (:mod:`~landmarking.lll._cpu`,
:mod:`.out_of_sample`), written with torch so that they run
on a GPU:

- :func:`reconstruction_weights`: each point's K_Z nearest landmarks and its
  affine reconstruction weights Z (the local Gram matrices and their ridged
  solves batched on the device);
- :func:`reduced_problem`: A~ = Z^T L Z and B~ = Z^T D Z by sparse products
  on the device (the graph W is built on the CPU as a scipy matrix and moved to
  the device as a torch sparse tensor);
- :func:`lll_out_of_sample`: the map x_0 = X~ z_0 for new points.

The L x L generalised eigenproblem between the second and the third is small
and stays on the CPU in float64
(:func:`~landmarking.lll._cpu.solve_reduced_problem`). This is the one module of
the LLL package that uses torch; :func:`.backend.lll_backend` picks it.

Everything is computed in float64, as on the CPU path and for its reason:
the Gram trick |y|^2 - 2 y.t + |t|^2 cancels about half of float32's digits,
and the local systems have condition numbers up to 1/reg. The products involved
(N D L for the weights, nnz(W) L for the reduced matrices) are small
next to a GPU's float64 rate. The same formulas in the same order as the NumPy
path give the same Z, A~ and B~ to rounding; ties among equally near landmarks
go to the lower index on both paths.

Rows travel through the seam (:mod:`landmarking._blocks`): each block of rows
is read on the host (from memory, a memory map, Zarr or Dask), moved to the
device, and only K_Z indices and weights (or the d coordinates) per row come
back, as NumPy arrays. Blocks are as large as scikit-learn's ``working_memory``
allows (1 GiB by default; ``sklearn.config_context(working_memory=...)``
changes it), or ``chunk_size`` rows when given; running out of device memory
raises a ``MemoryError`` that says to lower them.

torch is imported when a function here runs, never when the module loads.
"""

import warnings

import numpy as np
from scipy import sparse
from sklearn import get_config
from sklearn.utils.extmath import row_norms

from .._blocks import (
    block_bounds,
    map_row_blocks,
    reduce_row_blocks,
    rows_per_block,
    working_dtype,
)
from .._progress import progress_bar
from .._torch import device_memory, import_torch, to_numpy
from .._validation import check_positive_int
from ..graph import degree
from ..local_weights import MIN_REG
from . import _cpu
from .out_of_sample import check_landmark_embedding

__all__ = ["reconstruction_weights", "reduced_problem", "lll_out_of_sample"]


# --------------------------------------------------------------------------- device memory

def _device_memory(device, what, rows, function, unit="rows"):
    """The device running out of memory, re-raised (by :func:`landmarking._torch.device_memory`)
    as a MemoryError that names LLL's knobs: the block size and ``working_memory``."""
    budget = get_config()["working_memory"]
    return device_memory(device, message=(
        f"{device} ran out of memory computing {what} in blocks of {rows:,} {unit}. "
        f"Lower the block size: pass a smaller chunk_size to {function}, or lower "
        f"scikit-learn's working_memory (now {budget} MiB), which sizes the blocks "
        f"of LocallyLinearLandmarks(device=...): e.g. "
        f"`with sklearn.config_context(working_memory={max(1, budget // 4)}): "
        f"est.fit(X)`."))


# --------------------------------------------------------------------------- weights Z

class _DeviceLocalMap:
    """The landmarks, their Gram matrix and squared norms on the device.

    Built once per call; ``chunk_rows`` is the rows per pass on the device.
    """

    def __init__(self, landmarks, n_landmark_neighbors, reg, n_features, device,
                 chunk_size, n_out=0):
        torch = import_torch(device)
        landmarks, k, reg = _cpu._check_local_map_args(landmarks, n_landmark_neighbors, reg,
                                                      n_features)
        n_land = landmarks.shape[0]
        if chunk_size is not None:
            chunk_size = check_positive_int(chunk_size, "chunk_size")
        self.device, self.k, self.reg = device, k, reg
        self.landmarks = torch.as_tensor(landmarks, device=device)
        self.use_gram = n_land <= _cpu.GRAM_LIMIT
        if self.use_gram:
            self.gram = self.landmarks @ self.landmarks.T
            self.t_sq = torch.diagonal(self.gram).clone()
            per_row = n_features + 3 * n_land + 4 * k * k + k * n_out
        else:
            self.gram = None
            self.t_sq = (self.landmarks * self.landmarks).sum(dim=1)
            per_row = n_features + 3 * n_land + (k + 1) * n_features + 4 * k * k + k * n_out
        # float64 values, plus the int64 indices of the same size.
        rows = rows_per_block(8 * per_row)
        self.chunk_rows = rows if chunk_size is None else min(rows, chunk_size)


def reconstruction_weights(X, landmarks, n_landmark_neighbors, *, device, reg=1e-3,
                           chunk_size=None, verbose=False):
    """:func:`landmarking.lll._cpu.reconstruction_weights` on a torch device.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        NumPy array, scipy CSR matrix, memory map, Zarr or Dask array; read one
        block of rows at a time, each block moved to ``device``.
    landmarks : ndarray of shape (n_landmarks, n_features)
    n_landmark_neighbors : int
        K_Z, at most n_landmarks.
    device : torch.device
    reg : float
        Relative ridge, >= 0.
    chunk_size : int or None
        Rows per block on the device, at most; None: as many as scikit-learn's
        ``working_memory`` allows. Lower it when the device runs out of memory.
    verbose : bool
        Show a progress bar over the blocks.

    Returns
    -------
    Z : scipy.sparse.csr_matrix of shape (n_samples, n_landmarks)
        K_Z nonzeros per row, rows summing to one (float64).
    """
    if not hasattr(X, "shape"):
        X = np.asarray(X)
    n, n_land = X.shape[0], np.shape(landmarks)[0]
    local = _DeviceLocalMap(landmarks, n_landmark_neighbors, reg, X.shape[1], device,
                            chunk_size)
    bounds = block_bounds(X, local.chunk_rows)
    groups = ([bounds[i:i + 2] for i in range(len(bounds) - 1)] if verbose
              else [bounds])
    parts = []
    with _device_memory(device, "the LLL weights Z", local.chunk_rows,
                        "reconstruction_weights"):
        for group in progress_bar(groups, disable=not verbose, desc="LLL weights Z", leave=False):
            parts += reduce_row_blocks(_weights_of_block, X, local, bounds=group)
    return _cpu._weights_matrix(parts, n, local.k, n_land)


def _weights_of_block(block, local):
    """(indices, weights) as NumPy arrays, each (n_b, K_Z), computed on the device."""
    indices, weights = [], []
    for start in range(0, block.shape[0], local.chunk_rows):
        idx, w = _local_weights(block[start:start + local.chunk_rows], local)
        indices.append(to_numpy(idx))
        weights.append(to_numpy(w))
    if not indices:
        return np.empty((0, local.k), np.int64), np.empty((0, local.k))
    return np.concatenate(indices), np.concatenate(weights)


def _rows_on_device(rows, device):
    """A host block (dense or CSR) as float64 on the device, and its squared norms."""
    torch = import_torch(device)
    if sparse.issparse(rows):
        rows = sparse.coo_matrix(rows, dtype=np.float64)
        x_sq = torch.as_tensor(row_norms(rows.tocsr(), squared=True), device=device)
        return _sparse_on_device(rows, device), x_sq
    # In the block's dtype over the bus (float32 stays half the bytes), float64 there;
    # a read-only block (a memory map's rows) is copied, as torch wants it writable.
    Y = torch.as_tensor(np.require(rows, requirements=["C", "W"]), device=device)
    Y = Y.to(torch.float64)
    return Y, (Y * Y).sum(dim=1)


def _sparse_on_device(M, device):
    """A scipy matrix as a torch sparse COO tensor on the device (duplicates are summed)."""
    torch = import_torch(device)
    M = sparse.coo_matrix(M)
    indices = torch.as_tensor(np.vstack([M.row, M.col]).astype(np.int64))
    # scipy's indices are valid, so torch's invariant checks are skipped; said for
    # the copy to the device too, where torch 2.11 warns ("implicitly disabled") on
    # every call otherwise (seen on an H100).
    with torch.sparse.check_sparse_tensor_invariants(enable=False):
        return torch.sparse_coo_tensor(indices, torch.as_tensor(M.data), M.shape,
                                       check_invariants=False).to(device)


def _local_weights(rows, local):
    """Nearest landmarks and affine weights of a pass of rows, as device tensors."""
    Y, x_sq = _rows_on_device(rows, local.device)
    cross = Y @ local.landmarks.T
    # Rounded as the CPU path's -2 * cross + x_sq + t_sq.
    d2 = -2.0 * cross + x_sq[:, None] + local.t_sq[None, :]
    idx = _nearest_landmarks(d2, local.k)
    if local.use_gram:
        c = cross.gather(1, idx)
        G = (x_sq[:, None, None] - c[:, :, None] - c[:, None, :]
             + local.gram[idx[:, :, None], idx[:, None, :]])
    else:
        Y = Y.to_dense() if Y.is_sparse else Y
        diff = Y[:, None, :] - local.landmarks[idx]
        G = diff @ diff.transpose(1, 2)
    return idx, _solve_local(G, local.reg)


def _nearest_landmarks(d2, k):
    """The k nearest landmarks of each row, nearest first, ties to the lower index."""
    torch = import_torch()
    vals, idx = torch.topk(d2, k, dim=1, largest=False, sorted=True)
    # topk orders equal distances as it likes: rows with a tie among the k or at
    # the k-th distance (rare outside duplicated points) are sorted again stably.
    tied = (vals[:, 1:] == vals[:, :-1]).any(dim=1) | ((d2 <= vals[:, -1:]).sum(dim=1) > k)
    tied = torch.nonzero(tied)[:, 0]
    if tied.numel():
        idx[tied] = torch.sort(d2[tied], dim=1, stable=True).indices[:, :k]
    return idx


def _solve_local(G, reg):
    """Affine weights from stacked local Gram matrices G (n, k, k), as on the CPU path."""
    torch = import_torch()
    k = G.shape[1]
    trace = torch.diagonal(G, dim1=1, dim2=2).sum(dim=1)
    # reg = 0 still gets the vanishing ridge of local_weights.local_affine_weights.
    rel = max(reg, MIN_REG)
    ridge = torch.where(trace > 0, rel * trace, torch.full_like(trace, rel))
    G = G + ridge[:, None, None] * torch.eye(k, dtype=G.dtype, device=G.device)
    ones = torch.ones((G.shape[0], k, 1), dtype=G.dtype, device=G.device)
    if reg >= _cpu.CHOLESKY_MIN_REG:
        # Condition number below about 1/reg: Cholesky (half LU's work) agrees with
        # LU to rounding, as on the CPU path; LU for the systems it rejects.
        factor, info = torch.linalg.cholesky_ex(G)
        w = torch.cholesky_solve(ones, factor)
        redo = torch.nonzero(info)[:, 0]
        if redo.numel():
            w[redo], info_redo = torch.linalg.solve_ex(G[redo], ones[redo])
            info = torch.zeros_like(info)
            info[redo] = info_redo
    else:
        w, info = torch.linalg.solve_ex(G, ones)
    w = w[:, :, 0]
    failed = torch.nonzero(info)[:, 0]
    if failed.numel():
        # A singular system (reg=0 with degenerate landmarks): the minimum-norm
        # least-squares solution, as NumPy's lstsq gives.
        w[failed] = (torch.linalg.pinv(G[failed]) @ ones[failed])[:, :, 0]
    total = w.sum(dim=1, keepdim=True)
    bad = ~torch.isfinite(total) | (total.abs() < 1e-300)
    # No usable system: the plain average of the neighbours (torch.where: no host sync).
    w = torch.where(bad, torch.ones_like(w), w)
    return w / torch.where(bad, torch.full_like(total, k), total)


# --------------------------------------------------------------------------- reduced problem

def reduced_problem(W, Z, *, device, chunk_size=None):
    """:func:`landmarking.lll._cpu.reduced_problem` on a torch device.

    W (symmetric, scipy sparse, built on the CPU) and Z go to the device as
    torch sparse tensors. For L <= 5,000 the dense L x L results are filled a
    block of ``chunk_size`` columns at a time (None: as many as scikit-learn's
    ``working_memory`` allows for two dense N x block matrices): with Z_c the
    block's columns of Z as a dense matrix, B~_c = Z^T (D Z_c) and
    A~_c = B~_c - Z^T (W Z_c), two sparse-dense products each (cuSPARSE on a
    GPU), so the cost is nnz(W) L whatever K_Z. Above 5,000 landmarks the results
    are sparse, from sparse-sparse products as on the CPU path.

    Returns
    -------
    A, B : ndarrays of shape (L, L) when L <= 5,000, else scipy CSR matrices
        Symmetric, as the CPU path returns them.
    """
    torch = import_torch(device)
    deg = degree(W)
    n, n_land = Z.shape
    Z = sparse.csr_matrix(Z, dtype=np.float64)
    dense = n_land <= _cpu.DENSE_LIMIT
    if chunk_size is None:
        chunk_size = rows_per_block(8 * 2 * max(1, n))
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    what = "the reduced matrices A~, B~"
    if not dense:
        with _device_memory(device, what, n_land, "reduced_problem", "columns"), \
                warnings.catch_warnings():
            # torch.sparse.mm of two COO tensors goes through CSR, which warns that
            # CSR support is in beta; the product itself is long supported.
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support")
            Zs = _sparse_on_device(Z, device)
            B = _to_scipy(torch.sparse.mm(Zs.t(), _sparse_on_device(Z.multiply(
                deg[:, None]), device)))
            C = _to_scipy(torch.sparse.mm(Zs.t(), torch.sparse.mm(
                _sparse_on_device(W, device), Zs)))
        A = B - C
        return (0.5 * (A + A.T)).tocsr(), (0.5 * (B + B.T)).tocsr()
    A = np.empty((n_land, n_land))
    B = np.empty((n_land, n_land))
    with _device_memory(device, what, chunk_size, "reduced_problem", "columns"):
        graph = _sparse_on_device(W, device)
        Zt = _sparse_on_device(Z.T, device).coalesce()  # sorted once, not per product
        deg = torch.as_tensor(deg, device=device)[:, None]
        for start in range(0, n_land, chunk_size):
            cols = slice(start, min(n_land, start + chunk_size))
            Zc = _sparse_on_device(Z[:, cols], device).to_dense()
            Bc = torch.sparse.mm(Zt, deg * Zc)
            B[:, cols] = to_numpy(Bc)
            A[:, cols] = to_numpy(Bc - torch.sparse.mm(Zt, torch.sparse.mm(graph, Zc)))
    return 0.5 * (A + A.T), 0.5 * (B + B.T)


def _to_scipy(t):
    """A torch sparse COO tensor (any device) as a scipy CSR matrix."""
    t = t.coalesce()
    rows, cols = to_numpy(t.indices())
    return sparse.csr_matrix((to_numpy(t.values()), (rows, cols)), shape=tuple(t.shape))


# --------------------------------------------------------------------------- out of sample

def lll_out_of_sample(Y_new, landmarks, landmark_embedding, n_landmark_neighbors, reg=1e-3,
                      *, device, chunk_size=None):
    """:func:`landmarking.lll.out_of_sample.lll_out_of_sample` on a torch device.

    Y_new must be validated (``_blocks.check_rows``). Each block of rows goes to
    the device, the coordinates come back; ``chunk_size`` as in
    :func:`reconstruction_weights`.

    Returns
    -------
    ndarray of shape (n_new, n_components)
        float32 for float32 input, else float64 (the map itself is computed in
        float64); a lazy Dask array for Dask input.
    """
    torch = import_torch(device)
    landmarks, landmark_embedding = check_landmark_embedding(landmarks, landmark_embedding)
    n_out = landmark_embedding.shape[1]
    local = _DeviceLocalMap(landmarks, n_landmark_neighbors, reg, Y_new.shape[1], device,
                            chunk_size, n_out=n_out)
    with _device_memory(device, "the out-of-sample map", local.chunk_rows,
                        "lll_out_of_sample"):
        embedding = torch.as_tensor(landmark_embedding, device=device)
        return map_row_blocks(_embed_block, Y_new, local, embedding, n_out=n_out,
                              dtype=working_dtype(Y_new), block_rows=local.chunk_rows)


def _embed_block(block, local, landmark_embedding):
    """x_0 = X~ z_0 for every row of a block, on the device; NumPy out."""
    torch = import_torch()
    parts = []
    for start in range(0, block.shape[0], local.chunk_rows):
        idx, w = _local_weights(block[start:start + local.chunk_rows], local)
        parts.append(to_numpy(torch.einsum("nk,nkd->nd", w, landmark_embedding[idx])))
    if not parts:
        return np.empty((0, landmark_embedding.shape[1]))
    return np.concatenate(parts)
