"""The argument parser of the ``landmarking`` command (see :mod:`landmarking.cli`).

One ``_add_<command>`` function per subcommand; :func:`build_parser` only calls
them. The options several commands share are argparse parent parsers
(:func:`_parents`).
"""

import argparse
from types import SimpleNamespace

import numpy as np

from .. import __version__
from .._torch import is_device_name
from ..io import InputError, parse_image_shape

__all__ = ["build_parser", "LANDMARK_METHODS", "EMBED_METHODS", "EXPERIMENTS"]

#: ``--method`` of ``landmarks`` -> estimator class exported by ``landmarking``.
LANDMARK_METHODS = {
    "gp": "GPLandmarks",
    "random": "RandomLandmarks",
    "active": "ActiveLearningLandmarks",
    "rpcholesky": "RPCholeskyLandmarks",
    "kmeans": "KMeansLandmarks",
}
#: ``--method`` of ``embed`` -> estimator class exported by ``landmarking``.
EMBED_METHODS = {"lll": "LocallyLinearLandmarks", "le": "LaplacianEigenmaps",
                 "sculpting": "ManifoldSculpting"}
#: ``reproduce`` experiments -> benchmark scripts of the source checkout.
EXPERIMENTS = {
    "mnist": "gp_mnist_classification.py",
    "newsgroups": "gp_newsgroups_topics.py",
    "faces": "gp_faces.py",
    "lll": "lll_mnist.py",
    "sculpting": "sculpting.py",
}


def _example(text):
    return "example:\n" + "\n".join("  " + line for line in text.strip("\n").splitlines())


RAW = argparse.RawDescriptionHelpFormatter


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``landmarking`` command."""
    parser = argparse.ArgumentParser(
        prog="landmarking",
        description="Landmarks on the data manifold (GP landmarking and baselines), "
                    "landmark features, and embeddings (Locally Linear Landmarks, "
                    "Laplacian eigenmaps, Manifold Sculpting).",
        epilog=_example(
            "landmarking landmarks digits.csv -n 20 -o landmarks.npz --plot landmarks.png\n"
            "landmarking COMMAND --help     # each command's options and an example"),
        formatter_class=RAW,
    )
    parser.add_argument("--version", action="version", version=f"landmarking {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parents = _parents()
    for add in (_add_landmarks, _add_features, _add_embed, _add_transform, _add_topics,
                _add_demo, _add_reproduce):
        add(commands, parents)
    return parser


def _parents():
    """The option groups several commands share, as argparse parent parsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bars or messages, only results and errors")
    common.add_argument("--debug", action="store_true",
                        help="show the full traceback on errors")

    data = argparse.ArgumentParser(add_help=False)
    data.add_argument("data", metavar="DATA",
                      help=".npy (memory-mapped), .npz, .csv/.tsv file, a .zarr store or "
                           "a folder of .png/.pgm images (one sample per row)")
    data.add_argument("--key", help="the array to read from an .npz holding several")
    data.add_argument("--image-shape", type=_image_shape, metavar="HxW",
                      help="shape of one image, e.g. 28x28: plots landmarks as images")
    dask = data.add_mutually_exclusive_group()
    dask.add_argument("--scheduler", metavar="ADDRESS",
                      help="run passes over the data on a running dask.distributed "
                           "scheduler (e.g. tcp://host:8786); needs the scale extra")
    dask.add_argument("--dask-workers", type=_positive_int, metavar="N",
                      help="start a local Dask cluster of N worker processes for the run")

    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="output file (.npz; .csv with --format csv)")
    output.add_argument("--format", choices=["npz", "csv", "tsv"],
                        help="output format (default: from the file name)")
    output.add_argument("--force", action="store_true", help="overwrite existing output files")

    device = argparse.ArgumentParser(add_help=False)
    device.add_argument("--device", type=_device, metavar="cpu|cuda|cuda:N|auto",
                        help="where to compute: cpu (default, NumPy), cuda or cuda:N (a GPU "
                             'through PyTorch: pip install "landmarking[gpu]"; the same '
                             "results to rounding), auto (cuda when one is available)")

    labels = argparse.ArgumentParser(add_help=False)
    labels.add_argument("--labels", metavar="FILE",
                        help="one label per row (.npy, .npz, .csv, .txt) to colour the plot")
    labels.add_argument("--labels-key", metavar="KEY", help="the array to read from a labels .npz")

    return SimpleNamespace(common=common, data=data, output=output, device=device,
                           labels=labels)


