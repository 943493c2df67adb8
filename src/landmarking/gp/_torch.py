"""The torch backend of GP landmarking: the steps on a torch device.

``GPLandmarks(device=...)`` runs :func:`.fit.learn_gp_landmarks` with this
backend (:func:`.backend.gp_backend`): :func:`torch_fit` gives the driver the
interface every backend offers. The symbols are those of :mod:`.objective`, whose
formulae the steps apply on tensors (the move through :func:`.objective.moved_landmark`
with torch's primitives, the stopping rule through :func:`.objective.window_stops`).
This is the only GP module that uses torch. Everything random comes from the NumPy
generators the driver draws for both backends: the sample's batch layout
(:class:`.sampling.BatchLayout`), each landmark's start and its order of batches
from ``(seed, k)``.
On ``torch.device("cpu")`` the landmarks therefore equal the CPU path's to
rounding (1e-4 relative, ``tests/test_gpu.py``).

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
One step for a block of B landmarks (:class:`_Steps`; the sequential fit is
B = 1, the same step): the B landmarks in one tensor, the drop rule of degenerate
pivots as tensors. A step reads its batch, its step size and its factor through
indices held on the device (the batch order of the block and a step counter) and
writes the new landmarks in place. Its shapes never change: batches are padded to the largest
with a sentinel row (squared norm +inf, so kernel value 0), Phi and the factors
have K columns (zero columns and an identity block project nothing out). No value comes back to the
host inside a step: the clipping of the move, the "no move when f is tiny" rule
and the stopping rule of ``n_steps="auto"`` are tensors. The host reads one flag
per ``AUTO_WINDOW`` steps with ``n_steps="auto"``, and the landmark when it is done.

Because nothing in a step depends on the host, a block of ``AUTO_WINDOW`` steps is
captured once per block size as a CUDA graph on a CUDA device and replayed: one
launch per 50 steps. On the CPU (and for sparse input, or if capture fails) the
same step function runs eagerly. A block's kernel columns are computed together
for its greedy order and kept.

On the CPU the step loop runs torch on one thread (restored when the loop ends),
as the CPU path limits BLAS: a step is too small to gain from threads, and
torch's threads lose badly when the cores are busy (seven times slower measured
on 2 shared cores).

Precision follows the compiled CPU step (:mod:`._loops`): the products
with the batch in X's dtype, the distances, kernel values, solve and weights in
float64.
"""

import logging
from contextlib import contextmanager
from functools import partial
from types import SimpleNamespace

import numpy as np
from scipy import sparse

from .._blocks import row_blocks, working_dtype
from .._torch import device_memory, import_torch, to_tensor
from .._torch_kernels import squared_distances_torch
from . import objective
from ._tables import _row_norms
from .objective import (
    RIDGE,
    batch_objective,
    first_check_window,
    moved_landmark,
    step_size,
    takes_step,
    window_stops,
)

__all__ = ["torch_fit"]

log = logging.getLogger(__name__)

#: Bytes of float64 temporaries per block of a pass over all rows or all batches
#: on the device (the Gram pass, the factor growth).
PASS_BYTES = 256 * 2**20
#: On a CUDA device, replay blocks of steps as a CUDA graph (the same arithmetic,
#: fewer launches); a test turns it off to compare with the eager steps.
CUDA_GRAPHS = True


