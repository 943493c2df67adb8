"""The default GPLandmarks in a new interpreter: the first call and the warm one.

A user's script is a new process. Each run starts a fresh Python
(``sys.executable``) that loads MNIST's 50,000 training digits, then times
``GPLandmarks(n_landmarks=100, n_jobs=2).fit(X)`` (the default: blocks of 50 with
100 steps) twice with two seeds: the first call pays for loading the compiled
kernels and the libraries they call, the second is warm. The machine line (load,
BLAS) is printed before and after.

Usage::

    python benchmarks/gp_first_call.py [--runs 2]
"""

import argparse
import subprocess
import sys

from _machine import full_speed_blas, machine_line

CHILD = """
import time
from landmarking import GPLandmarks
from landmarking.datasets import load_mnist
X = load_mnist(split="train")[0][:50000]
seconds = []
for seed in (0, 1):
    start = time.perf_counter()
    GPLandmarks(n_landmarks=100, n_jobs=2, random_state=seed).fit(X)
    seconds.append(time.perf_counter() - start)
print(*seconds)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="new interpreters, one after another")
    args = parser.parse_args()
    full_speed_blas()
    print(machine_line())
    print("| run | first call s | warm call s |")
    print("|---|---|---|")
    for run in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                             check=True).stdout.split()
        print(f"| {run + 1} | {float(out[0]):.2f} | {float(out[1]):.2f} |", flush=True)
    print(machine_line())


if __name__ == "__main__":
    main()
