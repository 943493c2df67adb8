"""GPLandmarks on MNIST: speed, accuracy, and the speed-up over a literal Algorithm 1.

Issues 2 and 12. In one run it measures

0. the memory-bandwidth limit of a step: the seconds to read one batch-sized
   block (b x d of the training images' dtype) that is not in cache, with a
   one-line NumPy read, over 50 consecutive blocks;

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
5. the NumPy reference step (the step of CSR input, and what the compiled step is
   tested against) on the first ``--numpy-landmarks`` landmarks: seconds per step
   against the compiled step, and the largest relative difference of the
   landmarks.

The GP fit, KMeans and the NumPy-step fit run back to back; the load average is
printed beside the numbers. Run timed figures under the benchmark lock::

    flock /tmp/landmarking-bench.lock python benchmarks/gp_mnist_speed.py --full

Usage::

    python benchmarks/gp_mnist_speed.py            # quick: 10,000 images, 20 landmarks
    python benchmarks/gp_mnist_speed.py --full     # the issue's setting (100 landmarks)

Blocks (issue 23), ``--blocks``: on MNIST 50,000 (float32, pixels / 255), 100
landmarks, batch 1000, in one run per seed: ``GPLandmarks(block_size=B,
n_steps=S, n_jobs=J)``, ``KMeans(100, n_init=1)`` and ``MiniBatchKMeans(100)``
(and with ``--sequential`` the sequential fit, 1000 steps), each timed and scored
by the test accuracy of an L2 logistic regression on the Gaussian features
(lambda chosen on images 50,000-59,999 from ``--lambdas``); before them the
machine's two-core read bandwidth and float32 GEMM rate, and after them the time
per block step against both. ``--sweep`` instead fits every B of ``--sweep-blocks``
with every S of ``--sweep-steps`` (one seed): seconds, accuracy and the held-out
objective (the mean log posterior variance of the landmarks, in order, on images
50,000-59,999)::

    python benchmarks/gp_mnist_speed.py --blocks --block-size 10 --block-steps 300 --seeds 0 1 2
    python benchmarks/gp_mnist_speed.py --sweep --sweep-blocks 1 2 5 10 20 50 --sweep-steps 100 300

Against another checkout, ``--compare-with SRC`` (its ``src`` folder, e.g. main's):
the default fit (``GPLandmarks(n_landmarks=100)``: blocks of 50, 100 steps, every
core) and the sequential fit (``block_size=1``, 1000 steps, ``--compare-sequential``
landmarks) on MNIST 50,000 (float32, a fixed kernel width), each in a new
interpreter with this checkout's sources and then with SRC's, back to back, after
a warm-up fit in the same interpreter (numba's cache, if SRC uses numba, is warm
from the first round on). Wall and CPU seconds, the load average before each fit,
and per fit kind the ratio of the medians (this checkout / SRC) and the largest
difference of the landmarks, relative to their largest value::

    python benchmarks/gp_mnist_speed.py --compare-with ../main/src --repeats 3
"""

import json
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import (
    argument_parser,
    heldout_objective,
    machine_line,
    mnist_splits,
    parse,
    pyplot,
    run_child,
    timed,
    validated_accuracy,
)

from landmarking import GPLandmarks
from landmarking.gp import _cpu as gp_module
from landmarking.gp.objective import step_size

# One warm fit in a new interpreter (``--compare-with``): a warm-up fit, then the
# timed one; prints its seconds (wall, CPU), the load average before it and a file
# with its landmarks.
_COMPARED_FIT = """
import json, os, sys, time
import numpy as np
from landmarking import GPLandmarks
from landmarking.datasets import load_mnist
X = load_mnist(split="train")[0][:50000]
params = json.loads(sys.argv[1])
warm = dict(params, n_landmarks=min(params["n_landmarks"], 4), n_steps=20)
GPLandmarks(random_state=1, kernel_width=40.0, **warm).fit(X[:5000])
load = os.getloadavg()[0]
wall, cpu = time.perf_counter(), time.process_time()
gp = GPLandmarks(random_state=0, kernel_width=40.0, **params).fit(X)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
np.save(sys.argv[2], gp.landmarks_)
print(json.dumps(dict(wall=wall, cpu=cpu, load=load)))
"""


