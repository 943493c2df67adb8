"""LocallyLinearLandmarks() at its defaults, this checkout against another, beside exact LE.

The defaults changed in 0.2.0 (``n_landmarks="auto"``, ``refine="auto"``, the cells
graph sized for itself). Each row fits one estimator at its defaults in a new
interpreter and scores the embedding; the rows run back to back:

- ``mnist``: MNIST's 60,000 training digits in 10-D; the score is the 10-NN
  accuracy of the embedding, trained on the first 50,000 digits and tested on the
  last 10,000 (higher is better);
- ``roll``: scikit-learn's Swiss roll of 300,000 points in 2-D; the score is the
  Procrustes error against the roll's coordinates (position along the roll,
  height), after scaling the position to the height's range (lower is better).

For each: ``LocallyLinearLandmarks`` with this checkout's defaults, with the
baseline checkout's (``--baseline PATH/src``, its kernels built in place), and
``LaplacianEigenmaps`` with this checkout's. ``--n-mnist``/``--n-roll`` make a
smaller run.

    python benchmarks/lll_defaults.py --baseline ../old-checkout/src
"""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import argument_parser, machine_line, parse, print_table, run_child

#: name -> the estimator at its defaults, from the data's embedding dimension d.
ESTIMATORS = {
    "LocallyLinearLandmarks()": "L.LocallyLinearLandmarks(n_components={d}, random_state=0)",
    "LaplacianEigenmaps()": "L.LaplacianEigenmaps(n_components={d}, random_state=0)",
}
DIMENSIONS = {"mnist": 10, "roll": 2}

CHILD = """
import json, sys, time
import numpy as np
import landmarking as L
from lll_defaults import data
X, _ = data({dataset!r}, {n})
model = {estimator}
start = time.perf_counter()
embedding = model.fit_transform(X)
seconds = time.perf_counter() - start
np.save({out!r}, embedding)
timings = {{k: round(v, 2) for k, v in getattr(model, "timings_", {{}}).items()}}
print(json.dumps(dict(seconds=seconds, n_landmarks=getattr(model, "n_landmarks_", None),
                      timings=timings)))
"""


def data(dataset, n):
    """The rows and what scores their embedding: MNIST labels, or the roll's
    coordinates (position along the roll scaled to the height's range, height)."""
    if dataset == "mnist":
        from landmarking.datasets import load_mnist

        X, y = load_mnist()
        return X[:n], y[:n]
    from sklearn.datasets import make_swiss_roll

    X, t = make_swiss_roll(n, random_state=0)
    position = (t - t.min()) / np.ptp(t) * np.ptp(X[:, 1])
    return X, np.column_stack([position, X[:, 1]])


def score(dataset, embedding, truth):
    """10-NN accuracy on the last sixth (MNIST), or the Procrustes error (roll)."""
    if dataset == "mnist":
        from sklearn.neighbors import KNeighborsClassifier

        split = len(truth) - len(truth) // 6
        knn = KNeighborsClassifier(10).fit(embedding[:split], truth[:split])
        return knn.score(embedding[split:], truth[split:])
    from landmarking.metrics import procrustes_error

    return procrustes_error(embedding, truth)


def main(argv=None):
    parser = argument_parser(__doc__, size=None, seed=False, out=False)
    parser.add_argument("--baseline", type=Path, required=True,
                        help="the other checkout's src folder (kernels built in place)")
    parser.add_argument("--n-mnist", type=int, default=60_000)
    parser.add_argument("--n-roll", type=int, default=300_000)
    parser.add_argument("--datasets", default="mnist,roll")
    args = parse(parser, argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dataset in args.datasets.split(","):
            n = args.n_mnist if dataset == "mnist" else args.n_roll
            truth = data(dataset, n)[1]
            runs = [("this", "LocallyLinearLandmarks()", None),
                    ("baseline", "LocallyLinearLandmarks()", args.baseline),
                    ("this", "LaplacianEigenmaps()", None)]
            for tree, name, src in runs:
                out = str(Path(tmp) / "embedding.npy")
                estimator = ESTIMATORS[name].format(d=DIMENSIONS[dataset])
                code = CHILD.format(dataset=dataset, n=n, estimator=estimator,
                                    out=out)
                row = run_child(code, src=src)
                row.update(dataset=f"{dataset} {n:,}", tree=tree, estimator=name,
                           score=score(dataset, np.load(out), truth))
                rows.append(row)
                print(json.dumps(row), flush=True)
    print_table(["data", "estimator", "checkout", "seconds", "landmarks", "score"],
                [[r["dataset"], r["estimator"], r["tree"], r["seconds"],
                  str(r["n_landmarks"]), r["score"]] for r in rows])
    print(machine_line())
    return rows


if __name__ == "__main__":
    sys.exit(main() and 0)