def _add_landmarks(commands, parents):
    p = commands.add_parser(
        "landmarks", formatter_class=RAW,
        parents=[parents.common, parents.data, parents.output, parents.labels, parents.device],
        help="learn an ordered list of landmarks",
        description="Learn an ordered list of landmarks on the data. Landmark k depends on "
                    "how many come after it only within its block (--block-size), so "
                    "--continue extends an earlier run exactly as a single longer run with "
                    "the same seed would when the earlier run ended at a block boundary (a "
                    "multiple of 50 by default, always with --block-size 1). Ctrl-C writes "
                    "the landmarks finished so far.",
        epilog=_example(
            "landmarking landmarks mnist.npz --key X -n 50 --image-shape 28x28 \\\n"
            "    --space nonnegative -o landmarks.npz --plot landmarks.png\n"
            "landmarking landmarks mnist.npz --key X -n 80 --continue landmarks.npz "
            "-o landmarks.npz\n"
            "landmarking landmarks points.csv -n 10 --method kmeans -o centres.csv"))
    p.add_argument("-n", "--n-landmarks", type=_positive_int, required=True, metavar="N",
                   help="number of landmarks (the total, with --continue)")
    p.add_argument("--method", choices=list(LANDMARK_METHODS), default="gp",
                   help="gp (default): GP manifold landmarking; random data points; active: "
                        "GP active learning; rpcholesky: randomly pivoted Cholesky; "
                        "kmeans: k-means++")
    p.add_argument("--space", choices=["euclidean", "nonnegative", "sphere"],
                   help="where gp landmarks live (default euclidean; nonnegative for images, "
                        "sphere for square-root histograms)")
    p.add_argument("--steps", type=_positive_int,
                   help="gp: optimisation steps per landmark, or per block of landmarks "
                        "(default 1000 per landmark, 100 per block)")
    p.add_argument("--block-size", type=_block_size, metavar="auto|B",
                   help="gp: landmarks learned together (default auto: blocks of 50 from "
                        "50 landmarks on, else one at a time, and one at a time when they "
                        "start at the sphere's centre; 1 is the paper's algorithm)")
    p.add_argument("--batch-size", type=_positive_int,
                   help="gp: points per minibatch (default 1000)")
    p.add_argument("--kernel-width", type=_kernel_width, metavar="auto|variance|WIDTH",
                   help="Gaussian kernel width eta in squared data units "
                        "(default: the estimator's)")
    p.add_argument("--seed", type=int, help="random seed (default 0)")
    p.add_argument("--continue", dest="previous", metavar="FILE",
                   help="landmarks .npz of an earlier gp run on the same DATA to extend")
    p.add_argument("--plot", metavar="PNG", help="picture of the landmarks")
    p.add_argument("--model", metavar="FILE",
                   help="also save the fitted estimator (.npz, landmarking.save's format); "
                        "`landmarking transform` then gives landmark features of new data")
    p.add_argument("--view", metavar="EMBEDDING",
                   help="draw the plot on this 2-D embedding of DATA (e.g. from `landmarking "
                        "embed`) instead of the first two principal components")


