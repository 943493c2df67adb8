"""Default settings, this checkout against another: is a change free of speed cost?

Each row fits an estimator at its defaults in a new interpreter, twice (the first
call, then a warm one), once with this checkout's ``src`` and once with the
baseline's (``--baseline PATH/src``, another checkout with its kernels built in
place), back to back and alternating, ``--repeats`` times; the ratio is this
checkout's median over the baseline's, with the machine line of each row.

    python benchmarks/default_speed.py --baseline ../old-checkout/src
"""

import statistics
import sys
from pathlib import Path

from _common import argument_parser, machine_line, parse, print_table, run_child

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

#: name -> (the estimator at its defaults, the data): MNIST digits from
#: LANDMARKING_DATA in [0, 1], or a Swiss roll.
ROWS = {
    "GPLandmarks(n_landmarks=100)": ("L.GPLandmarks(n_landmarks=100, random_state=0)", "mnist"),
    "LocallyLinearLandmarks()": ("L.LocallyLinearLandmarks(random_state=0)", "mnist"),
    "LaplacianEigenmaps()": ("L.LaplacianEigenmaps(random_state=0)", "mnist"),
    "ManifoldSculpting()": ("L.ManifoldSculpting(random_state=0)", "roll"),
}

CHILD = """
import json, sys, time
import numpy as np
import landmarking as L
from landmarking.datasets import load_mnist, make_sculpting_swiss_roll
estimator, data, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if data == "mnist":
    X = load_mnist()[0][:n]
else:
    X = make_sculpting_swiss_roll(n, random_state=0)[0]
seconds = []
for _ in range(2):
    start = time.perf_counter()
    eval(estimator).fit(X)
    seconds.append(time.perf_counter() - start)
print(json.dumps(dict(first=seconds[0], warm=seconds[1], file=L.__file__)))
"""


def main(argv=None):
    parser = argument_parser(__doc__, seed=False, out=False)
    parser.add_argument("--baseline", type=Path, required=True,
                        help="the other checkout's src folder (kernels built in place)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parse(parser, argv)
    n_mnist, n_roll = (60000, 2000) if args.full else (10000, 1000)
    table = []
    for name, (estimator, data) in ROWS.items():
        n = n_mnist if data == "mnist" else n_roll
        times = {"this": [], "baseline": []}
        for _ in range(args.repeats):
            for who, src in (("baseline", args.baseline), ("this", SRC)):
                row = run_child(CHILD, estimator, data, n, src=src)
                assert Path(row["file"]).resolve().is_relative_to(Path(src).resolve())
                times[who].append(row)
        cells = [name, n]
        for key in ("first", "warm"):
            this = statistics.median(r[key] for r in times["this"])
            base = statistics.median(r[key] for r in times["baseline"])
            cells += [f"{base:.2f}", f"{this:.2f}", f"{this / base:.2f}"]
        cells.append(machine_line().split(" | ")[0])
        table.append(cells)
    print_table(["fit", "n", "first: baseline s", "this s", "ratio",
                 "warm: baseline s", "this s", "ratio", "load"], table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
