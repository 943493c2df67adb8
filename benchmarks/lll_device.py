"""LLL on MNIST: the NumPy path against the torch path (``device=...``), back to back.

Both fits share one 200-NN Gaussian graph (passed as ``affinity``) and the same
451 random landmarks, so the stages compared are the ones the device runs: the
weights Z, the reduced matrices A~, B~ (and the whole fit), and the out-of-sample
map on the 10,000 test digits. Each configuration is warmed up once (the cold
first call, loading the compiled loops or torch start-up included, is printed apart);
then the two paths alternate, best of ``--repeat``. The agreement of the two
embeddings (Procrustes error) is printed beside the times.

On a machine without a GPU the torch path runs on ``torch.device("cpu")``: a
check of the overhead of the torch path, not a GPU figure (benchmarks/gpu.py
times CUDA).

Usage::

    flock /tmp/landmarking-bench.lock python benchmarks/lll_device.py \
        [--n 10000] [--device cpu|cuda] [--kz 50 10] [--repeat 3]
"""

import os

import numpy as np
from _common import argument_parser, machine_line, parse, pyplot, timed


def main():
    p = argument_parser(__doc__, size=None, seed=False)
    p.add_argument("--n", type=int, default=10000, help="training digits (default 10,000)")
    p.add_argument("--device", default="cpu", help="torch device of the torch path")
    p.add_argument("--kz", type=int, nargs="+", default=[50, 10], help="K_Z values")
    p.add_argument("--landmarks", type=int, default=451)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--n-jobs", type=int, default=-1, help="n_jobs of both paths")
    args = parse(p, machine=False)

    import torch

    from landmarking.datasets import load_mnist
    from landmarking.graph import knn_affinity
    from landmarking.lll.estimator import LocallyLinearLandmarks
    from landmarking.metrics import procrustes_error

    X = load_mnist(split="train")[0][:args.n].astype(np.float64)
    X_test = load_mnist(split="test")[0].astype(np.float64)
    W = knn_affinity(X, 200, 200.0)
    device = torch.device(args.device)
    print(f"MNIST {args.n:,} x {X.shape[1]}, L={args.landmarks}, K_W=200, "
          f"torch {torch.__version__} on {device} ({torch.get_num_threads()} threads), "
          f"n_jobs={args.n_jobs}, os.cpu_count()={os.cpu_count()}")
    print(f"before: {machine_line()}")
    rows = []
    for kz in args.kz:
        def make(dev, kz=kz):
            return LocallyLinearLandmarks(n_components=50, n_landmarks=args.landmarks,
                                          n_landmark_neighbors=kz, n_neighbors=200,
                                          bandwidth=200.0, random_state=0,
                                          n_jobs=args.n_jobs, device=dev)
        paths = {"numpy": make("cpu"), "torch": make(device)}
        cold = {name: timed(est.fit, X, affinity=W)[0] for name, est in paths.items()}
        best = {name: {} for name in paths}
        for _ in range(args.repeat):
            for name, est in paths.items():  # alternating: the two paths back to back
                est.fit(X, affinity=W)
                t_map = timed(est.transform, X_test)[0]
                for stage, value in [("weights", est.timings_["weights"]),
                                     ("reduced", est.timings_["reduced_problem"]),
                                     ("fit", est.timings_["total"]), ("transform", t_map)]:
                    best[name][stage] = min(best[name].get(stage, np.inf), value)
        err = procrustes_error(paths["torch"].embedding_, paths["numpy"].embedding_)
        for stage in ("weights", "reduced", "fit", "transform"):
            a, b = best["numpy"][stage], best["torch"][stage]
            rows.append((kz, stage, a, b, a / b))
        rows.append((kz, "cold fit", cold["numpy"], cold["torch"],
                     cold["numpy"] / cold["torch"]))
        print(f"K_Z={kz}: Procrustes error torch vs numpy embedding {err:.2e}")
    print(f"\n{'K_Z':>4} {'stage':<10} {'numpy s':>9} {'torch s':>9} {'numpy/torch':>12}")
    for kz, stage, a, b, ratio in rows:
        print(f"{kz:>4} {stage:<10} {a:>9.3f} {b:>9.3f} {ratio:>11.2f}x")
    print(f"after: {machine_line()}")
    _plot(rows, device, args.out)


def _plot(rows, device, out):
    plt = pyplot()
    labels = [f"K_Z={kz}\n{stage}" for kz, stage, *_ in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 0.9), 3.5))
    ax.bar(x - 0.2, [r[2] for r in rows], 0.4, label="NumPy path")
    ax.bar(x + 0.2, [r[3] for r in rows], 0.4, label=f"torch path ({device})")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("seconds (best of runs)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / f"lll_device_{device.type}.png", dpi=120)


if __name__ == "__main__":
    main()
