"""Locally Linear Landmarks at a million digits: the LLL paper's large experiment.

Vladymyrov & Carreira-Perpinan (2013), Fig. 7: 1,020,000 infinite-MNIST digits,
10,000 landmarks, K_Z = 5, a 2-D embedding. Here the digits are
:func:`landmarking.datasets.make_deformed_digits` (elastic warps and shifts of the
MNIST training digits, seed 0), and every row runs in a new interpreter on the
same digits, back to back:

- ``le``: exact Laplacian eigenmaps (:class:`~landmarking.LaplacianEigenmaps`,
  its defaults: usearch's HNSW graph, and ARPACK), and ``le-hnsw``: the same with
  the HNSW graph asked for by name;
- ``lll``: Locally Linear Landmarks (10,000 random landmarks, K_Z = 5, the graph
  from the landmarks' cells, a few LOBPCG iterations on the full graph), and
  ``lll-paper``: the paper's LLL alone (no refinement, the HNSW graph);
- ``lll-kmeans``, ``lll-gp``: the ``lll`` row with the data points nearest to
  mini-batch k-means centres, or GP landmarks (:class:`~landmarking.GPLandmarks`,
  its defaults), as landmarks, their selection timed in the fit;
- ``lez``: LE(Z), Laplacian eigenmaps of the landmarks alone, placed with Z;
- ``le10``, ``lll10``: the same in 10-D;
- ``default``, ``previous``: ``LocallyLinearLandmarks()`` with its defaults, and with
  those before 0.2.0 (100 landmarks, no refinement), beside ``le``, the default
  ``LaplacianEigenmaps()`` (docs/results/lll.md, "The defaults");
- ``umap``: umap-learn's UMAP (2-D), the tool users pick instead, on the first
  ``--umap-n`` digits (optional: ``pip install umap-learn``).

Each row prints the seconds of each stage (``timings_``), the peak resident memory
of its process, and the 10-NN accuracy of the embedding on held-out rows: the
classifier learns the embedding of the rows whose source digit is not a multiple
of 10 and labels the others (about 102,000 rows of 6,000 source digits it never
saw). LLL rows also map ``--new`` new digits (deformations of the 10,000 MNIST
test digits, seed 1) with ``transform``: seconds, and the accuracy of the same
classifier on them. The 2-D LLL and LE embeddings are drawn, coloured by digit,
to ``--figure`` (the paper's Fig. 7).

    python benchmarks/lll_million.py                       # every row but umap
    python benchmarks/lll_million.py --rows lll,le --n 200000
    python benchmarks/lll_million.py --rows umap --umap-n 300000
    python benchmarks/lll_million.py --rows le10 --baseline ../before/src

With ``--baseline PATH/src`` every row runs twice, back to back: with this
checkout, then with the library of that ``src`` folder (another checkout, its
compiled loops built; the row is named ``...-before``), and the ratio of the two
is printed.

The digits are written once to ``--cache`` (3.1 GB for 1,020,000) and read back by
each row; the rows' memory includes them (3.0 GiB of float32).
"""

import json
import textwrap
from pathlib import Path

import numpy as np
from _common import PEAK_RSS, argument_parser, machine_line, parse, pyplot, run_child, timed

FIGURE = Path(__file__).resolve().parents[1] / "docs" / "figures" / "lll_million.png"

#: Each row's estimator, built from ``n_components`` (d).
ROWS = {
    "le": "LaplacianEigenmaps(n_components={d}, random_state=0)",
    # Exact LE on usearch's HNSW graph: its "auto" graph before the cells became
    # the default for dense data.
    "le-hnsw": ("LaplacianEigenmaps(n_components={d}, neighbors_method='approximate', "
                "random_state=0)"),
    "lll": ("LocallyLinearLandmarks(n_components={d}, n_landmarks={landmarks}, "
            "n_landmark_neighbors=5, neighbors_method='cells', refine={refine}, "
            "random_state=0)"),
    "lll-paper": ("LocallyLinearLandmarks(n_components={d}, n_landmarks={landmarks}, "
                  "n_landmark_neighbors=5, random_state=0)"),
    "lll-kmeans": ("LocallyLinearLandmarks(n_components={d}, n_landmarks={landmarks}, "
                   "n_landmark_neighbors=5, landmarks='kmeans', neighbors_method='cells', "
                   "refine={refine}, random_state=0)"),
    "lll-gp": ("LocallyLinearLandmarks(n_components={d}, n_landmark_neighbors=5, "
               "landmarks=GPLandmarks(n_landmarks={landmarks}, random_state=0), "
               "neighbors_method='cells', refine={refine}, random_state=0)"),
    # The defaults a user gets (n_landmarks="auto", refine="auto", the "auto"
    # graph), and those before 0.2.0 (100 landmarks, no refinement).
    "default": "LocallyLinearLandmarks(n_components={d}, random_state=0)",
    "previous": ("LocallyLinearLandmarks(n_components={d}, n_landmarks=100, refine=False, "
                 "random_state=0)"),
    "lez": ("LocallyLinearLandmarks(n_components={d}, n_landmarks={landmarks}, "
            "n_landmark_neighbors=5, method='le-z', random_state=0)"),
}

