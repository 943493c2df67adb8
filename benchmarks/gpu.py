"""The GPU path (issue 13): GP landmarks, landmark features and LLL on a torch device.

On a machine with a CUDA GPU (``torch.cuda.is_available()``), back to back in one
run:

1. GP landmarks on 50,000 MNIST training images (pixels / 255, float32) at the
   paper's settings (100 landmarks, 1000 steps, batch 1000): ``GPLandmarks(device=
   "cuda")`` against the NumPy CPU path and scikit-learn's ``KMeans(100, n_init=1)``
   on the CPU; seconds, seconds per step, the ratios, and the largest landmark
   difference between the devices (relative to the largest value); then the same
   in blocks (issue 23, the settings of ``gp_mnist_speed.py --blocks``: 100
   landmarks, ``block_size=50, n_steps=100`` and ``block_size=10, n_steps=300``),
   the NumPy block step on all cores;
2. where the GPU's time goes, from ``torch.profiler`` over a short fit: GPU kernel
   time (arithmetic), copies between host and device (transfers), the number of
   launches and their host-side cost, and the rest of the wall time (the GPU
   waiting for the host);
3. landmark features (``transform``) of 1,000,000 points (the MNIST images
   repeated) on the GPU against the NumPy CPU path, with the seconds split into
   the copy to the device, the arithmetic and the copy back for one block;
4. LLL on MNIST 60,000 at 451 landmarks on the GPU against the CPU, when
   ``LocallyLinearLandmarks`` has a ``device`` parameter (the LLL part of the issue).

``--agreement`` instead tells a bug from the sequential method's sensitivity to
round-off: the CUDA fit of MNIST 50,000 x 100 landmarks (float32, paper settings)
once landed 1.1 of the largest value away from the NumPy fit, while the CUDA tests
(5 landmarks on a small roll) agree to round-off. It runs the same fit on the
device and with NumPy in float64 and float32 (CUDA graphs on and off), prints the
difference of each landmark (max |t_device - t_numpy| / max |T|) at landmarks 1,
2, 5, 10, 20, ..., and, for the float32 fits of all 100 landmarks, what a user
measures: the held-out mean log posterior variance and the test accuracy of
logistic regression on the features (lambda from ``--lambdas`` chosen on images
50,000-59,999). A bug shows as a large difference from the first landmarks on, or
as worse held-out figures; round-off shows as a difference that starts at the
precision's round-off and grows landmark by landmark, with equal held-out figures.

Targets (the issue's): the GP fit at least 20x the CPU path and under 10 seconds.

Without a CUDA GPU the script says so and runs a small smoke on the CPU instead,
the torch path (``torch.device("cpu")``) against the NumPy path, so that every
part of the script runs; its figures say nothing about a GPU. ``--quick`` runs the
small sizes whatever the machine.

Timed runs go under the benchmark lock; the load average is printed beside the
numbers, and the compiled loops and torch are warmed up before anything is timed
(the cold first calls are reported separately)::

    flock /tmp/landmarking-bench.lock python benchmarks/gpu.py          # the issue's sizes
    flock /tmp/landmarking-bench.lock python benchmarks/gpu.py --quick  # a smoke
    python benchmarks/gpu.py --agreement                                # CUDA against NumPy

Prints tables; writes gpu_seconds.png to ``--out`` (default benchmarks/output).
"""

import os
import time

import numpy as np
from _common import (
    argument_parser,
    heldout_objective,
    machine_line,
    mnist_splits,
    parse,
    pyplot,
    validated_accuracy,
)

from landmarking import GPLandmarks

#: The landmarks whose difference ``--agreement`` prints.
CHECKPOINTS = (1, 2, 3, 5, 10, 20, 50, 100)


def parse_args(argv=None):
    parser = argument_parser(__doc__, size="quick")
    parser.add_argument("--no-lll", action="store_true", help="skip the LLL comparison")
    parser.add_argument("--no-kmeans", action="store_true", help="skip KMeans")
    parser.add_argument("--feature-rows", type=int, default=None,
                        help="rows of the landmark-feature pass (default 1,000,000; "
                             "100,000 with --quick)")
    parser.add_argument("--agreement", action="store_true",
                        help="instead: the device's landmarks against NumPy's, one by one")
    parser.add_argument("--short", type=int, default=20,
                        help="--agreement: landmarks of the float64 and graphs-off comparisons")
    parser.add_argument("--lambdas", type=float, nargs="+", default=[0.01, 0.1, 1.0],
                        help="--agreement: the logistic regression's lambdas")
    return parse(parser, argv, machine=False)


