"""GP landmarks on a torch device: the steps of :mod:`.gp` with the batch on the device.

``GPLandmarks(device=...)`` runs :func:`learn_gp_landmarks_torch`, the torch
counterpart of :func:`landmarking.landmarks.gp.learn_gp_landmarks` (whose module
docstring defines the symbols). Everything random comes from the NumPy generators
the NumPy path uses: the batch layout of :class:`._gp_batches._Chunks` (a
permutation of each chunk's rows drawn from ``(seed, c)``), each landmark's start
and its order of batches from ``(seed, k)``. On ``torch.device("cpu")`` the
landmarks therefore equal the NumPy path's to rounding (1e-4 relative,
``tests/test_gpu.py``).

What lives on the device
------------------------
- X (dense; sparse input as a COO tensor densified one batch at a time), its
  squared row norms and the kernel table Phi (n_samples x n_landmarks, X's dtype),
  for the whole fit. A finished landmark's column of Phi is one matrix-vector
  product over all rows.
- Each batch's Cholesky factor L of ``Phi_B^T Phi_B + ridge I``, kept as its
  inverse in one tensor (n_batches x K x K, float64) that is the identity beyond
  the landmarks so far. When a landmark is finished every batch's factor grows by
  one row at once (batched products, the formula of ``_CholeskyFactor.append``),
  and so does its inverse; a step then solves with two matrix-vector products
  instead of two triangular solves, which a GPU runs one row at a time.

A step
------
A step reads its batch, its step size and its factor through indices held on the
device (the batch order of the landmark and a step counter) and writes the new
landmark in place. Its shapes never change: batches are padded to the largest
with a sentinel row (squared norm +inf, so kernel value 0), Phi and the factors
have K columns (zero columns and an identity block project nothing out). No value comes back to the
host inside a step: the clipping of the move, the "no move when f is tiny" rule
and the stopping rule of ``n_steps="auto"`` are tensors. The host reads one flag
per ``AUTO_WINDOW`` steps with ``n_steps="auto"``, and the landmark when it is done.

Because nothing in a step depends on the host, a block of ``AUTO_WINDOW`` steps is
captured once per fit as a CUDA graph on a CUDA device and replayed: one launch
per 50 steps instead of about 30 per step. On the CPU (and for sparse input, or
if capture fails) the same step function runs eagerly.

On the CPU the step loop runs torch on one thread (restored when the loop ends),
as the NumPy path limits BLAS: a step is too small to gain from threads, and
torch's threads lose badly when the cores are busy (seven times slower measured
on 2 shared cores).

Precision follows the compiled NumPy step (:mod:`._gp_kernels`): the products
with the batch in X's dtype, the distances, kernel values, solve and weights in
float64.
"""

import logging
import time
from contextlib import contextmanager

import numpy as np
from scipy import sparse
from tqdm.auto import tqdm

from .._blocks import chunk_bounds, row_blocks, working_dtype
from .._torch import device_memory, import_torch, to_tensor
from .._torch_kernels import squared_distances_torch
from ..kernels import column_mean_std
from ._gp_batches import RIDGE, _Chunks, _row_norms
from .gp import (
    AUTO_MAX_STEPS,
    AUTO_MIN_STEPS,
    AUTO_TOL,
    AUTO_WINDOW,
    MAX_STEP_WIDTHS,
    _batch_order,
    _initial_point,
    _landmark_table,
    _objectives,
    step_size,
)

__all__ = ["learn_gp_landmarks_torch"]

log = logging.getLogger(__name__)

#: Bytes of float64 temporaries per block of a pass over all rows or all batches
#: on the device (the Gram pass, the factor growth).
PASS_BYTES = 256 * 2**20