_CHILD = PEAK_RSS + """
import json, os, time
import numpy as np
from landmarking import GPLandmarks, LaplacianEigenmaps, LocallyLinearLandmarks
X = np.load({path!r})  # read into memory (a memory map's pages would add to the RSS)
model = {estimator}
start = time.perf_counter()
embedding = model.fit_transform(X)
seconds = time.perf_counter() - start
np.save({embedding_path!r}, embedding)
row = dict(seconds=seconds, timings={{k: round(v, 2) for k, v in
                                      getattr(model, "timings_", {{}}).items()}},
           load=os.getloadavg()[0], peak_rss_fit=peak_rss())
if {new_path!r} and hasattr(model, "landmark_embedding_"):
    del X
    new = np.load({new_path!r}, mmap_mode="r")
    start = time.perf_counter()
    mapped = model.transform(new)
    row["map_seconds"] = time.perf_counter() - start
    np.save({mapped_path!r}, mapped)
row["peak_rss"] = peak_rss()
print(json.dumps(row))
"""

_UMAP_CHILD = PEAK_RSS + """
import json, os, time
import numpy as np
import umap
with open({path!r}, "rb") as f:  # the first n rows only, read into memory
    version = np.lib.format.read_magic(f)
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    shape, _, dtype = read_header(f)
    X = np.fromfile(f, dtype=dtype, count={n} * shape[1]).reshape({n}, shape[1])
start = time.perf_counter()
embedding = umap.UMAP(n_components=2, random_state=0).fit_transform(X)
seconds = time.perf_counter() - start
np.save({embedding_path!r}, embedding)
print(json.dumps(dict(seconds=seconds, load=os.getloadavg()[0], peak_rss=peak_rss())))
"""


def parse_args():
    p = argument_parser(__doc__, size=None, seed=False, out=False)
    p.add_argument("--n", type=int, default=1_020_000, help="digits to embed")
    p.add_argument("--new", type=int, default=1_000_000, help="new digits LLL maps")
    p.add_argument("--landmarks", type=int, default=10_000)
    p.add_argument("--refine", default="3", help="LOBPCG iterations of the lll rows")
    p.add_argument("--rows", default="le,lll,lll-paper,lez,le10,lll10",
                   help="comma-separated rows (le, lll, lll-paper, lez, each with a 10 "
                   "suffix for 10-D; umap)")
    p.add_argument("--umap-n", type=int, default=100_000, help="digits UMAP embeds")
    p.add_argument("--cache", default="benchmarks/output/million",
                   help="folder for the digits and the embeddings")
    p.add_argument("--figure", default=str(FIGURE), help="the Fig. 7 picture ('' for none)")
    p.add_argument("--baseline", type=Path, default=None,
                   help="another checkout's src folder: each row also runs with it")
    return parse(p)


def digits(cache, n, split, seed):
    """The digits (a .npy path), their labels and source digits, made once."""
    from landmarking.datasets import make_deformed_digits

    path = cache / f"digits_{split}_{n}_{seed}.npy"
    labels = cache / f"digits_{split}_{n}_{seed}_labels.npy"
    sources = cache / f"digits_{split}_{n}_{seed}_sources.npy"
    if not (path.exists() and labels.exists() and sources.exists()):
        seconds, (_, y, s) = timed(make_deformed_digits, n, random_state=seed, split=split,
                                   out=path, overwrite=True, return_source=True)
        np.save(labels, y)
        np.save(sources, s)
        print(f"made {n:,} {split} digits in {seconds:.1f} s ({path})", flush=True)
    return path, np.load(labels), np.load(sources)


def held_out_accuracy(embedding, labels, sources):
    """10-NN accuracy on the rows whose source digit is a multiple of 10, learnt
    from the others; and the classifier."""
    from sklearn.neighbors import KNeighborsClassifier

    test = sources % 10 == 0
    clf = KNeighborsClassifier(10, n_jobs=-1).fit(embedding[~test], labels[~test])
    return float(clf.score(embedding[test], labels[test])), clf