def load_data(n):
    """n MNIST training images (float32 in [0, 1]), or a synthetic stand-in."""
    try:
        from landmarking.datasets import load_mnist

        X, _ = load_mnist(split="train")
        return X[:n], "MNIST"
    except (OSError, ValueError) as exc:
        print(f"MNIST not found ({exc}); using a synthetic 784-D stand-in "
              "(set LANDMARKING_DATA for the real figures)")
        rng = np.random.default_rng(0)
        basis = rng.random((10, 784)).astype(np.float32)
        codes = rng.dirichlet(np.ones(10), size=n).astype(np.float32)
        return codes @ basis, "synthetic"


def synchronize(device):
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_fit(X, device, **params):
    """(fitted estimator, wall seconds) of a GP fit on ``device`` (None: NumPy path)."""
    gp = GPLandmarks(device="cpu" if device is None else device, **params)
    start = time.perf_counter()
    gp.fit(X)
    if device is not None:
        synchronize(device)
    return gp, time.perf_counter() - start


def profile_breakdown(X, device, **params):
    """Where the time of a short fit on ``device`` goes, from torch.profiler.

    Returns a dict: wall seconds, steps, device kernel seconds and count (CUDA),
    host-device copy seconds, launch calls and their host seconds, and the seconds
    spent inside torch operators on the host with their count.
    """
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        gp, wall = timed_fit(X, device, **params)
    out = dict(wall=wall, steps=int(gp.n_steps_.sum()), kernel=0.0, kernels=0,
               transfer=0.0, transfers=0, launch=0.0, launches=0, ops=0.0, n_ops=0)
    for evt in prof.events():
        seconds = evt.time_range.elapsed_us() / 1e6
        name = evt.name
        if getattr(evt, "device_type", None) == DeviceType.CUDA:
            if "memcpy" in name.lower() or "memset" in name.lower():
                out["transfer"] += seconds
                out["transfers"] += 1
            else:
                out["kernel"] += seconds
                out["kernels"] += 1
        elif name in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                      "cudaGraphLaunch"):
            out["launch"] += seconds
            out["launches"] += 1
        elif name.startswith("aten::") and evt.cpu_parent is None:
            out["ops"] += seconds
            out["n_ops"] += 1
    return out


def print_breakdown(b, device):
    steps = max(1, b["steps"])
    print(f"\nwhere the time goes ({device}, {steps} steps, torch.profiler; "
          f"wall {b['wall']:.2f} s = {b['wall'] / steps * 1e6:.0f} us per step):")
    if device.type == "cuda":
        busy = b["kernel"] + b["transfer"]
        print(f"  arithmetic: {b['kernels']} GPU kernels, {b['kernel']:.3f} s "
              f"({b['kernel'] / steps * 1e6:.1f} us per step)")
        print(f"  transfers:  {b['transfers']} copies, {b['transfer']:.3f} s")
        print(f"  launches:   {b['launches']} launch calls ({b['launches'] / steps:.2f} per "
              f"step), {b['launch']:.3f} s on the host")
        print(f"  GPU idle (waiting for the host): {max(0.0, b['wall'] - busy):.3f} s "
              f"({max(0.0, b['wall'] - busy) / b['wall']:.0%} of the wall time)")
    else:
        print(f"  torch operators: {b['n_ops']} ({b['n_ops'] / steps:.1f} per step; each "
              f"would be a launch on a GPU), {b['ops']:.3f} s inside them")
        print(f"  outside the operators (Python, the host loop): "
              f"{max(0.0, b['wall'] - b['ops']):.3f} s")
        print("  (no GPU here: no kernel or transfer times)")


