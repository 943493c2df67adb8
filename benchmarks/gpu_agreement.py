"""How far the CUDA landmarks are from the NumPy path's, landmark by landmark.

``benchmarks/gpu.py`` found the CUDA fit of MNIST 50,000 x 100 landmarks (float32,
paper settings) 1.1 of the largest value away from the NumPy fit, while the CUDA
tests (5 landmarks on a small roll) agree to round-off. This script tells a bug
from the sequential method's sensitivity to round-off: the same fit on CUDA and with
NumPy in float64 and float32 (CUDA graphs on and off), the difference of each
landmark (max |t_cuda - t_numpy| / max |T|) at landmarks 1, 2, 5, 10, 20, ..., and,
for the float32 fits of all 100 landmarks, what a user measures: the held-out mean
log posterior variance and the test accuracy of logistic regression on the
features (lambda from ``--lambdas`` chosen on images 50,000-59,999).

A bug shows as a large difference from the first landmarks on, or as worse
held-out figures; round-off shows as a difference that starts at the precision's
round-off and grows landmark by landmark, with equal held-out figures.

Needs a CUDA GPU (run through the device tool)::

    python benchmarks/gpu_agreement.py
"""

import argparse
import time

import numpy as np
from _machine import full_speed_blas, machine_line
from gp_mnist_speed import classify_lambdas, heldout_objective

from landmarking import GPLandmarks
from landmarking.datasets import load_mnist
from landmarking.gp import _torch as gp_torch

CHECKPOINTS = (1, 2, 3, 5, 10, 20, 50, 100)


def fit(X, device, n_landmarks, dtype, seed, graphs=True):
    """(landmarks, kernel width, seconds) of a GP fit at the paper's settings."""
    gp_torch.CUDA_GRAPHS = graphs
    gp = GPLandmarks(n_landmarks=n_landmarks, n_steps=1000, batch_size=1000, block_size=1,
                     random_state=seed, device=device)
    start = time.perf_counter()
    gp.fit(X.astype(dtype))
    return gp.landmarks_, gp.kernel_width_, time.perf_counter() - start


def drift(a, b):
    """Difference of each landmark, relative to the largest value of ``b``."""
    return np.abs(a - b).max(axis=1) / np.abs(b).max()


def main():
    full_speed_blas()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", type=int, default=20,
                        help="landmarks of the float64 and graphs-off comparisons")
    parser.add_argument("--lambdas", type=float, nargs="+", default=[0.01, 0.1, 1.0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    X, y = load_mnist(split="train")
    X_test, y_test = load_mnist(split="test")
    splits = ((X[:50000], y[:50000]), (X[50000:], y[50000:]), (X_test, y_test))
    X_train = X[:50000]
    print(f"MNIST 50,000 x 784; {machine_line()}", flush=True)
    fit(X_train[:2000], "cuda", 2, np.float32, 0)  # CUDA context, compiled kernels

    print(f"\ndifference of landmark j, CUDA vs NumPy, relative to the largest value "
          f"(landmarks {', '.join(map(str, CHECKPOINTS))}):", flush=True)
    runs = [("float64", np.float64, args.short, True),
            ("float32, graphs off", np.float32, args.short, False),
            ("float32", np.float32, 100, True)]
    for name, dtype, n, graphs in runs:
        on_numpy, width, numpy_s = fit(X_train, "cpu", n, dtype, args.seed)
        on_cuda, _, cuda_s = fit(X_train, "cuda", n, dtype, args.seed, graphs)
        d = drift(on_cuda, on_numpy)
        shown = " ".join(f"{d[j - 1]:.1e}" for j in CHECKPOINTS if j <= n)
        print(f"  {name:<20} {shown}   (NumPy {numpy_s:.1f} s, CUDA {cuda_s:.1f} s)",
              flush=True)
        if n == 100:
            print("\n  float32, 100 landmarks   held-out objective   test accuracy (lambda)")
            for label, T in (("NumPy", on_numpy), ("CUDA", on_cuda)):
                held = heldout_objective(T, width, splits[1][0])
                accuracy, lam = classify_lambdas(T, width, splits, args.lambdas)
                print(f"  {label:<24} {held:>18.4f}   {accuracy:.4f} ({lam:g})", flush=True)
    gp_torch.CUDA_GRAPHS = True
    print(f"\nafter: {machine_line()}")


if __name__ == "__main__":
    main()