def row_code(name, args, cache, path, new_path, label):
    """The child's code for row ``name``, its files named by ``label``."""
    base, d = (name[:-2], 10) if name.endswith("10") else (name, 2)
    estimator = ROWS[base].format(d=d, landmarks=args.landmarks, refine=args.refine)
    mapped = cache / f"mapped_{label}_{args.n}.npy"
    return _CHILD.format(path=str(path), estimator=estimator,
                         embedding_path=str(cache / f"embedding_{label}_{args.n}.npy"),
                         new_path=str(new_path) if new_path and base != "le" else "",
                         mapped_path=str(mapped)), base, d


def draw(cache, args, labels, names):
    plt = pyplot()
    shown = [n for n in names if (cache / f"embedding_{n}_{args.n}.npy").exists()]
    if not shown:
        return
    fig, axes = plt.subplots(1, len(shown), figsize=(6 * len(shown), 6), squeeze=False)
    rng = np.random.default_rng(0)
    rows = rng.choice(args.n, min(args.n, 200_000), replace=False)
    for ax, name in zip(axes[0], shown, strict=True):
        E = np.load(cache / f"embedding_{name}_{args.n}.npy")[rows]
        ax.scatter(E[:, 0], E[:, 1], c=labels[rows], cmap="tab10", s=0.2, alpha=0.5,
                   rasterized=True)
        ax.set_title(f"{name}: {args.n:,} deformed digits")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    Path(args.figure).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.figure, dpi=90)
    print(f"wrote {args.figure}")


def main():
    args = parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    path, labels, sources = digits(cache, args.n, "train", 0)
    rows = [r for r in args.rows.split(",") if r]
    new_path = new_labels = None
    if args.new and any(r.startswith(("lll", "default", "previous")) for r in rows):
        new_path, new_labels, _ = digits(cache, args.new, "test", 1)
    print(f"\n| row (n = {args.n:,}) | d | seconds | stages (s) | peak RSS of the fit GiB | "
          f"10-NN held out | map {args.new:,} new s | their accuracy | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    results = []
    for name in rows:
        if name == "umap":
            emb_path = cache / f"embedding_umap_{args.umap_n}.npy"
            row = run_child(textwrap.dedent(_UMAP_CHILD.format(
                path=str(path), n=args.umap_n, embedding_path=str(emb_path))))
            acc, _ = held_out_accuracy(np.load(emb_path), labels[:args.umap_n],
                                       sources[:args.umap_n])
            print(f"| umap (first {args.umap_n:,}) | 2 | {row['seconds']:.1f} | | "
                  f"{row['peak_rss']:.2f} | {acc:.4f} | | | {row['load']:.2f} |", flush=True)
            results.append(dict(name=name, accuracy=acc, **row))
            continue
        for src in [None] + ([args.baseline] if args.baseline else []):
            label = name if src is None else f"{name}-before"
            results.append(run_row(name, label, src, args, cache, (path, labels, sources),
                                   (new_path, new_labels)))
            (cache / f"lll_million_{args.n}.json").write_text(json.dumps(results, indent=1))
    times = {r["name"]: r["seconds"] for r in results}
    pairs = list(RATIOS)
    pairs += [(r, f"{r}-before") for r in rows if args.baseline]
    for a, b in pairs:
        if a in times and b in times:
            print(f"{a} / {b}: {times[a] / times[b]:.3f}")
    if args.figure:
        draw(cache, args, labels, [r for r in ("lll", "le") if r in rows])
    print(machine_line())


#: The ratios printed when both rows ran.
RATIOS = (("lll", "le"), ("lll-paper", "le"), ("lez", "le"), ("lll10", "le10"),
          ("default", "le"), ("default10", "le10"), ("previous10", "le10"),
          ("le10", "le-hnsw10"), ("le", "le-hnsw"))


def run_row(name, label, src, args, cache, digits_train, digits_new):
    """Row ``name`` in a new interpreter (the library from ``src`` when given):
    prints its line and returns its record."""
    path, labels, sources = digits_train
    new_path, new_labels = digits_new
    code, base, d = row_code(name, args, cache, path, new_path, label)
    row = run_child(code, src=src)
    embedding = np.load(cache / f"embedding_{label}_{args.n}.npy")
    acc, clf = held_out_accuracy(embedding, labels, sources)
    mapped = ""
    if "map_seconds" in row:
        new_acc = clf.score(np.load(cache / f"mapped_{label}_{args.n}.npy"), new_labels)
        row["new_accuracy"] = float(new_acc)
        mapped = f"{row['map_seconds']:.1f} | {new_acc:.4f}"
    else:
        mapped = "n/a | n/a"
    stages = ", ".join(f"{k} {v}" for k, v in row["timings"].items() if k != "total")
    print(f"| {label} | {d} | {row['seconds']:.1f} | {stages} | {row['peak_rss_fit']:.2f} | "
          f"{acc:.4f} | {mapped} | {row['load']:.2f} |", flush=True)
    return dict(name=label, accuracy=acc, **row)


if __name__ == "__main__":
    main()
