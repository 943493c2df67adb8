"""Seconds per GP landmark against landmark index (Liang & Paisley 2015, Fig. 4a).

The paper times PIE faces at 32 x 32 and 64 x 64 with batch size 1000 and finds
that a new landmark costs more as landmarks accumulate (larger Gram matrices in
eq. 10) and as the dimension grows. Here: Olivetti faces (400 images, so every
batch is the whole set) at 64 x 64 and averaged down to 32 x 32 (2 x 2 blocks),
pixels / 255, space "nonnegative"; ``landmark_seconds_`` gives the time of each
landmark.

Usage::

    python benchmarks/gp_runtime.py          # quick: 10 landmarks, 200 steps
    python benchmarks/gp_runtime.py --full   # 50 landmarks, the paper's 1000 steps
"""

import json

import numpy as np
from _common import argument_parser, kernel_width_argument, parse, print_table, pyplot

from landmarking import GPLandmarks
from landmarking.datasets.real import load_faces


def _downsample(images, factor):
    n, h, w = images.shape
    return images.reshape(n, h // factor, factor, w // factor, factor).mean(axis=(2, 4))


def run(args):
    n_landmarks, n_steps = (50, 1000) if args.full else (10, 200)
    faces, _ = load_faces("olivetti")
    faces = faces.astype(np.float64) / 255.0
    curves = {}
    for size, images in ((32, _downsample(faces, 2)), (64, faces)):
        X = images.reshape(len(images), -1)
        gp = GPLandmarks(n_landmarks=n_landmarks, n_steps=n_steps, batch_size=1000,
                         kernel_width=args.kernel_width, space="nonnegative",
                         random_state=args.seed).fit(X)
        curves[size] = gp.landmark_seconds_
        print(f"Olivetti {size}x{size} (d = {X.shape[1]}): {n_landmarks} landmarks, "
              f"{n_steps} steps, batch {min(1000, len(X))}: total "
              f"{gp.landmark_seconds_.sum():.2f} s", flush=True)
    marks = sorted({0, n_landmarks // 4, n_landmarks // 2, 3 * n_landmarks // 4, n_landmarks - 1})
    print()
    print_table(["landmark"] + [f"s/landmark {s}x{s}" for s in curves],
                [[k + 1] + [float(curves[s][k]) for s in curves] for k in marks],
                floatfmt="{:.3f}")
    ratio = curves[64].sum() / curves[32].sum()
    print(f"\n64x64 / 32x32 total time ratio: {ratio:.2f}")
    tenth = max(1, n_landmarks // 10)
    for s, secs in curves.items():
        print(f"{s}x{s}: mean s/landmark, first {tenth}: {secs[:tenth].mean():.3f}; "
              f"last {tenth}: {secs[-tenth:].mean():.3f}")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for s, secs in curves.items():
        ax.plot(np.arange(1, n_landmarks + 1), secs, marker=".", label=f"{s} x {s}")
    ax.set_xlabel("landmark index")
    ax.set_ylabel("seconds per landmark")
    ax.set_title(f"GP landmarks on Olivetti faces, {n_steps} steps per landmark")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    tag = "full" if args.full else "quick"
    png = args.out / f"gp_runtime_{tag}.png"
    fig.savefig(png, dpi=110)
    with open(args.out / f"gp_runtime_{tag}.json", "w") as fh:
        json.dump({str(s): secs.tolist() for s, secs in curves.items()}, fh)
    print(f"wrote {png}")
    return curves


def main(argv=None):
    parser = argument_parser(__doc__)
    kernel_width_argument(parser)
    return run(parse(parser, argv))


if __name__ == "__main__":
    main()
