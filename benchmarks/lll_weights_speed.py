"""LLL's reconstruction weights Z, this checkout against another, back to back.

Times ``reconstruction_weights(X, T, 5)`` (the weights stage of
``LocallyLinearLandmarks``; with ``--stage coordinates``, the cells graph's
search coordinates of every row, ``_LandmarkAxes(T).search_coordinates(X)``) on
the first ``--n`` deformed digits of a cached
``make_deformed_digits`` set (``--digits``, a ``.npy`` file of float32 rows, as
``lll_million.py --cache`` writes them) and, for each ``--landmarks`` L, L of
those digits drawn at random (seed 0) as landmarks. Each timing is a new
interpreter, this checkout and the baseline (``--baseline PATH/src``, its
compiled loops built in place) alternating, ``--repeats`` times; a row also says
whether the two results are the same (Z: indices equal, weights within 1e-12 of
each other, the rounding of another BLAS product; coordinates: equal).

    python benchmarks/lll_weights_speed.py --baseline ../old-checkout/src \\
        --digits /work/cache/million/digits_train_1020000_0.npy --n 100000
"""

import json
import tempfile
from pathlib import Path

import numpy as np
from _common import argument_parser, machine_line, parse, print_table, run_child

CHILD = """
import json, sys, time
import numpy as np
from landmarking.lll._cpu import reconstruction_weights
X = np.load({digits!r}, mmap_mode="r")
rng = np.random.default_rng(0)
T = np.asarray(X[np.sort(rng.choice(len(X), {n_landmarks}, replace=False))], dtype=np.float64)
X = np.ascontiguousarray(X[:{n}])
start = time.perf_counter()
if {stage!r} == "weights":
    Z = reconstruction_weights(X, T, 5)
    result = np.c_[Z.indices.reshape(-1, 5), Z.data.reshape(-1, 5)]
else:
    from landmarking.lll._cpu import _LandmarkAxes
    result = _LandmarkAxes(T).search_coordinates(X)[0]
seconds = time.perf_counter() - start
np.save({out!r}, result)
print(json.dumps(dict(seconds=seconds)))
"""


def timed(src, stage, digits, n, n_landmarks, out):
    """Seconds of one ``stage`` in a new interpreter (``src``: the checkout's
    ``src`` folder, None for this one); its result is saved to ``out``."""
    code = CHILD.format(stage=stage, digits=str(digits), n=n, n_landmarks=n_landmarks,
                        out=str(out))
    return run_child(code, src=src)["seconds"]


def same_result(stage, a_path, b_path):
    """Whether two saved Z have the same indices and weights within 1e-12, or two
    saved coordinates are equal."""
    a, b = np.load(a_path), np.load(b_path)
    if stage != "weights":
        return bool(np.array_equal(a, b))
    return bool(np.array_equal(a[:, :5], b[:, :5]) and np.abs(a[:, 5:] - b[:, 5:]).max() < 1e-12)


def main(argv=None):
    parser = argument_parser(__doc__, size=None, seed=False, out=False)
    parser.add_argument("--baseline", type=Path, required=True,
                        help="the src folder of the checkout to compare with")
    parser.add_argument("--digits", type=Path, required=True,
                        help="a .npy file of deformed digits (float32 rows)")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--landmarks", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stage", choices=["weights", "coordinates"], default="weights")
    args = parse(parser, argv)
    print(machine_line())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        this_z, base_z = Path(tmp) / "this.npy", Path(tmp) / "base.npy"
        for n_landmarks in args.landmarks:
            for _ in range(args.repeats):
                this = timed(None, args.stage, args.digits, args.n, n_landmarks, this_z)
                base = timed(args.baseline, args.stage, args.digits, args.n, n_landmarks,
                             base_z)
                rows.append([f"{args.n:,}", n_landmarks, this, base, this / base,
                             same_result(args.stage, this_z, base_z)])
                print(json.dumps(dict(zip(["n", "landmarks", "this", "baseline"],
                                          rows[-1][:4], strict=True))), flush=True)
    print_table(["digits", "landmarks", "this (s)", "baseline (s)", "ratio", "same result"],
                rows)
    print(machine_line())
    return rows


if __name__ == "__main__":
    main()
