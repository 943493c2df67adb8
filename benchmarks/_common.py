"""What the benchmark scripts share, written once.

Every speed claim of this project is a ratio against a peer measured in the same
run, printed beside the load average and the BLAS in use; a row that times a first
call, or whose memory is reported, runs in a new interpreter. In the order a
script meets them:

- **the command line**: :func:`argument_parser` starts a parser with the common
  arguments (``--full`` or ``--quick``, ``--seed`` or ``--seeds``, ``--out``) and
  :func:`parse` reads it, makes the output folder, prints :func:`machine_line` and,
  when BLAS is throttled, :func:`throttle_note`;
- **the machine line**: :func:`machine_line` (load average, threadpoolctl's BLAS
  library, kernel and threads, and the throttling variables) and
  :func:`throttle_note`. Some machines set ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE``
  because old OpenBLAS builds misbehave on their processors; with a current NumPy
  they throttle BLAS, and a ratio against k-means or scikit-learn's solvers measured
  so is not a result (it moved 3.5x once). They are unset for the benchmark command
  alone, from the shell (``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python
  benchmarks/x.py``): OpenBLAS reads them once, when it is loaded, so only a new
  process could drop them, and a script that replaced its own process would replace
  whatever imported it (a test run). The scripts never change the environment;
  when either is set, the note says so and gives that command;
- **timing**: :func:`timed` (wall seconds of one call) and :func:`run_child` (a
  new interpreter, with :data:`PEAK_RSS` for its peak memory);
- **the data and the scores**, real data read through ``LANDMARKING_DATA`` by
  :mod:`landmarking.datasets`: :func:`mnist_splits`, :func:`mnist_digits` (MNIST
  with shifted copies beyond 60,000), :func:`face_pixels` and :func:`halves`,
  :func:`newsgroups_sqrt_frequencies`, :func:`arc_length_swiss_roll`,
  :func:`neighbour_graph` (a k-NN graph kept on disk); :func:`knn_accuracy`,
  :func:`held_out_knn_accuracy` and :func:`intrinsic_error` (embeddings),
  :func:`feature_accuracy` and :func:`validated_accuracy` (landmark features),
  :func:`heldout_objective` and :func:`purity` (landmarks);
- **output**: :func:`print_table` (Markdown), :func:`pyplot` (no screen) and
  :func:`save_figure`.
"""

import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
#: Where PNGs and JSON go unless ``--out`` says otherwise.
DEFAULT_OUT = HERE / "output"

# ----------------------------------------------------------------- the machine line

#: The variables that pin OpenBLAS to a kernel or a cache size other than its own
#: choice for this processor (read by OpenBLAS once, when it is loaded).
THROTTLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def throttles():
    """The throttling variables that are set, as {name: value}."""
    return {name: os.environ[name] for name in THROTTLES if name in os.environ}


def throttle_note(argv=None):
    """None when no throttling variable is set; else a note that says which are set
    and gives the command that reruns this script (``argv``, default ``sys.argv``)
    with them unset, for that command alone, from the shell. Nothing is re-run
    and the environment is left as it is."""
    found = throttles()
    if not found:
        return None
    argv = sys.argv if argv is None else argv
    unset = [part for name in found for part in ("-u", name)]
    python = os.path.relpath(sys.executable)
    python = sys.executable if python.startswith("..") else python
    command = shlex.join(["env", *unset, python, *argv])
    return (f"note: {' '.join(f'{k}={v}' for k, v in found.items())} set: OpenBLAS "
            "runs the kernel they choose, not its fastest for this processor, so "
            "ratios against BLAS-bound peers are not results. Rerun from the shell "
            f"with them unset for this command alone:\n    {command}")


def blas_line():
    """'BLAS: openblas 0.3.x, kernel SkylakeX, 2 threads' from threadpoolctl."""
    from threadpoolctl import threadpool_info

    parts = []
    for pool in threadpool_info():
        if pool.get("user_api") != "blas":
            continue
        parts.append(f"{pool.get('internal_api')} {pool.get('version')}, kernel "
                     f"{pool.get('architecture')}, {pool.get('num_threads')} threads")
    return "BLAS: " + ("; ".join(parts) if parts else "none loaded yet (import numpy first)")