def _add_features(commands, parents):
    p = commands.add_parser(
        "features", formatter_class=RAW,
        parents=[parents.common, parents.data, parents.output, parents.device],
        help="landmark features exp(-|x - t|^2 / width) of data",
        description="Gaussian landmark features exp(-||x - t_k||^2 / width) of every row x "
                    "of DATA, for landmarks t_k saved by `landmarking landmarks` (and its "
                    "kernel width). DATA needs the columns (and scaling) of the data the "
                    "landmarks were learnt on.",
        epilog=_example("landmarking features test.npy --landmarks landmarks.npz -o features.npz"))
    p.add_argument("--landmarks", required=True, metavar="FILE", help="landmarks .npz")
    p.add_argument("--kernel-width", type=_positive_float, metavar="WIDTH",
                   help="override the saved kernel width")


def _add_embed(commands, parents):
    p = commands.add_parser(
        "embed", formatter_class=RAW,
        parents=[parents.common, parents.data, parents.output, parents.labels],
        help="low-dimensional embedding (LLL, Laplacian eigenmaps, Manifold Sculpting)",
        description="Embed DATA in -d dimensions. --model saves the fitted estimator "
                    "(landmarking.save's format, read by landmarking.load) for "
                    "`landmarking transform` to place new points (--method lll).",
        epilog=_example(
            "landmarking embed roll.csv --method lll -d 2 --n-landmarks 300 --neighbors 10 \\\n"
            "    -o embedding.npz --model model.npz --plot embedding.png --labels colours.txt\n"
            "landmarking embed roll.csv --method sculpting -d 2 --neighbors 14 --start ltsa \\\n"
            "    -o sculpted.npz"))
    p.add_argument("--method", choices=list(EMBED_METHODS), default="lll",
                   help="lll (default): Locally Linear Landmarks; le: exact Laplacian eigenmaps; "
                        "sculpting: Manifold Sculpting")
    p.add_argument("-d", "--n-components", type=_positive_int, default=2, metavar="D",
                   help="embedding dimension (default 2)")
    p.add_argument("--neighbors", type=_positive_int, metavar="K",
                   help="nearest neighbours of the graph (K_W for lll/le, k for sculpting)")
    p.add_argument("--bandwidth", type=_positive_float, metavar="SIGMA",
                   help="lll/le: Gaussian affinity bandwidth sigma")
    p.add_argument("--n-landmarks", type=_positive_int, metavar="L",
                   help="lll: number of landmarks")
    p.add_argument("--landmark-neighbors", type=_positive_int, metavar="K_Z",
                   help="lll: landmarks that reconstruct each point")
    p.add_argument("--landmarks", metavar="random|random-pruned|kmeans|FILE.npz",
                   help="lll: how to choose landmarks, or a landmarks .npz")
    p.add_argument("--scale-rate", type=float, metavar="SIGMA",
                   help="sculpting: scaling factor per iteration in (0, 1)")
    p.add_argument("--start", choices=["ltsa", "pca", "none"],
                   help="sculpting: starting configuration (default ltsa, which unfolds "
                        "rolled sheets such as the Swiss roll; pca is the paper's)")
    p.add_argument("--seed", type=int, help="random seed (default 0)")
    p.add_argument("--model", metavar="FILE",
                   help="lll: save the fitted model to this .npz (landmarking.save's format)")
    p.add_argument("--plot", metavar="PNG", help="picture of the first two coordinates")


def _add_transform(commands, parents):
    p = commands.add_parser(
        "transform", formatter_class=RAW,
        parents=[parents.common, parents.data, parents.output, parents.labels, parents.device],
        help="place new points with a saved model",
        description="Apply a saved model to new points: an embedding model from `landmarking "
                    "embed --method lll --model` places them in the embedding (the result "
                    "is 'embedding'); a landmark model from `landmarking landmarks --model` "
                    "gives their landmark features ('features'). Any file of "
                    "landmarking.save works, and so do LLL models written by landmarking 0.1.",
        epilog=_example(
            "landmarking transform new_points.csv --model model.npz -o new_embedding.npz\n"
            "landmarking transform test.npy --model lm_model.npz -o features.npz"))
    p.add_argument("--model", required=True, metavar="FILE",
                   help="model .npz from `embed --model`, `landmarks --model` or landmarking.save")
    p.add_argument("--plot", metavar="PNG", help="picture of the first two coordinates")


