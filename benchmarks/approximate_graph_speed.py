"""The approximate 10-NN graph of exact LE, this checkout against another, back to back.

Times ``nearest_neighbors(X, 10, method="approximate", random_state=0)`` (the
graph stage of ``LaplacianEigenmaps()`` on dense data of many rows) on the first
``--n`` deformed digits of a cached ``make_deformed_digits`` set (``--digits``, a
``.npy`` file of float32 rows, as ``lll_million.py --cache`` writes them). Each
timing is a new interpreter, this checkout and the baseline (``--baseline
PATH/src``, its compiled loops built in place) alternating, ``--repeats`` times.
Each row also gives the recall@10 of the lists on ``--queries`` rows drawn at
random (seed 5) against the exact search's lists of those rows.

    python benchmarks/approximate_graph_speed.py --baseline ../old-checkout/src \\
        --digits /work/cache/million/digits_train_1020000_0.npy --n 300000
"""

import json
import tempfile
from pathlib import Path

import numpy as np
from _common import argument_parser, machine_line, parse, print_table, run_child

CHILD = """
import json, time
import numpy as np
from landmarking.neighbors import nearest_neighbors
X = np.ascontiguousarray(np.load({digits!r}, mmap_mode="r")[:{n}])
start = time.perf_counter()
distances, indices = nearest_neighbors(X, 10, method="approximate", random_state=0)
seconds = time.perf_counter() - start
np.save({out!r}, indices)
print(json.dumps(dict(seconds=seconds)))
"""


def recall(indices, X, rows):
    """The share of each row's 10 exact nearest others that its list holds."""
    from landmarking.neighbors import exact_knn

    _, exact = exact_knn(X, 11, query=X[rows])  # each row finds itself first
    hits = [len(set(indices[r]) & (set(e) - {r})) for r, e in zip(rows, exact, strict=True)]
    return float(np.mean(hits)) / 10


def main():
    p = argument_parser(__doc__, size=None, seed=False, out=False)
    p.add_argument("--baseline", type=Path, required=True,
                   help="the src folder of another checkout, its loops built")
    p.add_argument("--digits", type=Path, required=True, help="a .npy of float32 digits")
    p.add_argument("--n", type=int, default=300_000, help="rows of the graph")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--queries", type=int, default=1000, help="rows whose recall is measured")
    args = parse(p)
    X = np.ascontiguousarray(np.load(args.digits, mmap_mode="r")[:args.n])
    rows = np.random.default_rng(5).choice(args.n, args.queries, replace=False)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            row = [args.n]
            for name, src in (("this", None), ("baseline", args.baseline)):
                out = Path(tmp) / f"{name}.npy"
                code = CHILD.format(digits=str(args.digits), n=args.n, out=str(out))
                row += [run_child(code, src=src)["seconds"], recall(np.load(out), X, rows)]
            row.insert(5, row[1] / row[3])
            results.append(row)
            print(json.dumps(dict(zip(["n", "this", "recall", "baseline", "baseline recall",
                                       "ratio"], row, strict=True))), flush=True)
    print_table(["rows", "this (s)", "recall@10", "baseline (s)", "recall@10", "ratio"],
                results, floatfmt="{:.4f}")
    print(machine_line())


if __name__ == "__main__":
    main()