def compare_with(args):
    """This checkout's default and sequential fits against SRC's, back to back."""
    fits = {"default (blocks of 50)": dict(n_landmarks=100),
            f"sequential ({args.compare_sequential} landmarks)":
                dict(n_landmarks=args.compare_sequential, block_size=1, n_steps=1000)}
    here = str(Path(__file__).resolve().parents[1] / "src")
    sources = {"this": here, "other": str(Path(args.compare_with).resolve())}
    print(f"this checkout: {here}; other: {sources['other']}")
    print(f"before: {machine_line()}", flush=True)
    results = {(fit, which): [] for fit in fits for which in sources}
    landmarks = {}
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(args.repeats):
            for fit, params in fits.items():
                for which, src in sources.items():
                    path = Path(folder) / f"{len(landmarks)}.npy"
                    row = run_child(_COMPARED_FIT, json.dumps(params), path, src=src)
                    results[(fit, which)].append(row)
                    landmarks[(fit, which)] = np.load(path)
                    print(f"round {repeat + 1}: {fit:<28} {which:<5} wall {row['wall']:7.2f} s  "
                          f"CPU {row['cpu']:7.2f} s  (load {row['load']:.2f})", flush=True)
    print(f"after: {machine_line()}")
    print("\n| fit | this: wall s (median) | other: wall s | ratio | this: CPU s | other: CPU s "
          "| ratio | landmarks differ by |")
    print("|---|---|---|---|---|---|---|---|")
    for fit in fits:
        this, other = results[(fit, "this")], results[(fit, "other")]
        w = [np.median([r["wall"] for r in rows]) for rows in (this, other)]
        c = [np.median([r["cpu"] for r in rows]) for rows in (this, other)]
        a, b = landmarks[(fit, "this")], landmarks[(fit, "other")]
        diff = np.abs(a - b).max() / np.abs(b).max()
        print(f"| {fit} | {w[0]:.2f} | {w[1]:.2f} | {w[0] / w[1]:.3f} | {c[0]:.2f} | {c[1]:.2f} "
              f"| {c[0] / c[1]:.3f} | {diff:.1e} |")


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
    """GPLandmarks with the NumPy reference step (the path CSR input takes)."""
    compiled = gp_module._compiled_steps
    gp_module._compiled_steps = lambda n_threads: None
    try:
        return GPLandmarks(**params).fit(X)
    finally:
        gp_module._compiled_steps = compiled


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




def read_bandwidth(X, batch_size, threads=2, repeats=3):
    """Bytes per second read by ``threads`` threads at once, each summing its own
    batch-sized blocks (50 blocks in all, more than the last-level cache)."""
    from concurrent.futures import ThreadPoolExecutor

    n_blocks = min(50, len(X) // batch_size)
    blocks = [X[i * batch_size:(i + 1) * batch_size] for i in range(n_blocks)]

    def read(part):
        for block in part:
            np.add.reduce(block, axis=0)

    parts = [blocks[i::threads] for i in range(threads)]
    best = np.inf
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(read, parts))
            best = min(best, time.perf_counter() - start)
    return n_blocks * blocks[0].nbytes / best


def gemm_rate(n=2000, repeats=3):
    """float32 GEMM rate (flop/s) of NumPy's BLAS on all its threads (n x n x n)."""
    rng = np.random.default_rng(0)
    A, B = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    A @ B
    best = min(timed(np.matmul, A, B)[0] for _ in range(repeats))
    return 2 * n**3 / best








