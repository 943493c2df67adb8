"""What ``LANDMARKING_NATIVE=1`` (-march=native) buys over the default portable build.

The default build compiles the kernels for the platform's baseline (x86-64: SSE2),
so that a wheel runs on any processor; ``LANDMARKING_NATIVE=1`` adds the building
processor's own instructions (AVX2, AVX-512). This script times the same calls with
the two builds, back to back in one run, each measurement in a new interpreter that
imports the library from one tree, the first call and then the same call again
(warm):

- ``gp``: the default fit ``GPLandmarks(n_landmarks=100)`` on the first 50,000
  MNIST training digits (``--quick``: 10,000);
- ``lll``: the LLL reconstruction weights
  (``landmarking.lll._cpu.reconstruction_weights``, what
  ``locally_linear_landmarks`` computes first) of the 60,000 MNIST training digits
  from 1,000 random digits as landmarks, K_Z = 50 (``--quick``: 10,000 digits);
- ``sculpting``: ``ManifoldSculpting(random_state=0).fit`` on 2,000 Swiss-roll
  points (``--quick``: 1,000).

The portable tree runs twice: as it runs (``dispatched``: the GP and LLL kernels
pick their x86-64-v3 build on a processor that has it, ``landmarking._compiled``)
and held to its baseline build (``baseline``, ``LANDMARKING_KERNELS=baseline``).
"ratio" is seconds over the native build's (over the dispatched run's without
``--native``); above 1 is slower. With ``--runs N`` each runs N times, alternating,
and the table shows the medians. "CPU ratio" is the same ratio of the process's CPU seconds (all its
threads), steadier than wall seconds on a machine that others share. MNIST is read
through ``LANDMARKING_DATA``::

    LANDMARKING_DATA=/path/to/data python benchmarks/native_build.py \\
        --portable . --native /tmp/native-tree [--quick]

``--portable`` and ``--native`` are checkouts built in place (``python setup.py
build_ext --inplace``, the second with ``LANDMARKING_NATIVE=1``); ``--build DIR``
builds both from this checkout under DIR first (minutes). The AVX-512 (zmm) and
AVX (ymm) instruction counts of each tree's compiled modules are printed when
objdump is installed, to show that the two builds differ.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from _common import argument_parser, machine_line, parse, print_table, run_child

ROOT = Path(__file__).resolve().parents[1]

SIZES = {"gp": (50000, 10000), "lll": (60000, 10000), "sculpting": (2000, 1000)}

CHILD = {
    "gp": """
import json, time
from landmarking import GPLandmarks
from landmarking.datasets import load_mnist
X = load_mnist(split="train")[0][:{n}]
seconds, cpu = [], []
for _ in range(2):
    start, start_cpu = time.perf_counter(), time.process_time()
    GPLandmarks(n_landmarks=100, random_state=0).fit(X)
    seconds.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
print(json.dumps(dict(first=seconds[0], warm=seconds[1], first_cpu=cpu[0], warm_cpu=cpu[1])))
""",
    "lll": """
import json, time
import numpy as np
from landmarking.datasets import load_mnist
X = load_mnist(split="train")[0][:{n}]
T = X[np.random.default_rng(0).choice(len(X), 1000, replace=False)]
from landmarking.lll._cpu import reconstruction_weights
seconds, cpu = [], []
for _ in range(2):
    start, start_cpu = time.perf_counter(), time.process_time()
    reconstruction_weights(X, T, 50)
    seconds.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
print(json.dumps(dict(first=seconds[0], warm=seconds[1], first_cpu=cpu[0], warm_cpu=cpu[1])))
""",
    "sculpting": """
import json, time
from _common import arc_length_swiss_roll
from landmarking import ManifoldSculpting
X = arc_length_swiss_roll({n}, random_state=0)[0]
seconds, cpu = [], []
for _ in range(2):
    start, start_cpu = time.perf_counter(), time.process_time()
    ManifoldSculpting(random_state=0).fit(X)
    seconds.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
