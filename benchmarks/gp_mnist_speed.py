"""GPLandmarks on MNIST: speed, accuracy, and the speed-up over a literal Algorithm 1.

Issue 2's benchmark. In one run it measures

1. GP landmarks at the paper's settings (1000 steps, batch 1000) on 50,000 MNIST
   training images (pixels / 255): total seconds, seconds per landmark against the
   landmark index, and the test accuracy of an L2 logistic regression on the
   landmark features (trained on the 50,000, lambda chosen on the next 10,000 from
   the paper's grid, tested on the official 10,000);
2. scikit-learn's ``KMeans(n_landmarks, n_init=1)`` on the same images, timed and
   scored the same way (its centres as landmarks, the same kernel width);
3. a literal transcription of Algorithm 1 (M formed as a b x b matrix, eq. 10
   evaluated from it) against the library on a smaller setting: the speed ratio;
4. with ``--widths auto variance``, both kernel-width rules side by side.

Usage::

    python benchmarks/gp_mnist_speed.py            # quick: 10,000 images, 20 landmarks
    python benchmarks/gp_mnist_speed.py --full     # the issue's setting (100 landmarks)
"""

import argparse
import time
from pathlib import Path

import numpy as np

from landmarking import GPLandmarks
from landmarking.datasets import load_mnist
from landmarking.evaluation import select_by_validation
from landmarking.kernels import gaussian_features
from landmarking.landmarks.gp import step_size


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
    args = parser.parse_args()

    n_train, n_landmarks = (50000, 100) if args.full else (10000, 20)
    X, y = load_mnist(split="train")
    X_test, y_test = load_mnist(split="test")
    splits = ((X[:n_train], y[:n_train]), (X[50000:60000], y[50000:60000]), (X_test, y_test))
    X_train = splits[0][0]
    print(f"MNIST: {n_train} training images, {n_landmarks} landmarks, 1000 steps, batch 1000")

    rows, per_landmark = [], {}
    for width in args.widths:
        width = width if width in ("auto", "variance") else float(width)
        start = time.perf_counter()
        gp = GPLandmarks(n_landmarks=n_landmarks, kernel_width=width,
                         random_state=args.seed).fit(X_train)
        seconds = time.perf_counter() - start
        accuracy, lam = classify(gp.landmarks_, gp.kernel_width_, splits)
        rows.append((f"GP ({width})", seconds, accuracy, lam, gp.kernel_width_))
        per_landmark[f"GP ({width})"] = gp.landmark_seconds_
    eta = rows[0][4]

    from sklearn.cluster import KMeans

    start = time.perf_counter()
    km = KMeans(n_landmarks, n_init=1, random_state=args.seed).fit(X_train)
    seconds = time.perf_counter() - start
    accuracy, lam = classify(km.cluster_centers_, eta, splits)
    rows.append((f"KMeans({n_landmarks}, n_init=1)", seconds, accuracy, lam, eta))

    print(f"\n{'method':<26} {'seconds':>9} {'test acc':>9} {'lambda':>8} {'width':>8}")
    for name, seconds, accuracy, lam, width in rows:
        print(f"{name:<26} {seconds:>9.1f} {accuracy:>9.4f} {lam:>8g} {width:>8.3g}")
    print(f"GP / KMeans time: {rows[0][1] / rows[-1][1]:.2f}")

    first = per_landmark[rows[0][0]]
    print("\nseconds per landmark against landmark index (" + rows[0][0] + "):")
    marks = sorted(set([0, 1, 4, 9] + list(range(19, n_landmarks, 20)) + [n_landmarks - 1]))
    print("  " + "  ".join(f"#{k + 1}: {first[k]:.3f}" for k in marks if k < n_landmarks))

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


if __name__ == "__main__":
    main()