def blocks_main(args):
    """The issue-23 benchmark (see the module docstring)."""
    from sklearn.cluster import KMeans, MiniBatchKMeans

    splits = mnist_splits(50000)
    X_train, X_val = splits[0][0], splits[1][0]
    n_landmarks, b = 100, 1000
    print(f"MNIST 50,000 x {X_train.shape[1]} {X_train.dtype}, {n_landmarks} landmarks, batch {b}; "
          f"lambda from {args.lambdas} on images 50,000-59,999")
    print(f"before: {machine_line()}", flush=True)
    bandwidth2 = read_bandwidth(X_train, b, threads=2)
    bandwidth1 = read_bandwidth(X_train, b, threads=1)
    flops = gemm_rate()
    print(f"read bandwidth: {bandwidth1 / 1e9:.2f} GB/s on one core, {bandwidth2 / 1e9:.2f} "
          f"GB/s on two; float32 GEMM (2000^3, all BLAS threads): {flops / 1e9:.1f} GFLOP/s",
          flush=True)
    # Warm the compiled loops and the thread pool before the timed fits.
    small = X_train[:3000]
    GPLandmarks(n_landmarks=4, n_steps=20, block_size=2, random_state=0).fit(small)
    GPLandmarks(n_landmarks=2, n_steps=20, random_state=0).fit(small)

    def gp_fit(seed, block_size, n_steps, n_jobs=args.n_jobs[0]):
        gp = GPLandmarks(n_landmarks=n_landmarks, n_steps=n_steps, batch_size=b,
                         block_size=block_size, n_jobs=n_jobs, random_state=seed)
        seconds = timed(gp.fit, X_train)[0]
        return gp, seconds

    if args.sweep:
        print(f"\nsweep (seed {args.seeds[0]}, n_jobs={args.n_jobs[0]}):")
        print(f"{'B':>4} {'steps/block':>11} {'seconds':>8} {'test acc':>9} {'lambda':>7} "
              f"{'held-out obj':>12}", flush=True)
        for block_size in args.sweep_blocks:
            for n_steps in args.sweep_steps:
                gp, seconds = gp_fit(args.seeds[0], block_size, n_steps)
                accuracy, lam = validated_accuracy(gp.landmarks_, gp.kernel_width_, splits,
                                                 args.lambdas)
                held_out = heldout_objective(gp.landmarks_, gp.kernel_width_, X_val)
                print(f"{block_size:>4} {n_steps:>11} {seconds:>8.2f} {accuracy:>9.4f} "
                      f"{lam:>7g} {held_out:>12.4f}", flush=True)
        print(f"after: {machine_line()}")
        return

    rows = {}
    for seed in args.seeds:
        fits = []
        for block_steps in args.block_steps:
            for n_jobs in args.n_jobs:
                # The same landmarks on any number of threads: timed for each.
                gp, seconds = gp_fit(seed, args.block_size, block_steps, n_jobs)
                fits.append((f"GP B={args.block_size} S={block_steps} n_jobs={n_jobs}",
                             gp.landmarks_, seconds))
        eta = gp.kernel_width_
        if args.sequential:
            seq, seq_seconds = gp_fit(seed, 1, 1000)
            fits.append(("GP sequential (1000 steps)", seq.landmarks_, seq_seconds))
        for name, model in ((f"KMeans({n_landmarks}, n_init=1)",
                             KMeans(n_landmarks, n_init=1, random_state=seed)),
                            (f"MiniBatchKMeans({n_landmarks})",
                             MiniBatchKMeans(n_landmarks, random_state=seed))):
            start = time.perf_counter()
            model.fit(X_train)
            fits.append((name, model.cluster_centers_, time.perf_counter() - start))
        if args.baselines:
            from landmarking import ActiveLearningLandmarks, RandomLandmarks, RPCholeskyLandmarks

            for model in (RPCholeskyLandmarks(n_landmarks=n_landmarks, random_state=seed),
                          ActiveLearningLandmarks(n_landmarks=n_landmarks, random_state=seed),
                          RandomLandmarks(n_landmarks=n_landmarks, random_state=seed)):
                start = time.perf_counter()
                model.fit(X_train)
                fits.append((type(model).__name__, model.landmarks_,
                             time.perf_counter() - start))
        scored = {}
        for name, landmarks, secs in fits:
            key = landmarks.tobytes()  # the block fits on 1 and 2 threads: the same bits
            if key not in scored:
                scored[key] = ((np.nan, np.nan) if args.no_accuracy else
                               validated_accuracy(landmarks, eta, splits, args.lambdas))
            accuracy, lam = scored[key]
            rows.setdefault(name, []).append((secs, accuracy, lam))
            print(f"seed {seed}: {name:<28} {secs:8.2f} s  test accuracy {accuracy:.4f} "
                  f"(lambda {lam:g})", flush=True)
    print(f"after: {machine_line()}")
    print(f"\n| method | seconds (mean of {len(args.seeds)}) | test accuracy (mean) | per seed |")
    print("|---|---|---|---|")
    for name, values in rows.items():
        secs, accs = np.mean([v[0] for v in values]), np.mean([v[1] for v in values])
        print(f"| {name} | {secs:.2f} | {accs:.4f} | "
              + ", ".join(f"{v[0]:.2f} s {v[1]:.4f}" for v in values) + " |")
    names = list(rows)
    km_name = next(n for n in names if n.startswith("KMeans"))
    mbk_name = next(n for n in names if n.startswith("MiniBatch"))
    km_s, km_a = (np.mean([v[i] for v in rows[km_name]]) for i in (0, 1))
    mbk_s = np.mean([v[0] for v in rows[mbk_name]])
    print()
    for name in names:
        if not name.startswith("GP"):
            continue
        gp_s, gp_a = (np.mean([v[i] for v in rows[name]]) for i in (0, 1))
        print(f"{name}: / KMeans time {gp_s / km_s:.3f} (target <= 0.2); / MiniBatchKMeans "
              f"time {gp_s / mbk_s:.2f} (moonshot <= 1); accuracy - KMeans "
              f"{100 * (gp_a - km_a):+.2f} points (target >= -0.1)")
    first = f"GP B={args.block_size} S={args.block_steps[0]} n_jobs="
    gp_s = min(np.mean([v[0] for v in rows[name]]) for name in names if name.startswith(first))
    n_blocks = -(-n_landmarks // args.block_size)
    per_step = gp_s / (n_blocks * args.block_steps[0])
    B, d = args.block_size, X_train.shape[1]
    batch_bytes = b * d * X_train.itemsize
    # Per step: the batch once (b x d), its rows of the kernel table (b x k, k the
    # earlier landmarks: n_landmarks / 2 on average); flops: the distances and the
    # weighted sums (2 b d B each) and the projection on the earlier span (4 b k B).
    step_bytes = batch_bytes + b * (n_landmarks / 2) * X_train.itemsize
    step_flops = 4 * b * d * B + 4 * b * (n_landmarks / 2) * B
    print(f"time per block step (whole fit / steps, S={args.block_steps[0]}, the faster n_jobs): "
          f"{per_step * 1e6:.0f} us; reading its {step_bytes / 1e6:.2f} MB "
          f"at the two-core bandwidth takes {step_bytes / bandwidth2 * 1e6:.0f} us "
          f"({per_step * bandwidth2 / step_bytes:.1f}x that), its {step_flops / 1e6:.1f} "
          f"Mflop at the GEMM rate {step_flops / flops * 1e6:.0f} us "
          f"({per_step * flops / step_flops:.1f}x that)")


def main():
    parser = argument_parser(__doc__, seeds=(0, 1, 2))
    parser.add_argument("--widths", nargs="+", default=["auto"],
                        help="kernel-width rules to compare (auto, variance or numbers)")
    parser.add_argument("--numpy-landmarks", type=int, default=10,
                        help="landmarks fitted with today's NumPy step (0: skip)")
    parser.add_argument("--no-accuracy", action="store_true",
                        help="skip the logistic regressions")
    parser.add_argument("--no-literal", action="store_true",
                        help="skip the literal Algorithm 1")
    parser.add_argument("--blocks", action="store_true",
                        help="the block benchmark of issue 23 (see the docstring)")
    parser.add_argument("--sweep", action="store_true", help="the block sweep of issue 23")
    parser.add_argument("--block-size", type=int, default=10)
    parser.add_argument("--block-steps", type=int, nargs="+", default=[300],
                        help="steps per block (each timed and scored; the first for the "
                             "time per step)")
    parser.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2],
                        help="threads of the block fits (each timed; the first for --sweep)")
    parser.add_argument("--sequential", action="store_true",
                        help="with --blocks, also the sequential fit")
    parser.add_argument("--baselines", action="store_true",
                        help="with --blocks, also RPCholesky, active learning and random")
    parser.add_argument("--lambdas", type=float, nargs="+", default=[0.01, 0.1, 1.0])
    parser.add_argument("--sweep-blocks", type=int, nargs="+", default=[1, 2, 5, 10, 20, 50])
    parser.add_argument("--sweep-steps", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--compare-with", metavar="SRC",
                        help="another checkout's src folder: time its default and sequential "
                             "fits against this one's, back to back (see the docstring)")
    parser.add_argument("--compare-sequential", type=int, default=100,
                        help="landmarks of the sequential fit of --compare-with")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of --compare-with")
    args = parse(parser, machine=False)
    if args.compare_with:
        return compare_with(args)
    if args.blocks or args.sweep:
        return blocks_main(args)

    n_train, n_landmarks = (50000, 100) if args.full else (10000, 20)
    splits = mnist_splits(n_train)
    X_train = splits[0][0]
    print(f"MNIST: {n_train} training images, {n_landmarks} landmarks, 1000 steps, batch 1000")
    print(f"before: {machine_line()}")
    # The kernels are compiled ahead of time: a small fit first loads them and the
    # thread pool lookups, so that the timed fits are warm.
    GPLandmarks(n_landmarks=2, n_steps=20, block_size=1, random_state=0).fit(X_train[:3000])

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
        # The paper's sequential algorithm (block_size=1, 1000 steps per landmark).
        gp = GPLandmarks(n_landmarks=n_landmarks, kernel_width=width, block_size=1,
                         n_steps=1000, random_state=args.seed).fit(X_train)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        accuracy, lam = (np.nan, np.nan) if args.no_accuracy else validated_accuracy(
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
    accuracy, lam = (np.nan, np.nan) if args.no_accuracy else validated_accuracy(
        km.cluster_centers_, eta, splits)
    rows.append((f"KMeans({n_landmarks}, n_init=1)", seconds, cpu, accuracy, lam, eta))

    n_ref = min(args.numpy_landmarks, n_landmarks)
    if n_ref:
        ref = numpy_step_fit(X_train, n_landmarks=n_ref, kernel_width=eta, block_size=1,
                             n_steps=1000, random_state=args.seed)
        fast_step = first_gp.landmark_seconds_[:n_ref].sum() / (n_ref * 1000)
        numpy_step = ref.landmark_seconds_.sum() / (n_ref * 1000)
        diff = (np.abs(ref.landmarks_ - first_gp.landmarks_[:n_ref]).max()
                / np.abs(ref.landmarks_).max())
    print(f"after: {machine_line()}")

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
        print(f"first {n_ref} landmarks: compiled step {fast_step * 1e6:.0f} us, the "
              f"NumPy reference step {numpy_step * 1e6:.0f} us (NumPy / compiled "
              f"{numpy_step / fast_step:.2f}); largest landmark difference, relative to "
              f"the largest value: {diff:.1e}")

    first = per_landmark[rows[0][0]]
    print("\nseconds per landmark against landmark index (" + rows[0][0] + "):")
    marks = sorted(set([0, 1, 4, 9] + list(range(19, n_landmarks, 20)) + [n_landmarks - 1]))
    print("  " + "  ".join(f"#{k + 1}: {first[k]:.3f}" for k in marks if k < n_landmarks))

    out = args.out
    plt = pyplot()
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
        X_small = X_train[:10000]
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