def _add_topics(commands, parents):
    p = commands.add_parser(
        "topics", formatter_class=RAW,
        parents=[parents.common, parents.device],
        help="landmarks of a text corpus, read as topics",
        description="Represent each document as the square roots of its normalised word "
                    "histogram over the most frequent words, learn GP landmarks on the "
                    "sphere, and print each landmark's most probable words (its largest "
                    "squared entries).",
        epilog=_example(
            "landmarking topics posts.jsonl --field body -n 12 --vocabulary 1545 --top 5\n"
            "landmarking topics newsgroups.jsonl --strip-headers -n 12\n"
            "landmarking topics letters/ -n 5 -o topics.npz"))
    p.add_argument("corpus", metavar="CORPUS", help="a folder of .txt files or a .jsonl file")
    p.add_argument("--field", default="text",
                   help="text field of the .jsonl records (default text)")
    p.add_argument("--strip-headers", action="store_true",
                   help="drop each document's e-mail/news header block "
                        "(up to the first blank line)")
    p.add_argument("-n", "--n-landmarks", type=_positive_int, default=12, metavar="N",
                   help="number of topics (default 12)")
    p.add_argument("--vocabulary", type=_positive_int, default=1545, metavar="V",
                   help="most frequent words kept (default 1545, the paper's)")
    p.add_argument("--top", type=_positive_int, default=5,
                   help="words printed per topic (default 5)")
    p.add_argument("--steps", type=_positive_int,
                   help="optimisation steps per landmark, or per block of landmarks")
    p.add_argument("--block-size", type=_block_size, metavar="auto|B",
                   help="landmarks learned together (default auto: one at a time, from the "
                        "sphere's centre, under a kernel at least 0.5 wide; else blocks of 50 "
                        "from 50 topics on, one at a time below)")
    p.add_argument("--batch-size", type=_positive_int, help="documents per minibatch")
    p.add_argument("--kernel-width", type=_kernel_width, metavar="auto|variance|WIDTH")
    p.add_argument("--seed", type=int, help="random seed (default 0)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="also save landmarks and vocabulary (.npz)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument("--continue", dest="previous", metavar="FILE",
                   help="extend a run saved with -o, e.g. one that was killed (-n is the total)")


def _add_demo(commands, parents):
    commands.add_parser(
        "demo", formatter_class=RAW,
        parents=[parents.common], help="the demo that `make demo` runs",
        description="Learn landmarks on data that needs no download, print a table and "
                    "write pictures (what `make demo` runs).",
        epilog=_example("landmarking demo"))


def _add_reproduce(commands, parents):
    p = commands.add_parser(
        "reproduce", formatter_class=RAW,
        parents=[parents.common],
        help="run one of the papers' experiments (benchmarks/)",
        description="Run a benchmark script of the source checkout: small and quick by "
                    "default, the paper's scale with --full. Data is read from "
                    "$LANDMARKING_DATA.",
        epilog=_example("LANDMARKING_DATA=~/data landmarking reproduce mnist\n"
                        "landmarking reproduce sculpting --full --out results/"))
    p.add_argument("experiment", choices=list(EXPERIMENTS))
    p.add_argument("--full", action="store_true", help="the paper's scale (slow)")
    p.add_argument("--out", metavar="DIR", help="where the script writes its pictures")


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not np.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number > 0")
    return value


def _device(text):
    if not is_device_name(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a device; use cpu, cuda, cuda:N (N a GPU number) or auto")
    return text


def _block_size(text):
    return text if text == "auto" else _positive_int(text)


def _kernel_width(text):
    return text if text in ("auto", "variance") else _positive_float(text)


def _image_shape(text):
    try:
        return parse_image_shape(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