def feature_sections(X, landmarks, width, device):
    """Seconds of one block's copy to the device, arithmetic and copy back."""
    import torch

    from landmarking._torch_kernels import squared_distances_torch

    times = {}
    synchronize(device)
    start = time.perf_counter()
    Xb = torch.as_tensor(X, device=device)
    T = torch.as_tensor(landmarks.astype(X.dtype), device=device)
    synchronize(device)
    times["to device"] = time.perf_counter() - start
    start = time.perf_counter()
    d2 = squared_distances_torch(Xb, T)
    features = torch.exp(d2 * (-1.0 / width))
    synchronize(device)
    times["arithmetic"] = time.perf_counter() - start
    start = time.perf_counter()
    features.cpu().numpy()
    times["to host"] = time.perf_counter() - start
    return times


def lll_comparison(X, device, quick, seed):
    """LLL on ``device`` against the NumPy path, if LLL has a device parameter."""
    from landmarking import LocallyLinearLandmarks

    if "device" not in LocallyLinearLandmarks().get_params():
        print("\nLLL: LocallyLinearLandmarks has no `device` parameter in this checkout "
              "(the LLL part of issue 13 is on another branch); skipped.")
        return None
    if quick:
        params = dict(n_components=2, n_landmarks=50, n_landmark_neighbors=10,
                      n_neighbors=10, random_state=seed)
        X = X[:2000]
    else:
        params = dict(n_components=50, n_landmarks=451, n_landmark_neighbors=50,
                      n_neighbors=200, bandwidth=200.0, random_state=seed)
    rows = []
    for name, dev in (("LLL, NumPy (CPU)", "cpu"), (f"LLL, torch ({device})", device)):
        start = time.perf_counter()
        est = LocallyLinearLandmarks(device=dev, **params).fit(X)
        rows.append((name, time.perf_counter() - start, est.embedding_))
    print(f"\nLLL on {len(X)} images, {params['n_landmarks']} landmarks:")
    for name, seconds, _ in rows:
        print(f"  {name:<28} {seconds:8.2f} s")
    print(f"  CPU / torch: {rows[0][1] / rows[1][1]:.2f}")
    return rows


def landmark_difference(fit, reference):
    """The largest landmark difference, relative to the reference's largest value."""
    return (np.abs(fit.landmarks_ - reference.landmarks_).max()
            / np.abs(reference.landmarks_).max())