class _DeviceFit:
    """The tensors of a fit on the device, which the steps (:class:`_Steps`) read.

    Everything a step reads is allocated here once, at its final size, so that a
    CUDA graph captured from :meth:`_Steps.block` stays valid for the whole fit:
    the per-block inputs (starts, batch order) are copied into these tensors.
    """

    def __init__(self, torch, device, X, layout, n_landmarks, eta, space, max_steps,
                 s0, tau, auto):
        self.torch, self.device = torch, device
        self.dtype = getattr(torch, working_dtype(X).name)
        self.eta, self.space, self.auto = float(eta), space, auto
        self.max_step = objective.MAX_STEP_WIDTHS * np.sqrt(eta)
        # The primitives of the move (objective.moved_landmark) on tensors.
        self.ops = SimpleNamespace(norm=torch.linalg.vector_norm, sqrt=torch.sqrt,
                                   maximum=torch.maximum, project=partial(_project, torch))
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
        self.s = torch.zeros(1, dtype=torch.int64, device=device)
        # n_steps="auto": the sum over the current window, the previous window's
        # mean, windows done, and whether the rule has stopped the landmark.
        self.window_sum = torch.zeros((), **f64)
        self.previous = torch.zeros((), **f64)
        self.windows = torch.zeros((), dtype=torch.int64, device=device)
        self.done = torch.zeros((), dtype=torch.bool, device=device)
        self.first_check = first_check_window()

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
            # scipy's indices are valid: torch's invariant checks are skipped, for
            # coalesce() too (torch 2.11 on CUDA warned on every fit otherwise).
            with torch.sparse.check_sparse_tensor_invariants(enable=False):
                self.X = torch.sparse_coo_tensor(
                    torch.as_tensor(np.vstack([row, col]), device=device),
                    torch.as_tensor(data, device=device), (n + 1, self.n_features),
                    check_invariants=False).coalesce()
        # The steps form distances in float64 (as the compiled CPU step does).
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
        self.kernel_columns(k, np.asarray(t)[None, :])
        self._grow_factors(k)

    def kernel_columns(self, k, T):
        """Columns k, ..., k + B - 1 of Phi for the landmarks T (B, d), as one
        (n x d) by (d x B) product over all rows."""
        torch = self.torch
        T = torch.as_tensor(np.asarray(T), dtype=self.dtype, device=self.device)
        if self.sparse:
            d2 = torch.sparse.mm(self.X, T.T)[:-1]
            d2 *= -2
            d2 += self.xsq[:, None]
            d2 += (T * T).sum(dim=1)[None, :]
            d2.clamp_min_(0)
        else:
            d2 = squared_distances_torch(self.X[:-1], T, X_sq_norms=self.xsq)
        d2 *= -1.0 / self.eta
        self.Phi[:-1, k:k + len(T)] = d2.exp_()

    def reorder_columns(self, k, order):
        """Columns k, k + 1, ... of Phi put in ``order`` (a finished block's greedy
        order); the factors do not hold them yet."""
        index = self.torch.as_tensor(k + np.asarray(order), device=self.device)
        self.Phi[:, k:k + len(order)] = self.Phi.index_select(1, index)

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
        return self.cross_gram(0, k)

    def cross_gram(self, k, end):
        """Phi[:, :end]^T Phi[:, k:end] (end x (end - k), float64) over all rows, on
        the host: a block's columns against all the columns up to it."""
        total = self.torch.zeros((end, end - k), dtype=self.torch.float64,
                                 device=self.device)
        step = max(1, PASS_BYTES // (8 * max(1, end)))
        for start in range(0, self.n_samples, step):
            P = self.Phi[start:min(start + step, self.n_samples), :end].double()
            total += P.T @ P[:, k:]
        return total.cpu().numpy()

    def start(self, position, t0, order):
        """Set the start (into ``position``, the ``T`` of the block size's
        :class:`_Steps`) and the batch order ((chunk, batch) per step) of a block
        (one landmark: B = 1)."""
        ids = np.asarray([self.first_batch[c] + j for c, j in order], dtype=np.int64)
        self.order[:len(ids)] = self.torch.as_tensor(ids, device=self.device)
        position.copy_(self.torch.as_tensor(t0, dtype=self.torch.float64))
        self.s.zero_()
        self.window_sum.zero_()
        self.previous.zero_()
        self.windows.zero_()
        self.done.zero_()

    # ------------------------------------------------------------------ a step's inputs

    def _batch(self, rows):
        """The batch's rows of X (a sparse X densified)."""
        if self.sparse:
            return self.X.index_select(0, rows).to_dense()
        return self.X.index_select(0, rows)

    def window_end(self):
        """The rule of ``n_steps="auto"`` (:func:`.objective.window_stops`) at the end
        of a window of ``AUTO_WINDOW`` steps, on the device."""
        now = self.window_sum / objective.AUTO_WINDOW
        checked = self.windows + 1 >= self.first_check
        self.done |= checked & window_stops(now, self.previous)
        self.previous.copy_(now)
        self.window_sum.zero_()
        self.windows.add_(1)


class _Steps:
    """The step on the device, for a block of B >= 1 landmarks (the sequential fit is
    B = 1): the landmarks ``T`` (B x d, float64, allocated once per block size so
    that a captured graph stays valid) moved together on each batch, reading the
    batch order, step counter and factors of the :class:`_DeviceFit`.

    Each step is :func:`._cpu.reference_step` and :func:`._cpu.move_landmarks`
    with batched tensor operations: the distances of the batch to all B landmarks
    as one (b x d) by (d x B) product, the projection out of the earlier span as
    products with the batch's inverse factor (zero columns of Phi and the identity
    beyond the k earlier landmarks project nothing out), the B x B Gram matrix G
    and its factor with the drops of :func:`.objective.pivots_with_drops` (B
    iterations of small tensor operations: a column whose pivot is too small
    becomes an identity row and column, so no value comes back to the host), two
    B x B triangular solves, ``X_b^T W``, and the B moves at once through
    :func:`.objective.moved_landmark` with row-wise primitives.
    """

    def __init__(self, fit, B):
        torch = fit.torch
        self.fit, self.B = fit, B
        self.T = torch.zeros((B, fit.n_features), dtype=torch.float64, device=fit.device)
        # The primitives of the move for B rows at once: a norm and a step limit
        # per row.
        self.ops = SimpleNamespace(norm=partial(torch.linalg.vector_norm, dim=-1,
                                                keepdim=True),
                                   sqrt=torch.sqrt, maximum=torch.maximum,
                                   project=partial(_project, torch))

    def _factor_with_drops(self, G, phi_sq):
        """:func:`.objective.pivots_with_drops` as tensors: (pivots f, active mask, L),
        L the lower factor of G with each dropped column's row and column replaced
        by the identity's (so that solves with L leave dropped columns at zero).

        Right-looking Cholesky: pivot j is G_jj less the active columns before it;
        a dropped column (:func:`.objective.takes_step` false) updates nothing.
        """
        torch = self.fit.torch
        S = G.clone()
        L = torch.zeros_like(G)
        pivots, kept = [], []
        for j in range(self.B):
            p = S[j, j]
            keep = takes_step(p, phi_sq[j])
            # A dropped column: diagonal 1, nothing below, and its row of L zero.
            root = torch.sqrt(torch.where(keep, p, 1.0))
            col = torch.where(keep, S[j + 1:, j] / root, 0.0)
            S[j + 1:, j + 1:] -= torch.outer(col, col)
            L[j + 1:, j] = col
            L[j, j] = root
            L[j, :j] *= keep
            pivots.append(p)
            kept.append(keep)
        return torch.stack(pivots), torch.stack(kept), L

    def _targets(self, XB, rows, g):
        """The step's sums: ``X_b^T W`` (B x d), pivots f, phi^T phi and the
        nearest squared distances (B,), and the active mask (B,)."""
        torch, fit = self.fit.torch, self.fit
        T = self.T
        # Kernel values relative to each landmark's nearest point in the batch.
        d2 = (fit.xsq_steps.index_select(0, rows)[:, None]
              - 2.0 * (XB @ T.to(fit.dtype).T).double())
        d2 += (T * T).sum(dim=1)
        d2.clamp_min_(0)
        nearest = d2.min(dim=0).values
        Phi_B = d2.sub_(nearest).mul_(-1.0 / fit.eta).exp_()
        # U = M Phi_B with the batch's inverse factor, G = Phi_B^T U.
        Phi_p = fit.Phi.index_select(0, rows).double()
        L_inv = fit.L_inv.index_select(0, g)[0]
        U = Phi_B - Phi_p @ (L_inv.T @ (L_inv @ (Phi_p.T @ Phi_B)))
        G = Phi_B.T @ U
        G = 0.5 * (G + G.T)
        phi_sq = (Phi_B * Phi_B).sum(dim=0)
        f, active, L = self._factor_with_drops(G, phi_sq)
        # W = Phi_B * (U G_A^-1) on the active columns, zero on the dropped ones.
        solve = torch.linalg.solve_triangular
        V = solve(L.T, solve(L, (U * active).T, upper=False), upper=True).T
        W = Phi_B * V
        S = (W.to(fit.dtype).T @ XB).double()
        return S, f, phi_sq, nearest, active

    def step(self):
        """One block step on the batch ``order[s]``; all on the device."""
        torch, fit = self.fit.torch, self.fit
        g = fit.order.index_select(0, fit.s)
        rows = fit.index.index_select(0, g)[0]
        S, f, _, nearest, active = self._targets(fit._batch(rows), rows, g)
        # move_landmarks: each active landmark's move with m = S_j, f = 1.
        a = fit.a.index_select(0, fit.s)[0]
        moved = moved_landmark(self.T, S, 1.0, a, fit.max_step, nearest[:, None], fit.space,
                               self.ops)
        self.T.copy_(torch.where(active[:, None], moved, self.T))
        if fit.auto:
            # The block's batch objective: the sum of its landmarks' (_cpu.optimise).
            b = fit.count.index_select(0, g)[0]
            fit.window_sum.add_(batch_objective(f.clamp_min(0), nearest, fit.eta, b,
                                                torch.exp).sum())
        fit.s.add_(1)

    def block(self):
        """AUTO_WINDOW block steps (and the stopping rule with ``n_steps="auto"``)."""
        for _ in range(objective.AUTO_WINDOW):
            self.step()
        if self.fit.auto:
            self.fit.window_end()


class _Runner:
    """Runs windows of steps of ``steps`` (a :class:`_Steps`): replays of a CUDA
    graph of its ``block`` on a CUDA device, else eager calls."""

    def __init__(self, fit, steps, max_steps, cuda_graphs):
        self.fit, self.steps, self.graph = fit, steps, None
        if (cuda_graphs and fit.device.type == "cuda" and not fit.sparse
                and max_steps >= objective.AUTO_WINDOW):
            self.graph = self._capture()

    def _capture(self):
        torch, fit, steps = self.fit.torch, self.fit, self.steps
        try:
            stream = torch.cuda.Stream(fit.device)
            stream.wait_stream(torch.cuda.current_stream(fit.device))
            with torch.cuda.stream(stream):
                # Warm-up before capture, as torch.cuda.graphs asks: every operation
                # of a window once (a step and the stopping rule), twice. Not whole
                # windows: eager steps cost many times a replayed one, and a block
                # fit of a few windows would spend most of its time warming up.
                for _ in range(2):
                    fit.s.zero_()
                    steps.step()
                    if fit.auto:
                        fit.window_end()
            torch.cuda.current_stream(fit.device).wait_stream(stream)
            fit.s.zero_()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                steps.block()
            return graph
        except RuntimeError as exc:
            log.info("CUDA graph capture failed (%s); running the steps eagerly", exc)
            return None

    def run(self, max_steps, step_bar=None):
        """Steps until ``max_steps`` or the stopping rule; returns the steps taken."""
        fit, s, window = self.fit, 0, objective.AUTO_WINDOW
        while s + window <= max_steps:
            if self.graph is not None:
                self.graph.replay()
            else:
                self.steps.block()
            s += window
            if step_bar is not None:
                step_bar.update(window)
            if fit.auto and bool(fit.done):
                return s
        for _ in range(max_steps - s):
            self.steps.step()
        return max_steps


class _TorchFit:
    """A fit on a torch device: the interface of :class:`.backend.FitState` over a
    :class:`_DeviceFit`, in blocks of B
    landmarks (one landmark at a time: B = 1) stepped by :class:`_Steps`.

    A runner (and its CUDA graph) is made on first use for each block size (the
    last block may be smaller).
    """

    def __init__(self, fit, landmarks, max_steps):
        self.fit, self.landmarks, self.max_steps = fit, landmarks, max_steps
        self.runners = {}
        self.runner, self.position = None, None
        # Columns of Phi already computed by block_gram, waiting for add_column.
        self.ready = range(0)

    def _runner(self, B):
        """The runner of blocks of B."""
        if B not in self.runners:
            self.runners[B] = _Runner(self.fit, _Steps(self.fit, B), self.max_steps,
                                      CUDA_GRAPHS)
        return self.runners[B]

    def start(self, k, t0, order):
        """Landmarks k to k + B - 1 (one landmark: B = 1) start at t0 (B, d) and step
        on ``order`` ((chunk, batch) per step)."""
        # The runner first: a graph capture runs warm-up steps on the state.
        self.runner = self._runner(len(t0))
        self.position = self.runner.steps.T
        self.fit.start(self.position, t0, order)

    def run(self, step_bar=None):
        """The steps of the landmarks started; returns (their positions (B, d), the
        steps run)."""
        with _one_cpu_thread(self.fit.torch, self.fit.device):
            taken = self.runner.run(self.max_steps, step_bar)
        return self.position.cpu().numpy(), taken

    def block_gram(self, k, end, first):
        """Phi[:, :end]^T Phi[:, first:end] (end x (end - first), float64) over all
        rows, after the block k..end-1's kernel columns are computed together on the
        device (one product for the block)."""
        fit = self.fit
        fit.kernel_columns(k, self.landmarks[k:end])
        self.ready = range(k, end)
        return fit.cross_gram(first, end)

    def reorder(self, k, order):
        """The landmarks k, k + 1, ... of a finished block were put in ``order``: so
        are their kernel columns on the device."""
        self.fit.reorder_columns(k, order)

    def add_column(self, k, t):
        """Landmark k is finished at t: its kernel column (unless its block's
        :meth:`block_gram` computed it) and a row of every factor."""
        if k in self.ready:
            self.fit._grow_factors(k)
        else:
            self.fit.add_column(k, t)

    def gram(self, k):
        """Phi^T Phi (k x k, float64) over all rows, on the host."""
        return self.fit.gram(k)


@contextmanager
def torch_fit(sample, landmarks, n_previous, *, device, eta, space, max_steps, s0, tau,
              auto, n_jobs=None):
    """A fit on ``device`` (:meth:`.backend.GPBackend.fit`; a context: an exhausted
    device raises a ``MemoryError`` naming what to lower).

    Parameters
    ----------
    sample : :class:`.sampling.Sample`, the fit's rows (dense or CSR, any container
        :func:`landmarking._blocks.row_blocks` reads) and the layout of its batches.
    landmarks : the fit's landmark table (n_landmarks, d); its first ``n_previous``
        rows are finished landmarks, whose kernel columns are computed here.
    device : torch.device
    eta, space, max_steps, s0, tau, auto : the fit's settings.
    n_jobs : ignored: the CPU block step's threads; on the CPU the torch steps run
        on one thread (:func:`_one_cpu_thread`), on a GPU on the device.

    Notes
    -----
    Device memory: X (n_samples x n_features of its dtype; a sparse X as its
    nonzeros), the kernel table (n_samples x n_landmarks of X's dtype) and the
    batch factors (n_batches x n_landmarks^2 float64).
    """
    torch = import_torch(device)
    X, layout = sample.X, sample.layout
    n_samples = X.shape[0]
    n_landmarks = len(landmarks)
    itemsize = working_dtype(X).itemsize
    lower = (f"the device memory the fit needs: X ({_size(X, itemsize)} on the device; "
             f"float32 data halves it), the kernel table (n_landmarks: "
             f"{_gib(n_samples * n_landmarks * itemsize)}) or the batch factors "
             f"({_gib(layout.n_batches * n_landmarks**2 * 8)}; a larger batch_size "
             "means fewer)")
    with device_memory(device, lower=lower), torch.inference_mode():
        fit = _DeviceFit(torch, device, X, layout, n_landmarks, eta, space, max_steps, s0,
                         tau, auto)
        for k in range(n_previous):
            fit.add_column(k, landmarks[k])
        yield _TorchFit(fit, landmarks, max_steps)


def _project(torch, t, space):
    """:func:`landmarking.spaces.project` of one point (or each row of a block) onto a
    space other than "euclidean", on tensors, with no host read (pinned to it by
    ``tests/test_gpu.py``)."""
    clipped = t.clamp_min(0)
    if space == "nonnegative":
        return clipped
    # The sphere within the orthant, row by row; no positive entry: the axis of
    # the largest.
    norm = torch.linalg.vector_norm(clipped, dim=-1, keepdim=True)
    axis = torch.zeros_like(t).scatter_(-1, torch.argmax(t, dim=-1, keepdim=True), 1.0)
    return torch.where(norm > 0, clipped / torch.where(norm > 0, norm, 1.0), axis)


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
