"""One GP step against the memory-bandwidth limit, on MNIST (issue 12).

Times, interleaved in rounds (A, B, C, D, A, B, C, D, ...) so that a change of
load hits all alike, on a fit's own state (the chunk's kept kernel table and batch
factors, k finished landmarks, :mod:`landmarking.gp.batches`):

- the limit: one read of a batch-sized block not in cache (b x d float32,
  ``np.add.reduce(block, axis=0)`` over consecutive blocks of the training images);
- the compiled visit (:meth:`_CompiledStep.steps`, what a fit runs): the steps on
  all the chunk's batches in one compiled call, moves and projections included;
- the compiled step one batch at a time (:class:`_CompiledStep` called per step,
  what the refinement runs): the step's sums only;
- the NumPy step (:func:`_numpy_step`, CSR input and the reference) on the same
  batches: the step's sums only.

Both CPU seconds (``time.process_time``: what the step costs, less sensitive to
other processes) and wall seconds are printed, per step, with the load average.

Usage::

    flock /tmp/landmarking-bench.lock python benchmarks/gp_step_speed.py
"""

import time

import numpy as np
from _gp_common import machine_line, parse_args, print_table
from threadpoolctl import threadpool_limits

from landmarking.datasets import load_mnist
from landmarking.gp import _numpy as gp_module
from landmarking.gp.batches import _BatchGram, _Chunks, _Preceding
from landmarking.gp.objective import MAX_STEP_WIDTHS


def _extra(parser):
    parser.add_argument("--landmarks", type=int, nargs="+", default=[0, 50, 99],
                        help="numbers k of finished landmarks to time the step with")
    parser.add_argument("--rounds", type=int, default=5)


def main():
    args = parse_args(__doc__.split("\n\n")[0], extra=_extra)
    X, _ = load_mnist(split="train")
    X = np.ascontiguousarray(X[:50000])
    b, (n, d) = 1000, X.shape
    rng = np.random.default_rng(args.seed)
    eta = 51.6
    blocks = [X[i * b:(i + 1) * b] for i in range(n // b)]
    # Landmarks near data, as a fit has them; the kernel table and the factors are
    # the fit's own (one chunk, batches from the seeded permutation).
    n_landmarks = max(args.landmarks) + 1
    landmarks = X[rng.choice(n, n_landmarks, replace=False)].astype(np.float64)
    chunks = _Chunks(X, np.array([0, n]), b, landmarks, eta, args.seed,
                     gp_module.KERNEL_TABLE_BYTES)
    gram = _BatchGram(chunks.n_batches, n_landmarks, chunks.batch_sizes(),
                      gp_module.FACTOR_CACHE_BYTES)
    batches = list(range(chunks.n_batches))
    t0 = X[rng.integers(n)].astype(np.float64) + 0.05
    compiled = gp_module._CompiledStep(d, b)
    print(f"MNIST 50,000 x {d} float32, batch {b}; {machine_line()}")
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for k in args.landmarks:
            span = _Preceding(chunks, gram, k)
            chunk = span.visit(0)
            Xc, xsq, Phi = chunk
            span.batch_factors(0, batches, Phi)
            factors = [span.factor(0, j, Phi, chunks.batch_positions(0, j)) for j in batches]
            where = [(chunks.batch_rows(0, j), chunks.batch_positions(0, j)) for j in batches]

            def read():
                for block in blocks:
                    np.add.reduce(block, axis=0)

            def visit(span=span, chunk=chunk):
                compiled.steps(span, 0, batches, chunk, t0.copy(), eta, 1, s0=10.0, tau=0.51,
                               max_step=MAX_STEP_WIDTHS * np.sqrt(eta), space="nonnegative",
                               visit_length=1000)  # a fit's: 1000 steps on one chunk

            def one_at_a_time(func, factors=factors, where=where, Xc=Xc, xsq=xsq, Phi=Phi):
                def steps():
                    for (rows_j, positions), factor in zip(where, factors, strict=True):
                        func(Xc, xsq, rows_j, Phi, factor, t0, eta, positions=positions)
                return steps

            runs = {"read one block (limit)": read, "compiled visit (fit)": visit,
                    "compiled step, one at a time": one_at_a_time(compiled),
                    "NumPy step": one_at_a_time(gp_module._numpy_step)}
            for run in runs.values():
                run()  # warm: caches, page faults, the compiled kernels
            cpu = {name: [] for name in runs}
            wall = {name: [] for name in runs}
            for _ in range(args.rounds):
                for name, run in runs.items():
                    c, w = time.process_time(), time.perf_counter()
                    run()
                    cpu[name].append((time.process_time() - c) / len(batches))
                    wall[name].append((time.perf_counter() - w) / len(batches))
            limit_cpu = min(cpu["read one block (limit)"])
            limit_wall = min(wall["read one block (limit)"])
            for name in runs:
                c, w = min(cpu[name]), min(wall[name])
                rows.append((k, name, c * 1e6, c / limit_cpu, w * 1e6, w / limit_wall))
    print_table(["k", "what", "CPU us/step", "x limit", "wall us/step", "x limit (wall)"],
                rows, floatfmt="{:.2f}")
    print(f"(best of {args.rounds} rounds of {len(batches)} batches; {machine_line()})")


if __name__ == "__main__":
    main()