class _DeviceFit:
    """The tensors of a fit on the device and the step that reads them.

    Everything a step reads is allocated here once, at its final size, so that a
    CUDA graph captured from :meth:`block` stays valid for the whole fit: the
    per-landmark inputs (start, batch order) are copied into these tensors.
    """

    def __init__(self, torch, device, X, layout, n_landmarks, eta, space, max_steps,
                 s0, tau, auto):
        self.torch, self.device = torch, device
        self.dtype = getattr(torch, working_dtype(X).name)
        self.eta, self.space, self.auto = float(eta), space, auto
        self.max_step = MAX_STEP_WIDTHS * np.sqrt(eta)
        self.n_samples, self.n_features = X.shape
        self.sparse = sparse.issparse(X)
        self._upload(X)
        self._layout(layout)
        f64 = dict(dtype=torch.float64, device=device)
        K = n_landmarks
        # One more row than the data: the sentinel the padding of batches points to.
        self.Phi = torch.zeros((self.n_samples + 1, K), dtype=self.dtype, device=device)
        self.L_inv = torch.eye(K, **f64).repeat(self.n_batches, 1, 1)
        self.a = torch.as_tensor(step_size(np.arange(1, max_steps + 1), s0, tau), **f64)
        self.order = torch.zeros(max_steps, dtype=torch.int64, device=device)
        self.t = torch.zeros(self.n_features, **f64)
        self.s = torch.zeros(1, dtype=torch.int64, device=device)
        # n_steps="auto": the sum over the current window, the previous window's
        # mean, windows done, and whether the rule has stopped the landmark.
        self.window_sum = torch.zeros((), **f64)
        self.previous = torch.zeros((), **f64)
        self.windows = torch.zeros((), dtype=torch.int64, device=device)
        self.done = torch.zeros((), dtype=torch.bool, device=device)
        first = max(AUTO_MIN_STEPS, 2 * AUTO_WINDOW)
        self.first_check = -(-first // AUTO_WINDOW)  # windows before the first check

    # ------------------------------------------------------------------ set-up

    def _upload(self, X):
        """X and its squared row norms on the device, one block at a time, with a
        sentinel row n_samples (zeros, squared norm +inf for the steps)."""
        torch, device = self.torch, self.device
        n = self.n_samples
        self.xsq = torch.empty(n, dtype=self.dtype, device=device)
        if not self.sparse:
            self.X = torch.zeros((n + 1, self.n_features), dtype=self.dtype, device=device)
        parts = []
        for rows, block in row_blocks(X):
            self.xsq[rows] = to_tensor(_row_norms(block), device)
            if not self.sparse:
                self.X[rows] = to_tensor(block, device)
                continue
            coo = block.tocoo()
            parts.append((coo.row + rows.start, coo.col, coo.data))
        if self.sparse:
            row, col, data = (np.concatenate(p) for p in zip(*parts, strict=True))
            self.X = torch.sparse_coo_tensor(
                torch.as_tensor(np.vstack([row, col]), device=device),
                torch.as_tensor(data, device=device), (n + 1, self.n_features),
                check_invariants=False).coalesce()
        # The steps form distances in float64 (as the compiled NumPy step does).
        self.xsq_steps = torch.cat([self.xsq.double(), torch.full(
            (1,), float("inf"), dtype=torch.float64, device=device)])

    def _layout(self, layout):
        """The batches as rows of an index table (padded) on the device."""
        torch, device = self.torch, self.device
        sizes = layout.batch_sizes()
        self.n_batches, width = len(sizes), int(sizes.max())
        index = np.full((self.n_batches, width), self.n_samples, dtype=np.int64)
        for c, start in enumerate(layout.bounds[:-1]):
            for j in range(layout.batches_per_chunk[c]):
                rows = layout.batch_rows(c, j) + start
                index[layout.batch_id(c, j), :len(rows)] = rows
        self.index = torch.as_tensor(index, device=device)
        self.count = torch.as_tensor(sizes, dtype=torch.float64, device=device)
        self.ridge = RIDGE * self.count
        self.first_batch = layout.first_batch

    # ------------------------------------------------------------------ landmarks

    def add_column(self, k, t):
        """Landmark k is finished at t: its column of Phi and a row of every factor."""
        torch = self.torch
        T = torch.as_tensor(np.asarray(t)[None, :], dtype=self.dtype, device=self.device)
        if self.sparse:
            d2 = torch.sparse.mm(self.X, T.T)[:-1, 0]
            d2 *= -2
            d2 += self.xsq
            d2 += (T * T).sum()
            d2.clamp_min_(0)
        else:
            d2 = squared_distances_torch(self.X[:-1], T, X_sq_norms=self.xsq)[:, 0]
        d2 *= -1.0 / self.eta
        self.Phi[:-1, k] = d2.exp_()
        self._grow_factors(k)

    def _grow_factors(self, k):
        """Add column k of Phi to every batch's factor (``_CholeskyFactor.append``),
        kept as its inverse: L gains the row (r, l) with r = L^-1 Phi_B^T phi_k, so
        L^-1 gains the row (-r^T L^-1 / l, 1 / l)."""
        torch = self.torch
        width = self.index.shape[1]
        group = max(1, PASS_BYTES // (8 * width * (k + 1)))
        for start in range(0, self.n_batches, group):
            sl = slice(start, min(self.n_batches, start + group))
            rows = self.index[sl]
            # The sentinel row of Phi is zero: padding adds nothing.
            P = self.Phi[rows.reshape(-1), :k + 1].reshape(*rows.shape, k + 1).double()
            new = P[:, :, k]
            residual = (new * new).sum(dim=1) + self.ridge[sl]
            if k:
                cross = torch.bmm(P[:, :, :k].transpose(1, 2), new[:, :, None])
                row = torch.bmm(self.L_inv[sl, :k, :k], cross)
                residual -= (row[:, :, 0] ** 2).sum(dim=1)
            # Rounding can make a duplicated column's residual slightly negative; the
            # ridge is the smallest value it can truly have.
            diagonal = torch.sqrt(torch.maximum(residual, self.ridge[sl]))
            if k:
                self.L_inv[sl, k, :k] = (-torch.bmm(row.transpose(1, 2), self.L_inv[sl, :k, :k])
                                         [:, 0, :] / diagonal[:, None])
            self.L_inv[sl, k, k] = 1.0 / diagonal

    def gram(self, k):
        """Phi^T Phi (k x k, float64) over all rows, on the host."""
        total = self.torch.zeros((k, k), dtype=self.torch.float64, device=self.device)
        step = max(1, PASS_BYTES // (8 * max(1, k)))
        for start in range(0, self.n_samples, step):
            P = self.Phi[start:min(start + step, self.n_samples), :k].double()
            total += P.T @ P
        return total.cpu().numpy()

    def start(self, t0, order):
        """Set the start and the batch order ((chunk, batch) per step) of a landmark."""
        ids = np.asarray([self.first_batch[c] + j for c, j in order], dtype=np.int64)
        self.order[:len(ids)] = self.torch.as_tensor(ids, device=self.device)
        self.t.copy_(self.torch.as_tensor(t0, dtype=self.torch.float64))
        self.s.zero_()
        self.window_sum.zero_()
        self.previous.zero_()
        self.windows.zero_()
        self.done.zero_()

    # ------------------------------------------------------------------ the step

    def _batch(self, rows):
        if self.sparse:
            return self.X.index_select(0, rows).to_dense()
        return self.X.index_select(0, rows)

    def step(self):
        """One step of Algorithm 1 on the batch ``order[s]``; all on the device."""
        torch = self.torch
        g = self.order.index_select(0, self.s)
        rows = self.index.index_select(0, g)[0]
        XB = self._batch(rows)
        t = self.t
        # Kernel values relative to the batch's nearest point (the sentinel: +inf, 0).
        d2 = torch.add(self.xsq_steps.index_select(0, rows),
                       (XB @ t.to(self.dtype)).double(), alpha=-2.0)
        d2 += t @ t
        d2.clamp_min_(0)
        nearest = d2.min()
        phi = d2.sub_(nearest).mul_(-1.0 / self.eta).exp_()
        # u = M phi with the batch's factor, the weights phi_i u_i, f = phi^T M phi.
        Phi_B = self.Phi.index_select(0, rows).double()
        L_inv = self.L_inv.index_select(0, g)[0]
        coef = L_inv.T @ (L_inv @ (Phi_B.T @ phi))
        weights = phi * (phi - Phi_B @ coef)
        f = weights.sum()
        m = (weights.to(self.dtype) @ XB).double()
        # t <- Proj(t + a_s (m / f - t)), the move clipped to max_step plus the
        # distance to the batch; no move when f is tiny against phi^T phi.
        a = self.a.index_select(0, self.s)[0]
        move = a * (m / f - t)
        limit = self.max_step + torch.sqrt(nearest)
        move = move * torch.clamp(limit / torch.linalg.vector_norm(move), max=1.0)
        moves = f > 1e-10 * (phi @ phi)
        t.copy_(torch.where(moves, self._project(t + move), t))
        if self.auto:
            b = self.count.index_select(0, g)[0]
            self.window_sum.add_(f.clamp_min(0) * torch.exp(-2.0 * nearest / self.eta) / b)
        self.s.add_(1)

    def _project(self, t):
        if self.space == "euclidean":
            return t
        clipped = t.clamp_min(0)
        if self.space == "nonnegative":
            return clipped
        # The sphere within the orthant; no positive entry: the axis of the largest.
        norm = self.torch.linalg.vector_norm(clipped)
        axis = self.torch.zeros_like(t).scatter_(0, self.torch.argmax(t)[None], 1.0)
        return self.torch.where(norm > 0, clipped / self.torch.where(norm > 0, norm, 1.0),
                                axis)

    def window_end(self):
        """The rule of ``_Convergence`` at the end of a window of AUTO_WINDOW steps."""
        now = self.window_sum / AUTO_WINDOW
        checked = self.windows + 1 >= self.first_check
        self.done |= checked & (now > 0) & (now - self.previous <= AUTO_TOL * now)
        self.previous.copy_(now)
        self.window_sum.zero_()
        self.windows.add_(1)

    def block(self):
        """AUTO_WINDOW steps (and the stopping rule with ``n_steps="auto"``)."""
        for _ in range(AUTO_WINDOW):
            self.step()
        if self.auto:
            self.window_end()


class _Runner:
    """Runs blocks of steps: replays of a CUDA graph of :meth:`_DeviceFit.block` on
    a CUDA device, else eager calls."""

    def __init__(self, fit, max_steps, cuda_graphs):
        self.fit, self.graph = fit, None
        if (cuda_graphs and fit.device.type == "cuda" and not fit.sparse
                and max_steps >= AUTO_WINDOW):
            self.graph = self._capture()

    def _capture(self):
        torch, fit = self.fit.torch, self.fit
        try:
            stream = torch.cuda.Stream(fit.device)
            stream.wait_stream(torch.cuda.current_stream(fit.device))
            with torch.cuda.stream(stream):
                for _ in range(2):  # warm-up, as torch.cuda.graphs asks before capture
                    fit.s.zero_()
                    fit.block()
            torch.cuda.current_stream(fit.device).wait_stream(stream)
            fit.s.zero_()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fit.block()
            return graph
        except RuntimeError as exc:
            log.info("CUDA graph capture failed (%s); running the steps eagerly", exc)
            return None

    def run(self, max_steps, step_bar=None):
        """Steps until ``max_steps`` or the stopping rule; returns the steps taken."""
        fit, s = self.fit, 0
        while s + AUTO_WINDOW <= max_steps:
            if self.graph is not None:
                self.graph.replay()
            else:
                fit.block()
            s += AUTO_WINDOW
            if step_bar is not None:
                step_bar.update(AUTO_WINDOW)
            if fit.auto and bool(fit.done):
                return s
        for _ in range(max_steps - s):
            fit.step()
        return max_steps


def learn_gp_landmarks_torch(X, n_landmarks, *, kernel_width, device, n_steps=1000,
                             batch_size=1000, s0=10.0, tau=0.51, space="euclidean",
                             init="gaussian", previous_landmarks=None, seed=0,
                             chunk_size=None, callback=None, return_n_steps=False,
                             verbose=False, cuda_graphs=True):
    """:func:`landmarking.landmarks.gp.learn_gp_landmarks` on a torch device.

    Same parameters and returns, plus:

    Parameters
    ----------
    device : torch.device
        Where the data, the kernel table, the factors and the steps live. The
        landmarks equal the NumPy path's for the same seed to rounding.
    cuda_graphs : bool, default=True
        On a CUDA device, replay blocks of steps as a CUDA graph (the same
        arithmetic, fewer launches).

    Notes
    -----
    Device memory: X (n_samples x n_features of its dtype; a sparse X as its
    nonzeros), the kernel table (n_samples x n_landmarks of X's dtype) and the
    batch factors (n_batches x n_landmarks^2 float64). A ``MemoryError`` names
    what to lower when they do not fit.
    """
    torch = import_torch(device)
    n_samples, n_features = X.shape
    landmarks, n_previous = _landmark_table(previous_landmarks, n_landmarks, n_features)
    auto = isinstance(n_steps, str)
    max_steps = AUTO_MAX_STEPS if auto else n_steps
    bounds = chunk_bounds(X, chunk_size)
    layout = _Chunks(X, bounds, batch_size, landmarks, kernel_width, seed, 0)
    mean, std = column_mean_std(X, bounds)
    itemsize = working_dtype(X).itemsize
    lower = (f"the device memory the fit needs: X ({_size(X, itemsize)} on the device; "
             f"float32 data halves it), the kernel table (n_landmarks: "
             f"{_gib(n_samples * n_landmarks * itemsize)}) or the batch factors "
             f"({_gib(layout.n_batches * n_landmarks**2 * 8)}; a larger batch_size "
             "means fewer)")
    seconds, steps = [], []

    with device_memory(device, lower=lower), torch.inference_mode():
        fit = _DeviceFit(torch, device, X, layout, n_landmarks, kernel_width, space,
                         max_steps, s0, tau, auto)
        for k in range(n_previous):
            fit.add_column(k, landmarks[k])
        runner = _Runner(fit, max_steps, cuda_graphs)

        def result(done):
            objectives = _objectives(fit.gram(done), n_samples, 0)
            out = (landmarks[:done].copy() if done < n_landmarks else landmarks, objectives,
                   np.asarray(seconds))
            return out + (np.asarray(steps, dtype=np.int64),) if return_n_steps else out

        outer = tqdm(range(n_previous, n_landmarks), desc="landmarks", disable=not verbose,
                     unit="landmark")
        try:
            for k in outer:
                begin = time.perf_counter()
                rng = np.random.default_rng([seed, k])
                t0 = _initial_point(k, init, mean, std, rng, space)
                fit.start(t0, _batch_order(rng, layout.batches_per_chunk, max_steps))
                with tqdm(total=max_steps, desc=f"landmark {k + 1}", leave=False,
                          disable=not verbose, unit="step") as step_bar, \
                        _one_cpu_thread(torch, device):
                    taken = runner.run(max_steps, step_bar)
                landmarks[k] = fit.t.cpu().numpy()
                fit.add_column(k, landmarks[k])
                seconds.append(time.perf_counter() - begin)
                steps.append(taken)
                if callback is not None and k < n_landmarks - 1:
                    callback(landmarks[:k + 1], np.full(len(seconds), np.nan),
                             np.asarray(seconds))
            out = result(n_landmarks)
            if callback is not None and n_landmarks > n_previous:
                callback(landmarks, out[1][n_previous:], np.asarray(seconds))
        except KeyboardInterrupt as interrupt:
            interrupt.partial_result = result(n_previous + len(seconds))
            raise
    return out


@contextmanager
def _one_cpu_thread(torch, device):
    """torch on one thread while the steps run on the CPU; the setting is restored."""
    if device.type != "cpu":
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _size(X, itemsize):
    if sparse.issparse(X):
        return _gib(X.nnz * (itemsize + 16))
    return _gib(X.shape[0] * X.shape[1] * itemsize)


def _gib(n_bytes):
    return f"{n_bytes / 2**30:.2f} GiB"
