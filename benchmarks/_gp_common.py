"""Shared plumbing of the GP paper's benchmark scripts (gp_*.py).

Each script runs a quick version by default (well under two minutes on 2 cores)
and the paper's scale with ``--full``; PNGs go to ``--out`` (default
benchmarks/output). Data comes from ``LANDMARKING_DATA`` (see the datasets' README).
:func:`parse_args` first makes BLAS run at full speed and prints the machine line
(``_machine.py``), so every timing these scripts print comes with it.
"""

import argparse
import time
from contextlib import contextmanager
from pathlib import Path

from _machine import full_speed_blas, machine_line

DEFAULT_OUT = Path(__file__).resolve().parent / "output"


def parse_args(description, argv=None, extra=None):
    """Common arguments: --full, --out, --seed (plus ``extra(parser)`` ones).

    Re-runs the script with BLAS at full speed where it is throttled
    (:func:`_machine.full_speed_blas`) and prints :func:`_machine.machine_line`.
    """
    full_speed_blas()
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--full", action="store_true",
                        help="run at the paper's scale (slow); default is a quick run")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"folder for PNGs (default {DEFAULT_OUT})")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    print(machine_line(), flush=True)
    return args


def parse_args_with_kernel_width(description, argv=None):
    """:func:`parse_args` plus ``--kernel-width`` (auto, variance or a number)."""
    def extra(parser):
        parser.add_argument("--kernel-width", default="variance",
                            help="auto, variance (default, the paper's) or a number")

    args = parse_args(description, argv, extra)
    try:
        args.kernel_width = float(args.kernel_width)
    except ValueError:
        pass
    return args


@contextmanager
def timed(store, key):
    """Record the wall time of a block in ``store[key]`` (seconds)."""
    start = time.perf_counter()
    yield
    store[key] = time.perf_counter() - start


def print_table(header, rows, *, floatfmt="{:.4f}"):
    """Print a Markdown table (pastes straight into docs/results.md)."""
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
