"""``landmarking demo`` and ``landmarking reproduce``: commands that run other code
(the demo, and a benchmark script of the source checkout)."""

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from ..io import InputError
from ._common import say
from .parser import EXPERIMENTS

# Called by :func:`landmarking.cli.main`: the command line, not these functions, is the
# public interface (nothing here is in the API reference).
__all__: list[str] = []


def run_demo(args: argparse.Namespace) -> int:
    """Run ``landmarking demo``; returns the exit status."""
    from ..demo import run_demo as demo  # loads the estimators: only for this command

    demo()
    return 0


def run_reproduce(args: argparse.Namespace, folder: Path) -> int:
    """Run ``landmarking reproduce``: the experiment's script in ``folder``, the
    ``benchmarks/`` folder of the source checkout; returns the script's exit status."""
    script = folder / EXPERIMENTS[args.experiment]
    if not folder.is_dir():
        raise InputError(
            f"{folder}: no benchmarks folder; `reproduce` runs the scripts of a source checkout. "
            "Clone the repository and install it with `pip install -e .` (or `make install`)."
        )
    if not script.is_file():
        raise InputError(
            f"{script}: this experiment's script is missing from the checkout; update the "
            "repository (git pull)."
        )
    command = [sys.executable, str(script)]
    if args.full:
        command.append("--full")
    if args.out:
        command += ["--out", str(Path(args.out).resolve())]
    # The script runs from the repository root (where the default data folder
    # ../shared/data resolves), so paths the user gave relative to here become absolute.
    env = dict(os.environ)
    if env.get("LANDMARKING_DATA"):
        env["LANDMARKING_DATA"] = str(Path(env["LANDMARKING_DATA"]).resolve())
    say(args, "running " + shlex.join(command))
    return subprocess.call(command, cwd=folder.parent, env=env)
