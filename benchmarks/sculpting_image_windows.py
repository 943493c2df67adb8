"""Manifold Sculpting on a window slid over a real picture (Gashler et al. 2011, Fig. 18).

The paper slid a 35 x 35 window (3,675 colour values) over a picture of the Mona
Lisa to 36 x 36 = 1,296 positions and reduced the images to 2-D; the window's
position is the manifold's known coordinate. Here the picture is scikit-learn's
bundled ``china.jpg`` (``sklearn.datasets.load_sample_image``), made grey (the mean
of the three channels) and downscaled by block means so that the window, moved one
pixel at a time, covers it: ``positions + window - 1`` pixels square, taken from the
middle of the picture. Each image is the window's grey values / 255 (35 x 35 = 1,225
values at the paper's scale).

Every method gets the same k and t = 2: Manifold Sculpting from the paper's start
(``preprocess="pca"``, sigma 0.99) and from LTSA (``preprocess="ltsa"``, the
library's default), and scikit-learn's Isomap, LLE, Hessian LLE and LTSA; then the
paper's Fig. 18(b), Manifold Sculpting from both starts with "a custom distance-metric
[...] such that each neighborhood represents a uniform amount of total distance": each
point's neighbour distances rescaled to the data's mean neighbour distance, given as
``neighbors=(distances, indices)`` (rows ``norm. nbhd``). Printed per
method: the paper's normalised MSE against the window positions
(:func:`landmarking.metrics.affine_normalized_mse`: mean squared distance after the
best affine map, over the squared grid step), the relative error
(``_common.intrinsic_error``: the same residual over the positions' spread, 0 for a
perfect affine image of the grid) and the seconds of one fit. The paper gives no
number for Fig. 18, only the picture: the embedding "is not square because the
sliding window creates a bigger change in input distance when sliding over regions
with a bigger gradient"; an affine map cannot undo that, so no method reaches 0.

Quick run (default): 18 x 18 positions of a 20-pixel window (324 images), k = 12.
``--full``: the paper's 36 x 36 positions of a 35-pixel window (1,296 images of
1,225 values), k = 14.

Writes ``sculpting_image_windows.png`` (the picture with the window's area, and each
method's embedding coloured by the window's column, lines joining grid neighbours)
to ``--out``.

Usage::

    python benchmarks/sculpting_image_windows.py [--full] [--positions P --window W -k K]
"""

import warnings

import numpy as np
from _common import (
    argument_parser,
    intrinsic_error,
    machine_line,
    parse,
    print_table,
    pyplot,
    save_figure,
    timed,
)
from _sculpting_methods import METHODS, embed_all

from landmarking import ManifoldSculpting
from landmarking.metrics import affine_normalized_mse

#: The table's and the figure's rows: the common set, then Fig. 18(b)'s metric.
SHOWN = (*METHODS, "MS (pca), norm. nbhd", "MS (ltsa), norm. nbhd")