def machine_line():
    """Load average, the BLAS line and the throttling variables, as one printable
    line."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    variables = " ".join(f"{name}={os.environ.get(name, 'unset')}" for name in THROTTLES)
    return f"load average {load} | {blas_line()} | {variables} | {os.cpu_count()} cores"


# ----------------------------------------------------------------- the command line

def argument_parser(doc, *, size="full", seed=True, seeds=None, out=True):
    """An ``ArgumentParser`` described by the first paragraph of ``doc`` (the
    script's docstring), with the arguments most scripts share.

    size : "full" adds ``--full`` (the paper's scale; the default run is quick),
        "quick" adds ``--quick`` (small sizes: a smoke run in seconds), None neither.
    seed : add ``--seed`` (default 0).
    seeds : a default list of seeds: add ``--seeds S [S ...]``.
    out : add ``--out`` (folder for PNGs and JSON, default benchmarks/output).
    """
    parser = argparse.ArgumentParser(description=" ".join(doc.split("\n\n")[0].split()))
    if size == "full":
        parser.add_argument("--full", action="store_true",
                            help="run at the paper's scale (slow); default is a quick run")
    elif size == "quick":
        parser.add_argument("--quick", action="store_true",
                            help="small sizes: a smoke run in seconds, not the figures")
    if seed:
        parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    if seeds is not None:
        parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds),
                            help=f"random seeds (default {' '.join(map(str, seeds))})")
    if out:
        parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                            help=f"folder for PNGs and JSON (default {DEFAULT_OUT})")
    return parser


def parse(parser, argv=None, *, machine=True):
    """Parse the command line, make ``--out``, print :func:`machine_line` (unless
    ``machine=False``: the script prints it itself) and, when a throttling variable
    is set, :func:`throttle_note` (whatever ``machine`` is). The run goes on in
    this process, with the environment as it is."""
    args = parser.parse_args(argv)
    if getattr(args, "out", None) is not None:
        args.out = Path(args.out)
        args.out.mkdir(parents=True, exist_ok=True)
    if machine:
        print(machine_line(), flush=True)
    note = throttle_note()
    if note is not None:
        print(note, flush=True)
    return args


def kernel_width_argument(parser, default="variance"):
    """``--kernel-width``: "auto", "variance" or a number (read as a float)."""
    def width(text):
        try:
            return float(text)
        except ValueError:
            return text

    parser.add_argument("--kernel-width", type=width, default=default,
                        help=f"auto, variance or a number (default {default})")


def installed(module):
    """Whether ``module`` can be imported here (without importing it)."""
    return importlib.util.find_spec(module) is not None


# ----------------------------------------------------------------- timing

def timed(call, *args, **kwargs):
    """(wall seconds, value) of ``call(*args, **kwargs)``."""
    start = time.perf_counter()
    value = call(*args, **kwargs)
    return time.perf_counter() - start, value


def run_child(code, *argv, src=None, env=None, timeout=None):
    """Run ``code`` in a new interpreter and return its last printed line, parsed
    as JSON, with ``process`` (its wall seconds, start-up included) added.

    ``code``: Python source (run with ``-c``), or the path of a script (a
    :class:`~pathlib.Path`, e.g. the calling script with a subcommand that runs one
    row). ``argv`` become the child's ``sys.argv[1:]``. The child finds this
    folder's modules (``from _common import ...``) and, with ``src``, imports the
    library from that ``src`` folder (another checkout) instead of this one.
    ``env``: extra environment variables. The child's stderr is shown when it fails.
    """
    env = dict(os.environ, **(env or {}))
    paths = [str(Path(src).resolve())] if src else []
    paths += [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p] + [str(HERE)]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    program = [str(code)] if isinstance(code, Path) else ["-c", code]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *program, *map(str, argv)], capture_output=True,
                          text=True, env=env, timeout=timeout)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"a row failed:\n{done.stderr[-4000:]}")
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["process"] = wall
    return row


#: Code for a child to report its peak resident memory (GiB) as ``peak_rss``.
PEAK_RSS = ("import resource\n"
            "def peak_rss():\n"
            "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20\n")


# ----------------------------------------------------------------- data

def mnist_splits(n_train=50000, n_val=10000, n_test=10000):
    """MNIST as ((X_train, y_train), (X_val, y_val), (X_test, y_test)): the first
    ``n_train`` training digits, ``n_val`` validation digits from digit 50,000 on
    (never among the training ones while n_train <= 50,000) and the first
    ``n_test`` official test digits; float32 pixels in [0, 1]."""
    from landmarking.datasets import load_mnist

    X, y = load_mnist(split="train")
    X_test, y_test = load_mnist(split="test")
    return ((X[:n_train], y[:n_train]), (X[50000:50000 + n_val], y[50000:50000 + n_val]),
            (X_test[:n_test], y_test[:n_test]))


def mnist_digits(n, seed=0):
    """The first n MNIST training digits (float32 pixels in [0, 1]) and labels;
    beyond the 60,000, digit i % 60,000 shifted by a random offset of -2..2
    pixels in each axis ((0, 0) excluded: no exact copies), zero-padded, its
    label carried along. Every call with the same ``seed`` gives the same rows."""
    from landmarking.datasets import load_mnist

    X, y = load_mnist()
    if n <= len(X):
        return X[:n], y[:n]
    extra = np.arange(n - len(X)) % len(X)
    offsets = [(dy, dx) for dy in range(-2, 3) for dx in range(-2, 3) if dy or dx]
    which = np.random.default_rng(seed).integers(len(offsets), size=len(extra))
    side = int(round(np.sqrt(X.shape[1])))
    images = X.reshape(-1, side, side)
    shifted = np.zeros((len(extra), side, side), dtype=X.dtype)
    for o, (dy, dx) in enumerate(offsets):
        rows = np.flatnonzero(which == o)
        # out[r, c] = image[r - dy, c - dx] where that pixel exists, else 0.
        shifted[rows, max(dy, 0):side + min(dy, 0), max(dx, 0):side + min(dx, 0)] = \
            images[extra[rows], max(-dy, 0):side - max(dy, 0), max(-dx, 0):side - max(dx, 0)]
    return (np.concatenate([X, shifted.reshape(len(extra), -1)]),
            np.concatenate([y, y[extra]]))


def face_pixels(name):
    """A face collection (:func:`landmarking.datasets.load_faces`) as rows of
    float64 pixels / 255, and the subject of each image."""
    from landmarking.datasets import load_faces

    images, subjects = load_faces(name)
    return images.reshape(len(images), -1).astype(np.float64) / 255.0, subjects


def halves(subjects):
    """Every other image of each subject: (train, test) boolean masks."""
    rank = np.empty(len(subjects), dtype=np.int64)
    for s in np.unique(subjects):
        members = np.flatnonzero(subjects == s)
        rank[members] = np.arange(len(members))
    return rank % 2 == 0, rank % 2 == 1


def newsgroups_sqrt_frequencies():
    """All 11,314 training posts of 20 Newsgroups (headers, quotes and signature
    stripped) as dense float32 square-root word frequencies over the paper's 1,545
    words: points on the unit sphere; and their newsgroups."""
    X, labels, _, _ = newsgroups_with_vocabulary()
    return X, labels


def newsgroups_with_vocabulary():
    """(X, labels) of :func:`newsgroups_sqrt_frequencies`, the vocabulary and the
    newsgroups' names."""
    import warnings

    from landmarking.datasets import load_newsgroups
    from landmarking.text import clean_post, sqrt_histograms

    docs, labels, names = load_newsgroups(subset="train")
    docs = [clean_post(d) for d in docs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the posts left empty are dropped (kept)
        X, vocab, kept = sqrt_histograms(docs, n_words=1545, dense=True)
    return X.astype(np.float32), labels[kept], vocab, names


def arc_length_swiss_roll(n, random_state=0):
    """Swiss roll (t cos t, h, t sin t), t in [1.5 pi, 4.5 pi], uniform in arc
    length s, height h uniform in [0, 0.7 * total length]. Returns X and (s, h)."""
    rng = np.random.default_rng(random_state)
    grid = np.linspace(1.5 * np.pi, 4.5 * np.pi, 20001)
    s_grid = 0.5 * (grid * np.sqrt(1 + grid ** 2) + np.arcsinh(grid))
    s = rng.uniform(s_grid[0], s_grid[-1], n)
    t = np.interp(s, s_grid, grid)
    h = rng.uniform(0, 0.7 * (s_grid[-1] - s_grid[0]), n)
    X = np.column_stack([t * np.cos(t), h, t * np.sin(t)])
    return X, np.column_stack([s - s_grid[0], h])


def neighbour_graph(X, k, cache=None):
    """(distances, indices, seconds) of the exact k-NN graph of X
    (:func:`landmarking.neighbors.nearest_neighbors`), kept in the folder ``cache``
    (as mnist_knn{k}_n{len(X)}.npz, so for the first n MNIST digits) when given;
    seconds are 0 for a graph read back."""
    from landmarking.neighbors import nearest_neighbors

    path = Path(cache) / f"mnist_knn{k}_n{len(X)}.npz" if cache else None
    if path is not None and path.exists():
        f = np.load(path)
        return f["d"], f["i"], 0.0
    seconds, (d, i) = timed(nearest_neighbors, X, k)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, d=d.astype(np.float32), i=i.astype(np.int32))
    return d, i, seconds


# ----------------------------------------------------------------- scores

def knn_accuracy(embedding, labels, *, k=10, cv=5):
    """Mean accuracy of a k-NN classifier on the embedding, ``cv``-fold."""
    from sklearn.model_selection import cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    return float(cross_val_score(KNeighborsClassifier(k), embedding, labels, cv=cv).mean())


def held_out_knn_accuracy(train, y_train, test, y_test, *, k=10, n_jobs=None):
    """Accuracy on ``test`` of a k-NN classifier fitted on ``train``."""
    from sklearn.neighbors import KNeighborsClassifier

    model = KNeighborsClassifier(k, n_jobs=n_jobs).fit(train, y_train)
    return float(model.score(test, y_test))


def feature_accuracy(landmarks, width, train, test, *, C=10.0, max_iter=1000):
    """Test accuracy of an L2 logistic regression (``C``) on the Gaussian landmark
    features exp(-||x - t||^2 / width); ``train`` and ``test`` are (X, y)."""
    from sklearn.linear_model import LogisticRegression

    from landmarking.kernels import gaussian_features

    (X_tr, y_tr), (X_te, y_te) = train, test
    F_tr, F_te = (gaussian_features(X, landmarks.astype(X.dtype), width) for X in (X_tr, X_te))
    return float(LogisticRegression(C=C, max_iter=max_iter).fit(F_tr, y_tr).score(F_te, y_te))


def validated_accuracy(landmarks, width, splits, lambdas=None):
    """(test accuracy, lambda) of an L2 logistic regression on the Gaussian landmark
    features, lambda chosen on the validation split from ``lambdas`` (default the
    paper's grid); ``splits`` as :func:`mnist_splits` returns them."""
    from landmarking.evaluation import select_by_validation
    from landmarking.kernels import gaussian_features

    (X_tr, y_tr), (X_va, y_va), (X_te, y_te) = splits
    F = [gaussian_features(X, landmarks.astype(X.dtype), width) for X in (X_tr, X_va, X_te)]
    grid = {} if lambdas is None else {"lambdas": lambdas}
    result = select_by_validation(F[0], y_tr, F[1], y_va, F[2], y_te, **grid)
    return result.test_accuracy, result.best_lambda


def heldout_objective(landmarks, width, X_val):
    """Mean log posterior variance of the landmarks, in order, on held-out rows:
    the joint GP objective (log det of Phi^T Phi, by the sequential pivots) per
    landmark."""
    from landmarking.gp.objective import _objectives
    from landmarking.kernels import gaussian_features

    F = gaussian_features(X_val, landmarks.astype(X_val.dtype), width).astype(np.float64)
    f = _objectives(F.T @ F, len(X_val), 0)
    return float(np.mean(np.log(np.maximum(f, 1e-300))))


def intrinsic_error(embedding, truth):
    """Relative error of the best affine image of ``embedding`` against the
    intrinsic coordinates (arc length, height):
    sqrt(sum |t - A e - b|^2 / sum |t - mean t|^2), 0 for a perfect unrolling."""
    from landmarking.metrics import affine_align

    aligned = affine_align(embedding, truth)
    return float(np.sqrt(np.sum((truth - aligned) ** 2)
                         / np.sum((truth - truth.mean(axis=0)) ** 2)))


def purity(X, landmarks, labels, k=100):
    """For each landmark: (majority label, share of its k nearest rows with it)."""
    from landmarking.kernels import squared_distances

    d2 = squared_distances(X.astype(np.float64), np.asarray(landmarks, np.float64))
    nearest = np.argsort(d2, axis=0, kind="stable")[:k].T
    out = []
    for rows in nearest:
        counts = np.bincount(labels[rows], minlength=labels.max() + 1)
        out.append((int(np.argmax(counts)), counts.max() / k))
    return out


# ----------------------------------------------------------------- output

def print_table(header, rows, *, floatfmt="{:.4f}"):
    """Print a Markdown table (pastes straight into docs/results/)."""
    def fmt(v):
        if isinstance(v, float):
            return floatfmt.format(v)
        return str(v)

    cells = [[fmt(v) for v in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h))
              for i, h in enumerate(header)]
    print("| " + " | ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells:
        print("| " + " | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) + " |")


def pyplot():
    """matplotlib.pyplot on the Agg backend (no screen needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path, dpi=90):
    """Lay out ``fig``, write it to ``path`` as a PNG, close it and say where."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    print(f"wrote {path}")
