"""One GP step against the memory-bandwidth limit, on MNIST (issue 12).

Times, interleaved in rounds (A, B, C, A, B, C, ...) so that a change of load hits
all three alike:

- the limit: one read of a batch-sized block not in cache (b x d float32,
  ``np.add.reduce(block, axis=0)`` over consecutive blocks of the training images);
- the compiled step (:class:`landmarking.landmarks._gp_batches._CompiledStep`): a batch of b
  scattered rows of the chunk, k finished landmarks;
- today's NumPy step (:func:`landmarking.landmarks._gp_batches._numpy_step`) on the same
  batches.

Both CPU seconds (``time.process_time``: what the step costs, less sensitive to
other processes) and wall seconds are printed, per step, with the load average.

Usage::

    flock /tmp/landmarking-bench.lock python benchmarks/gp_step_speed.py
"""

import os
import time

import numpy as np
from _gp_common import parse_args, print_table
from threadpoolctl import threadpool_limits

from landmarking.datasets import load_mnist
from landmarking.landmarks import _gp_batches as gp_module


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
    xsq = np.einsum("ij,ij->i", X, X)
    perm = rng.permutation(n)
    batches = [perm[i * b:(i + 1) * b] for i in range(n // b)]
    blocks = [X[i * b:(i + 1) * b] for i in range(n // b)]
    eta = 51.6
    # Phi and the factors as a fit has them: kernel values of landmarks near data.
    landmarks = X[rng.choice(n, max(args.landmarks) + 1, replace=False)].astype(np.float64)
    Phi = gp_module._kernel_columns(X, landmarks, eta)
    t = X[rng.integers(n)].astype(np.float64) + 0.05
    compiled = gp_module._CompiledStep(d, b)
    print(f"MNIST 50,000 x {d} float32, batch {b}; load average {os.getloadavg()}")
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for k in args.landmarks:
            factors = []
            for batch in batches:
                Phi_B = Phi[batch, :k].astype(np.float64)
                factors.append(gp_module._CholeskyFactor.of_gram(
                    Phi_B.T @ Phi_B, gp_module.RIDGE * b))

            def read():
                for block in blocks:
                    np.add.reduce(block, axis=0)

            def step(func, batches=batches, factors=factors):
                def steps():
                    for batch, factor in zip(batches, factors, strict=True):
                        func(X, xsq, batch, Phi, factor, t, eta)
                return steps

            runs = {"read one block (limit)": read, "compiled step": step(compiled),
                    "NumPy step": step(gp_module._numpy_step)}
            for run in runs.values():
                run()  # warm: caches, page faults, the compiled kernel
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
    print(f"(best of {args.rounds} rounds of {len(batches)} batches; load average "
          f"{os.getloadavg()})")


if __name__ == "__main__":
    main()
