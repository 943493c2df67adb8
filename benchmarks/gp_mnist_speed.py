"""GPLandmarks on MNIST: speed, accuracy, and the speed-up over a literal Algorithm 1.

Issues 2 and 12. In one run it measures

0. the memory-bandwidth limit of a step: the seconds to read one batch-sized
   block (b x d of the training images' dtype) that is not in cache, with a
   one-line NumPy read, over 50 consecutive blocks; the compiled numba kernel's
   cold first call (compiled from scratch, in a subprocess) and its load from
   numba's cache;

1. GP landmarks at the paper's settings (1000 steps, batch 1000) on 50,000 MNIST
   training images (pixels / 255): total seconds, seconds per landmark against the
   landmark index, and the test accuracy of an L2 logistic regression on the
   landmark features (trained on the 50,000, lambda chosen on the next 10,000 from
   the paper's grid, tested on the official 10,000);
2. scikit-learn's ``KMeans(n_landmarks, n_init=1)`` on the same images, timed and
   scored the same way (its centres as landmarks, the same kernel width);
3. a literal transcription of Algorithm 1 (M formed as a b x b matrix, eq. 10
   evaluated from it) against the library on a smaller setting: the speed ratio;
4. with ``--widths auto variance``, both kernel-width rules side by side;
5. today's NumPy step (issue 2's, kept for CSR input and as the reference) on the
   first ``--numpy-landmarks`` landmarks: seconds per step against the compiled
   step, and the largest relative difference of the landmarks.

The GP fit, KMeans and the NumPy-step fit run back to back; the load average is
printed beside the numbers. Run timed figures under the benchmark lock::

    flock /tmp/landmarking-bench.lock python benchmarks/gp_mnist_speed.py --full

Usage::

    python benchmarks/gp_mnist_speed.py            # quick: 10,000 images, 20 landmarks
    python benchmarks/gp_mnist_speed.py --full     # the issue's setting (100 landmarks)
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from landmarking import GPLandmarks
from landmarking.datasets import load_mnist
from landmarking.evaluation import select_by_validation
from landmarking.gp import _numpy as gp_module
from landmarking.gp.objective import step_size
from landmarking.kernels import gaussian_features

_COLD = ("import time, numba, numpy, landmarking; t = time.perf_counter(); "
         "from landmarking.gp import _kernels as K; "
         "[f(d) for f in (K.compiled_batch_step, K.compiled_visit_steps) "
         "for d in (numpy.float32, numpy.float64)]; print(time.perf_counter() - t)")


def kernel_start_seconds():
    """(compile from scratch, load from numba's cache) of the step kernel, each in
    a fresh interpreter with numba and landmarking already imported."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        times = [float(subprocess.run([sys.executable, "-c", _COLD], env=env, check=True,
                                      capture_output=True, text=True).stdout)
                 for _ in range(2)]
    return times[0], times[1]