def block_rows(X, device, settings, small):
    """GP landmarks in blocks (issue 23) on the device and on the NumPy CPU path (on
    all cores), at the settings of ``gp_mnist_speed.py --blocks`` (100 landmarks,
    batch 1000; B=50 x 100 steps and B=10 x 300 steps), or small ones; seconds,
    seconds per block step, and the largest landmark difference."""
    n_landmarks = 10 if small else 100
    cases = ((5, 40), (2, 60)) if small else ((50, 100), (10, 300))
    print(f"\nblocks: {n_landmarks} landmarks, batch 1000")
    print(f"{'block_size x n_steps':<22} {'device':<12} {'seconds':>9} {'us/step':>9} "
          f"{'diff':>9}")
    for block_size, n_steps in cases:
        params = dict(settings, n_landmarks=n_landmarks, n_steps=n_steps,
                      block_size=block_size)
        on_device, device_seconds = timed_fit(X, device, **params)
        numpy_fit, numpy_seconds = timed_fit(X, None, n_jobs=-1, **params)
        block_steps = n_steps * -(-n_landmarks // block_size)
        diff = landmark_difference(on_device, numpy_fit)
        case = f"{block_size} x {n_steps}"
        for name, seconds, shown in ((str(device), device_seconds, f"{diff:9.1e}"),
                                     ("NumPy (CPU)", numpy_seconds, "")):
            print(f"{case:<22} {name:<12} {seconds:9.2f} "
                  f"{seconds / block_steps * 1e6:9.0f} {shown:>9}")
        print(f"{case:<22} NumPy CPU / torch {device}: {numpy_seconds / device_seconds:.2f}")


def agreement_fit(X, device, n_landmarks, n_steps, dtype, seed, graphs=True):
    """(landmarks, kernel width, seconds) of a sequential GP fit (batch 1000) on
    ``device`` (None: the NumPy path), CUDA graphs on or off."""
    from landmarking.gp import _torch as gp_torch

    gp_torch.CUDA_GRAPHS = graphs
    try:
        gp, seconds = timed_fit(X.astype(dtype), device, n_landmarks=n_landmarks,
                                n_steps=n_steps, batch_size=1000, block_size=1,
                                random_state=seed)
    finally:
        gp_torch.CUDA_GRAPHS = True
    return gp.landmarks_, gp.kernel_width_, seconds


def agreement(args, device, small):
    """The device's landmarks against the NumPy path's, landmark by landmark, and
    the held-out figures of both (``--agreement``, see the docstring)."""
    n_train, n_long, n_short, n_steps = ((2000, 5, min(args.short, 3), 100) if small
                                         else (50000, 100, args.short, 1000))
    splits = mnist_splits(n_train)
    X_train = splits[0][0]
    label = "CUDA" if device.type == "cuda" else f"torch ({device})"
    print(f"MNIST {n_train:,} x 784, {n_steps} steps per landmark; {machine_line()}",
          flush=True)
    agreement_fit(X_train[:2000], device, 2, 20, np.float32, 0)  # the context, the kernels
    print(f"\ndifference of landmark j, {label} vs NumPy, relative to the largest value "
          f"(landmarks {', '.join(str(j) for j in CHECKPOINTS if j <= n_long)}):", flush=True)
    runs = [("float64", np.float64, n_short, True),
            ("float32, graphs off", np.float32, n_short, False),
            ("float32", np.float32, n_long, True)]
    for name, dtype, n, graphs in runs:
        on_numpy, width, numpy_s = agreement_fit(X_train, None, n, n_steps, dtype, args.seed)
        on_device, _, device_s = agreement_fit(X_train, device, n, n_steps, dtype, args.seed,
                                               graphs)
        drift = np.abs(on_device - on_numpy).max(axis=1) / np.abs(on_numpy).max()
        shown = " ".join(f"{drift[j - 1]:.1e}" for j in CHECKPOINTS if j <= n)
        print(f"  {name:<20} {shown}   (NumPy {numpy_s:.1f} s, {label} {device_s:.1f} s)",
              flush=True)
        if n == n_long:
            print(f"\n  float32, {n} landmarks   held-out objective   test accuracy (lambda)")
            for who, T in (("NumPy", on_numpy), (label, on_device)):
                held = heldout_objective(T, width, splits[1][0])
                accuracy, lam = validated_accuracy(T, width, splits, args.lambdas)
                print(f"  {who:<24} {held:>18.4f}   {accuracy:.4f} ({lam:g})", flush=True)
    print(f"\nafter: {machine_line()}")


def main(argv=None):
    args = parse_args(argv)
    import torch

    cuda = torch.cuda.is_available()
    device = torch.device("cuda") if cuda else torch.device("cpu")
    print(f"torch {torch.__version__}; CUDA available: {torch.cuda.is_available()}"
          + (f" ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else ""))
    if not torch.cuda.is_available():
        print("No CUDA GPU on this machine: the GPU figures of issue 13 are left for a run on "
              "a machine with one. Running the small CPU smoke instead: the torch path on "
              "torch.device('cpu') against the NumPy path (what it costs on a CPU; it says "
              "nothing about a GPU).")
    small = args.quick or not cuda
    if args.agreement:
        return agreement(args, device, small)
    n_train, n_landmarks, n_steps = (5000, 5, 200) if small else (50000, 100, 1000)
    feature_rows = args.feature_rows or (100_000 if small else 1_000_000)
    X, source = load_data(n_train)
    settings = dict(n_landmarks=n_landmarks, n_steps=n_steps, batch_size=1000, block_size=1,
                    kernel_width="auto", random_state=args.seed)
    print(f"{source}: {len(X)} images x {X.shape[1]}, {n_landmarks} landmarks, {n_steps} "
          f"steps, batch 1000, float32; features of {feature_rows:,} rows")
    print(f"before: {machine_line()}")

    # Warm-up: the compiled loops and torch (CUDA context, cuBLAS,
    # the first graph capture); the cold first calls are reported, not timed below.
    warm = dict(settings, n_landmarks=2, n_steps=60)
    _, cold_numpy = timed_fit(X[:2000], None, **warm)
    _, cold_torch = timed_fit(X[:2000], device, **warm)
    _, warm_torch = timed_fit(X[:2000], device, **warm)
    print(f"cold first calls (2 landmarks x 60 steps on 2,000 images): NumPy path "
          f"{cold_numpy:.2f} s; torch on {device} {cold_torch:.2f} s (warm: {warm_torch:.2f} s)")

    on_device, device_seconds = timed_fit(X, device, **settings)
    numpy_fit, numpy_seconds = timed_fit(X, None, **settings)
    rows = [(f"GPLandmarks, torch ({device})", device_seconds, on_device),
            ("GPLandmarks, NumPy (CPU)", numpy_seconds, numpy_fit)]
    if not args.no_kmeans:
        from sklearn.cluster import KMeans

        start = time.perf_counter()
        KMeans(n_landmarks, n_init=1, random_state=args.seed).fit(X)
        rows.append((f"KMeans({n_landmarks}, n_init=1) (CPU)", time.perf_counter() - start,
                     None))
    print(f"after the fits: {machine_line()}")
    steps = int(numpy_fit.n_steps_.sum())
    diff = landmark_difference(on_device, numpy_fit)
    print(f"\n{'method':<36} {'seconds':>9} {'us/step':>9}")
    for name, seconds, fit in rows:
        per_step = f"{seconds / steps * 1e6:9.0f}" if fit is not None else f"{'':>9}"
        print(f"{name:<36} {seconds:9.2f} {per_step}")
    print(f"NumPy CPU / torch {device}: {numpy_seconds / device_seconds:.2f}")
    if not args.no_kmeans:
        print(f"KMeans / torch {device}: {rows[-1][1] / device_seconds:.2f}")
    print(f"largest landmark difference torch vs NumPy, relative to the largest value: "
          f"{diff:.1e}")
    if cuda and not small:
        ok = numpy_seconds / device_seconds >= 20 and device_seconds < 10
        print(f"target (>= 20x the CPU path and < 10 s): {'met' if ok else 'NOT met'}")

    block_rows(X, device, settings, small)

    brief = dict(settings, n_landmarks=min(3, n_landmarks), n_steps=min(200, n_steps))
    print_breakdown(profile_breakdown(X, device, **brief), device)

    # Landmark features of many rows: the images repeated.
    big = np.tile(X, (-(-feature_rows // len(X)), 1))[:feature_rows]
    timings = {}
    for name, dev in ((f"torch ({device})", device), ("NumPy (CPU)", "cpu")):
        on_device.set_params(device=dev)
        start = time.perf_counter()
        features = on_device.transform(big)
        timings[name] = time.perf_counter() - start
        if dev == "cpu":
            reference = features
        else:
            from_device = features
    on_device.set_params(device=device)
    print(f"\nlandmark features of {feature_rows:,} rows x {n_landmarks} landmarks "
          f"(load average {os.getloadavg()}):")
    for name, seconds in timings.items():
        print(f"  {name:<20} {seconds:8.2f} s  ({feature_rows / seconds / 1e6:.2f} M rows/s)")
    names = list(timings)
    print(f"  NumPy / torch: {timings[names[1]] / timings[names[0]]:.2f}; largest difference "
          f"{np.abs(from_device - reference).max():.1e}")
    block = big[:min(len(big), 131072)]
    sections = feature_sections(block, on_device.landmarks_, on_device.kernel_width_, device)
    print(f"  one block of {len(block):,} rows: " + ", ".join(
        f"{k} {v * 1e3:.1f} ms" for k, v in sections.items()))

    lll = None if args.no_lll else lll_comparison(X if small else load_data(60000)[0],
                                                  device, small, args.seed)
    print(f"at the end: {machine_line()}")

    plt = pyplot()
    labels = [r[0] for r in rows] + [f"features {k}" for k in timings]
    values = [r[1] for r in rows] + list(timings.values())
    if lll:
        labels += [r[0] for r in lll]
        values += [r[1] for r in lll]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(labels) + 1.2))
    ax.barh(range(len(labels)), values, color=["C0" if "torch" in s else "C7" for s in labels])
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(f"{source} {len(X)} x {n_landmarks} landmarks on {device}"
                 + ("" if cuda else " (CPU smoke, no GPU)"), fontsize=10)
    fig.tight_layout()
    path = args.out / "gpu_seconds.png"
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
