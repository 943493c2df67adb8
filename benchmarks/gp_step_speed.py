"""One GP step against the memory-bandwidth limit, on MNIST (issue 12).

Times, interleaved in rounds (A, B, C, A, B, C, ...) so that a change of load hits
all alike, on a fit's own state (the chunk's kept kernel table and batch factors,
k finished landmarks, :mod:`landmarking.gp._tables`), for one landmark (B = 1, the
sequential fit) and for blocks (``--blocks``):

- the limit: one read of a batch-sized block not in cache (b x d float32,
  ``np.add.reduce(block, axis=0)`` over consecutive blocks of the training images);
- the compiled step (:class:`landmarking.gp._cpu.CompiledSteps`, what a fit
  runs): the steps on all the chunk's batches in one compiled call, moves and
  projections included (one thread, and ``--threads`` for blocks);
- the reference step (:func:`landmarking.gp._cpu.reference_step`, CSR input and
  what the compiled step is tested against) on the same batches, moves included.

Both CPU seconds (``time.process_time``: what the step costs, less sensitive to
other processes) and wall seconds are printed, per step, with the load average.

Usage::

    flock /tmp/landmarking-bench.lock python benchmarks/gp_step_speed.py
"""

import time

import numpy as np
from _common import argument_parser, machine_line, parse, print_table
from threadpoolctl import threadpool_limits

from landmarking.datasets import load_mnist
from landmarking.gp import _cpu as gp_module
from landmarking.gp._tables import BatchFactors, KernelTables, Preceding
from landmarking.gp.objective import MAX_STEP_WIDTHS
from landmarking.gp.sampling import draw_sample


def main():
    parser = argument_parser(__doc__, size=None, out=False)
    parser.add_argument("--landmarks", type=int, nargs="+", default=[0, 50, 99],
                        help="numbers k of finished landmarks to time the step with")
    parser.add_argument("--blocks", type=int, nargs="+", default=[1, 50],
                        help="landmarks per step (1: the sequential fit)")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of the compiled block step (also timed on one)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parse(parser)
    X, _ = load_mnist(split="train")
    X = np.ascontiguousarray(X[:50000])
    b, (n, d) = 1000, X.shape
    rng = np.random.default_rng(args.seed)
    eta = 51.6
    blocks = [X[i * b:(i + 1) * b] for i in range(n // b)]
    # Landmarks near data, as a fit has them; the kernel table and the factors are
    # the fit's own (the fit's sample: all rows, batches from the seeded permutation).
    n_landmarks = max(args.landmarks) + max(args.blocks)
    landmarks = X[rng.choice(n, n_landmarks, replace=False)].astype(np.float64)
    sample = draw_sample(X, batch_size=b, steps=1000, seed=args.seed)
    tables = KernelTables(sample, landmarks, eta, gp_module.KERNEL_TABLE_BYTES)
    batches = list(range(sample.layout.n_batches))
    print(f"MNIST 50,000 x {d} float32, batch {b}")
    rows = []
    settings = dict(s0=10.0, tau=0.51, max_step=MAX_STEP_WIDTHS * np.sqrt(eta),
                    space="nonnegative")
    with threadpool_limits(limits=1, user_api="blas"):
        for B in args.blocks:
            T0 = X[rng.choice(n, B, replace=False)].astype(np.float64) + 0.05
            for k in args.landmarks:
                # Fresh factors for each k: a fit's factors only grow with k, and
                # factors grown to a larger k would not match the first k columns.
                factors = BatchFactors(sample.layout.n_batches, n_landmarks,
                                       sample.layout.batch_sizes(), gp_module.FACTOR_CACHE_BYTES)
                span = Preceding(tables, factors, k)
                chunk = span.visit(0)

                def read():
                    for block in blocks:
                        np.add.reduce(block, axis=0)

                def compiled(threads, span=span, chunk=chunk, T0=T0, B=B):
                    steps = gp_module.CompiledSteps(threads)
                    # A sequential fit's visit: 1000 steps on one chunk (read in its
                    # permutation's order); a block's: 100.
                    length = 1000 if B == 1 else 100

                    def visit():
                        steps.steps(span, 0, batches, chunk, T0.copy(), eta, 1,
                                    visit_length=length, **settings)
                    return visit

                def reference(span=span, chunk=chunk, T0=T0):
                    gp_module._reference_steps(T0.copy(), span, 0, batches, chunk, eta, 1,
                                               **settings)

                runs = {"read one block (limit)": read, "compiled step, 1 thread": compiled(1)}
                if B > 1 and args.threads > 1:
                    runs[f"compiled step, {args.threads} threads"] = compiled(args.threads)
                runs["reference step (NumPy)"] = reference
                for run in runs.values():
                    run()  # warm: caches, page faults, the kernel columns
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
                    rows.append((B, k, name, c * 1e6, c / limit_cpu, w * 1e6, w / limit_wall))
    print_table(["B", "k", "what", "CPU us/step", "x limit", "wall us/step", "x limit (wall)"],
                rows, floatfmt="{:.2f}")
    print(f"(best of {args.rounds} rounds of {len(batches)} batches; {machine_line()})")


if __name__ == "__main__":
    main()