def bandwidth(X, batch_size, repeats=3):
    """Seconds to read one batch-sized block not in cache (b x d, X's dtype).

    Reads 50 consecutive blocks (more than the last-level cache) with
    ``np.add.reduce(block, axis=0)``, ``repeats`` times; returns the best mean."""
    n_blocks = min(50, len(X) // batch_size)
    blocks = [X[i * batch_size:(i + 1) * batch_size] for i in range(n_blocks)]
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for block in blocks:
            np.add.reduce(block, axis=0)
        best = min(best, (time.perf_counter() - start) / n_blocks)
    return best


def numpy_step_fit(X, **params):
    """GPLandmarks with today's NumPy step (the path CSR input takes)."""
    compiled = gp_module._batch_step
    gp_module._batch_step = lambda n_features, batch_size: gp_module._numpy_step
    try:
        return GPLandmarks(**params).fit(X)
    finally:
        gp_module._batch_step = compiled


def literal_algorithm1(X, n_landmarks, eta, n_steps, batch_size, seed, s0=10.0, tau=0.51):
    """Algorithm 1 as printed: a fresh random batch, M = I - Phi (Phi^T Phi)^-1 Phi^T
    formed explicitly, f and eq. 10 from M, and the same scale-free step."""
    rng = np.random.default_rng(seed)
    mean, std = X.mean(axis=0), X.std(axis=0)
    landmarks = []
    for _ in range(n_landmarks):
        t = mean + std * rng.standard_normal(X.shape[1])
        for s in range(1, n_steps + 1):
            B = X[rng.choice(len(X), batch_size, replace=False)].astype(np.float64)
            phi = np.exp(-np.sum((B - t) ** 2, axis=1) / eta)
            M = np.eye(batch_size)
            if landmarks:
                Phi = np.exp(-((B[:, None, :] - np.array(landmarks)[None]) ** 2).sum(-1) / eta)
                M -= Phi @ np.linalg.pinv(Phi.T @ Phi) @ Phi.T
            u = M @ phi
            f = phi @ u
            grad = -(4.0 / eta) * (t * f - B.T @ (phi * u))
            if f > 0:
                t = t + step_size(s, s0, tau) * eta / (4 * f) * grad
        landmarks.append(t)
    return np.array(landmarks)


def classify(landmarks, eta, splits):
    (X_tr, y_tr), (X_va, y_va), (X_te, y_te) = splits
    feats = [gaussian_features(X, landmarks.astype(X.dtype), eta) for X in (X_tr, X_va, X_te)]
    result = select_by_validation(feats[0], y_tr, feats[1], y_va, feats[2], y_te)
    return result.test_accuracy, result.best_lambda


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="the issue's full setting")
    parser.add_argument("--widths", nargs="+", default=["auto"],
                        help="kernel-width rules to compare (auto, variance or numbers)")
    parser.add_argument("--out", default="benchmarks/output", help="folder for the PNG")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--numpy-landmarks", type=int, default=10,
                        help="landmarks fitted with today's NumPy step (0: skip)")
    parser.add_argument("--no-accuracy", action="store_true",
                        help="skip the logistic regressions")
    parser.add_argument("--no-literal", action="store_true",
                        help="skip the literal Algorithm 1")
    args = parser.parse_args()

    n_train, n_landmarks = (50000, 100) if args.full else (10000, 20)
    X, y = load_mnist(split="train")
    X_test, y_test = load_mnist(split="test")
    splits = ((X[:n_train], y[:n_train]), (X[50000:60000], y[50000:60000]), (X_test, y_test))
    X_train = splits[0][0]
    print(f"MNIST: {n_train} training images, {n_landmarks} landmarks, 1000 steps, batch 1000")
    print(f"load average before: {os.getloadavg()}")
    cold, cached = kernel_start_seconds()
    print(f"step kernel: first call compiles in {cold:.2f} s (both precisions); "
          f"later processes load it from numba's cache in {cached:.2f} s")
    from landmarking.gp import _kernels as _gp_kernels  # loaded before the timed fits

    for compile_kernel in (_gp_kernels.compiled_batch_step, _gp_kernels.compiled_visit_steps):
        compile_kernel(X_train.dtype)

    b, d = 1000, X_train.shape[1]
    read = bandwidth(X_train, b)
    batch_bytes = b * d * X_train.itemsize
    # Per step the batch is read at least once, plus its rows of Phi (k values each;
    # k averages n_landmarks / 2 over the fit); the O(k^2) solve is negligible.
    phi_bytes = b * (n_landmarks - 1) / 2 * X_train.itemsize
    limit = read * (batch_bytes + phi_bytes) / batch_bytes
    print(f"bandwidth: one {b} x {d} block ({batch_bytes / 1e6:.2f} MB) read in "
          f"{read * 1e6:.0f} us = {batch_bytes / read / 1e9:.2f} GB/s; limit per step "
          f"(batch + mean Phi rows, {phi_bytes / 1e6:.2f} MB) {limit * 1e6:.0f} us")

    rows, per_landmark = [], {}
    for width in args.widths:
        width = width if width in ("auto", "variance") else float(width)
        start, cpu = time.perf_counter(), time.process_time()
        gp = GPLandmarks(n_landmarks=n_landmarks, kernel_width=width,
                         random_state=args.seed).fit(X_train)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        accuracy, lam = (np.nan, np.nan) if args.no_accuracy else classify(
            gp.landmarks_, gp.kernel_width_, splits)
        rows.append((f"GP ({width})", seconds, cpu, accuracy, lam, gp.kernel_width_))
        per_landmark[f"GP ({width})"] = gp.landmark_seconds_
        if len(rows) == 1:
            first_gp = gp
    eta = rows[0][5]

    from sklearn.cluster import KMeans

    start, cpu = time.perf_counter(), time.process_time()
    km = KMeans(n_landmarks, n_init=1, random_state=args.seed).fit(X_train)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    accuracy, lam = (np.nan, np.nan) if args.no_accuracy else classify(
        km.cluster_centers_, eta, splits)
    rows.append((f"KMeans({n_landmarks}, n_init=1)", seconds, cpu, accuracy, lam, eta))

    n_ref = min(args.numpy_landmarks, n_landmarks)
    if n_ref:
        ref = numpy_step_fit(X_train, n_landmarks=n_ref, kernel_width=eta,
                             random_state=args.seed)
        fast_step = first_gp.landmark_seconds_[:n_ref].sum() / (n_ref * 1000)
        numpy_step = ref.landmark_seconds_.sum() / (n_ref * 1000)
        diff = (np.abs(ref.landmarks_ - first_gp.landmarks_[:n_ref]).max()
                / np.abs(ref.landmarks_).max())
    print(f"load average after: {os.getloadavg()}")

    # KMeans runs threaded (all cores), GP on one thread: the wall-time ratio is the
    # issue's measure; CPU seconds (all threads) are printed beside it.
    print(f"\n{'method':<26} {'seconds':>9} {'CPU s':>9} {'test acc':>9} {'lambda':>8} "
          f"{'width':>8}")
    for name, seconds, cpu, accuracy, lam, width in rows:
        print(f"{name:<26} {seconds:>9.1f} {cpu:>9.1f} {accuracy:>9.4f} {lam:>8g} "
              f"{width:>8.3g}")
    print(f"GP / KMeans time: {rows[0][1] / rows[-1][1]:.2f} (CPU seconds: "
          f"{rows[0][2] / rows[-1][2]:.2f})")
    per_step = first_gp.landmark_seconds_.sum() / (n_landmarks * 1000)
    print(f"GP seconds per step (all {n_landmarks} landmarks): {per_step * 1e6:.0f} us = "
          f"{per_step / limit:.2f} x the bandwidth limit ({limit * 1e6:.0f} us)")
    if n_ref:
        print(f"first {n_ref} landmarks: compiled step {fast_step * 1e6:.0f} us, today's "
              f"NumPy step {numpy_step * 1e6:.0f} us (NumPy / compiled "
              f"{numpy_step / fast_step:.2f}); largest landmark difference, relative to "
              f"the largest value: {diff:.1e}")

    first = per_landmark[rows[0][0]]
    print("\nseconds per landmark against landmark index (" + rows[0][0] + "):")
    marks = sorted(set([0, 1, 4, 9] + list(range(19, n_landmarks, 20)) + [n_landmarks - 1]))
    print("  " + "  ".join(f"#{k + 1}: {first[k]:.3f}" for k in marks if k < n_landmarks))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, seconds in per_landmark.items():
        ax.plot(np.arange(1, len(seconds) + 1), seconds, label=name)
    ax.set_xlabel("landmark index")
    ax.set_ylabel("seconds")
    ax.set_title("GPLandmarks on MNIST: time per landmark")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "gp_mnist_seconds_per_landmark.png", dpi=110)
    print(f"wrote {out / 'gp_mnist_seconds_per_landmark.png'}")

    if not args.no_literal:
        # The literal transcription against the library on a smaller setting.
        small = dict(n_landmarks=10, n_steps=200, batch_size=1000)
        X_small = X[:10000]
        lib = GPLandmarks(**small, kernel_width=eta, random_state=args.seed)
        start = time.perf_counter()
        lib.fit(X_small)
        lib_seconds = time.perf_counter() - start
        start = time.perf_counter()
        literal_algorithm1(X_small, small["n_landmarks"], eta, small["n_steps"],
                           small["batch_size"], args.seed)
        literal_seconds = time.perf_counter() - start
        print(f"\nLiteral Algorithm 1 vs library (10 landmarks, 200 steps, batch 1000, "
              f"10,000 images): {literal_seconds:.1f} s vs {lib_seconds:.2f} s, "
              f"speed-up {literal_seconds / lib_seconds:.0f}x")


if __name__ == "__main__":
    main()