def picture(side, image="china.jpg"):
    """The middle ``side`` x ``side`` pixels of a bundled scikit-learn picture, grey
    (channel mean) and downscaled by block means so that its shorter side is ``side``
    (scale factor rounded down, at least 1), values in [0, 1]."""
    from sklearn.datasets import load_sample_image

    grey = load_sample_image(image).astype(np.float64).mean(axis=2) / 255.0
    factor = max(1, min(grey.shape) // side)
    h, w = (grey.shape[0] // factor) * factor, (grey.shape[1] // factor) * factor
    small = grey[:h, :w].reshape(h // factor, factor, w // factor, factor).mean(axis=(1, 3))
    if min(small.shape) < side:
        raise ValueError(f"the picture is {small.shape} after downscaling, smaller than "
                         f"{side}; pass fewer positions or a smaller window.")
    top, left = (small.shape[0] - side) // 2, (small.shape[1] - side) // 2
    return small[top:top + side, left:left + side]


def windows(pic, positions, window):
    """Every ``window``-pixel square of ``pic`` at ``positions`` x ``positions``
    offsets one pixel apart: X (positions^2, window^2) and the (column, row) offset
    of each (the ground truth)."""
    rows, cols = np.meshgrid(np.arange(positions), np.arange(positions), indexing="ij")
    offsets = np.column_stack([cols.ravel(), rows.ravel()])
    X = np.stack([pic[r:r + window, c:c + window].ravel() for c, r in offsets])
    return X, offsets.astype(np.float64)


def normalised_neighbourhoods(X, k, seed=0):
    """The paper's Fig. 18(b): Manifold Sculpting restoring distances rescaled so
    that every neighbourhood has the same mean neighbour distance (the data's
    mean), given as ``neighbors=(distances, indices)``; angles stay the input's.
    {name: (seconds, embedding)}, the neighbour search's time included."""
    from landmarking.neighbors import nearest_neighbors

    out = {}
    for start in ("pca", "ltsa"):
        def fit(start=start):
            dist, idx = nearest_neighbors(X, k)
            dist = dist * (dist.mean() / dist.mean(axis=1, keepdims=True))
            model = ManifoldSculpting(n_neighbors=k, preprocess=start, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SculptingWarning: the MSE says the same
                return model.fit_transform(X, neighbors=(dist, idx))

        out[f"MS ({start}), norm. nbhd"] = timed(fit)
    return out


def run(positions, window, k, out, seed=0):
    pic = picture(positions + window - 1)
    X, truth = windows(pic, positions, window)
    print(f"{len(X)} windows of {window} x {window} = {X.shape[1]} grey values, k = {k}\n",
          flush=True)
    found = embed_all(X, k, 2, seed=seed)
    found.update(normalised_neighbourhoods(X, k, seed))
    rows = []
    for name in SHOWN:
        secs, Y = found[name]
        if secs is None:
            rows.append((name, Y, "", ""))
            continue
        rows.append((name, affine_normalized_mse(Y, truth), intrinsic_error(Y, truth), secs))
    print_table(["method", "normalised MSE", "relative error", "seconds"], rows,
                floatfmt="{:.4g}")
    print(machine_line())
    _plot(pic, positions, window, truth, found, out / "sculpting_image_windows.png")
    return {r[0]: r[1:] for r in rows}


def _plot(pic, positions, window, truth, found, path):
    plt = pyplot()
    fig, axes = plt.subplots(1, 1 + len(SHOWN), figsize=(2.3 * (1 + len(SHOWN)), 2.6))
    axes[0].imshow(pic, cmap="gray")
    axes[0].add_patch(plt.Rectangle((-0.5, -0.5), window, window, fill=False, color="red"))
    axes[0].set_title(f"picture; window {window} px\nat {positions} x {positions} offsets",
                      fontsize=8)
    grid = np.arange(positions * positions).reshape(positions, positions)
    for ax, name in zip(axes[1:], SHOWN, strict=True):
        secs, Y = found[name]
        if secs is None:
            ax.set_title(f"{name}\n{Y}", fontsize=8)
            ax.axis("off")
            continue
        # Lines along the grid's rows and columns show folds and shear.
        for line in list(grid) + list(grid.T):
            ax.plot(Y[line, 0], Y[line, 1], color="0.75", lw=0.4, zorder=1)
        ax.scatter(Y[:, 0], Y[:, 1], c=truth[:, 0], s=3, cmap="viridis", zorder=2)
        ax.set_title(f"{name}\nnorm. MSE {affine_normalized_mse(Y, truth):.3g}", fontsize=8)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    save_figure(fig, path)


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument("--positions", type=int,
                        help="window offsets per axis (18; 36 with --full)")
    parser.add_argument("--window", type=int, help="window side in pixels (20; 35 with --full)")
    parser.add_argument("-k", type=int, help="neighbours (12; 14 with --full)")
    args = parse(parser, argv)
    positions = args.positions or (36 if args.full else 18)
    window = args.window or (35 if args.full else 20)
    k = args.k or (14 if args.full else 12)
    run(positions, window, k, args.out, seed=args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