print(json.dumps(dict(first=seconds[0], warm=seconds[1], first_cpu=cpu[0], warm_cpu=cpu[1])))
""",
}


def build(tree, native):
    """Copy this checkout's sources to ``tree`` and build the kernels in place."""
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns(
        "__pycache__", "*.so", "*.c", "*.html", "*.egg-info"))
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy2(ROOT / name, tree / name)
    env = {k: v for k, v in os.environ.items() if k != "LANDMARKING_NATIVE"}
    if native:
        env["LANDMARKING_NATIVE"] = "1"
    print(f"building {tree} ({'native' if native else 'portable'})", flush=True)
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree,
                   env=env, check=True, capture_output=True)


def instructions(src):
    """'zmm N, ymm M' over the compiled modules under ``src``, or '' without objdump."""
    if shutil.which("objdump") is None:
        return ""
    zmm = ymm = 0
    for so in sorted(Path(src).rglob("*.so")):
        asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(so)],
                             capture_output=True, text=True, check=True).stdout
        zmm += asm.count("%zmm")
        ymm += asm.count("%ymm")
    return f"zmm {zmm}, ymm {ymm}"


def main(argv=None):
    parser = argument_parser(__doc__, size="quick", seed=False, out=False)
    parser.add_argument("--portable", type=Path,
                        help="checkout built in place (default: this one)")
    parser.add_argument("--native", type=Path,
                        help="checkout built in place with LANDMARKING_NATIVE=1")
    parser.add_argument("--build", type=Path,
                        help="build both trees from this checkout under this folder")
    parser.add_argument("--rows", default="gp,lll,sculpting",
                        help="comma-separated: gp, lll, sculpting (default all)")
    parser.add_argument("--runs", type=int, default=1,
                        help="new interpreters per tree and call, alternating; the table "
                             "shows medians (default 1)")
    args = parse(parser, argv)
    if args.build:
        args.portable, args.native = args.build / "portable", args.build / "native"
        build(args.portable, native=False)
        build(args.native, native=True)
    if args.portable is None:
        args.portable = ROOT
    portable = args.portable.resolve() / "src"
    # The portable tree twice: as it runs (the dispatched modules choose their
    # build by processor) and held to the baseline build (LANDMARKING_KERNELS).
    setups = {"dispatched": (portable, {}),
              "baseline": (portable, {"LANDMARKING_KERNELS": "baseline"})}
    if args.native is not None:
        setups["native"] = (args.native.resolve() / "src", {})
    for kind, (src, _) in setups.items():
        if not (src / "landmarking").is_dir():
            parser.error(f"{kind}: no src/landmarking under {src.parent}")
        print(f"{kind}: {src} ({instructions(src) or 'objdump not found'})", flush=True)
    peer = "native" if "native" in setups else "dispatched"

    rows = []
    for task in args.rows.split(","):
        n = SIZES[task][1 if args.quick else 0]
        code = CHILD[task].format(n=n)
        times = {kind: {"first": [], "warm": [], "first_cpu": [], "warm_cpu": []}
                 for kind in setups}
        for run in range(args.runs):
            for kind, (src, env) in setups.items():  # back to back, a new interpreter each
                row = run_child(code, src=src, env=env)
                for key in times[kind]:
                    times[kind][key].append(row[key])
                print(f"  {task} n={n} run {run + 1} {kind}: first {row['first']:.2f} s, "
                      f"warm {row['warm']:.2f} s", flush=True)
        medians = {kind: {key: float(np.median(v)) for key, v in t.items()}
                   for kind, t in times.items()}
        q = medians[peer]
        for kind, m in medians.items():
            if kind == peer:
                continue
            rows.append([f"{task} (n={n})", f"{kind} / {peer}", m["first"], q["first"],
                         m["first"] / q["first"], m["warm"], q["warm"], m["warm"] / q["warm"],
                         m["first_cpu"] / q["first_cpu"], m["warm_cpu"] / q["warm_cpu"]])
    print()
    print_table(["call", "builds", "first s", "peer first s", "ratio", "warm s",
                 "peer warm s", "ratio", "CPU ratio first", "CPU ratio warm"], rows,
                floatfmt="{:.2f}")
    slower = [f"{r[0]} {r[1]}: {max(r[4], r[7]):.2f}x" for r in rows
              if r[1].startswith("dispatched") and max(r[4], r[7]) > 1.10]
    print("\ndispatched build more than 10% slower than native: "
          + (", ".join(slower) if slower else "nowhere"))
    print(f"after: {machine_line()}")


if __name__ == "__main__":
    main()
