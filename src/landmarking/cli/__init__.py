"""The ``landmarking`` command: every method from a shell, with files and pictures.

Subcommands: ``landmarks``, ``features``, ``embed``, ``transform``, ``topics``,
``demo`` and ``reproduce``; ``landmarking COMMAND --help`` shows a worked example
for each. Bad input ends with exit status 2 and one line naming the file, the
problem and the fix (the traceback only with ``--debug``); Ctrl-C ends with 130.

The package: :mod:`.parser` (the options, one ``_add_<command>`` each), one module
per command (:mod:`.landmarks`, :mod:`.features`, :mod:`.embed`,
:mod:`.transform`, :mod:`.topics`, :mod:`.reproduce` with ``demo``), what they share
(:mod:`._common`) and the one helper for runs saved as they go: ``--continue``,
checkpoints, Ctrl-C (:mod:`._runs`). :func:`main` runs a command and turns its
errors into exit statuses.
"""

import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .._cluster import SchedulerLostError, dask_client
from ..io import InputError
from ._common import INTERRUPTED, error, one_line, say
from .embed import run_embed
from .features import run_features
from .landmarks import after_lost_scheduler, run_landmarks
from .parser import build_parser
from .reproduce import run_demo, run_reproduce
from .topics import run_topics
from .transform import run_transform

__all__ = ["main", "build_parser"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``landmarking`` command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status: 0 on success, 2 for bad input or options (one line on stderr
        naming the file, the problem and the fix), 130 after Ctrl-C, 1 for any other
        failure.

    Examples
    --------
    >>> main(["landmarks", "missing.csv", "-n", "3", "-o", "out.npz"])  # doctest: +SKIP
    landmarking landmarks: error: missing.csv: no such file or folder; check the name ...
    2
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.command_line = "landmarking " + shlex.join(argv)
    start = time.perf_counter()
    try:
        with dask_client(getattr(args, "scheduler", None),
                         getattr(args, "dask_workers", None)) as client:
            args.dask = client is not None
            status = _run(args)
    except (Exception, KeyboardInterrupt) as exc:
        if args.debug:
            raise
        return _failed(args, exc)
    if status in (None, 0):
        say(args, f"done in {time.perf_counter() - start:.2f} s")
    return status or 0


def benchmarks_dir() -> Path:
    """The ``benchmarks/`` folder of the source checkout the package runs from."""
    return Path(__file__).resolve().parents[3] / "benchmarks"


def _run(args):
    """Run the command ``args.command``; its exit status."""
    if args.command == "reproduce":
        return run_reproduce(args, benchmarks_dir())
    return {"landmarks": run_landmarks, "features": run_features, "embed": run_embed,
            "transform": run_transform, "topics": run_topics, "demo": run_demo,
            }[args.command](args)


def _failed(args, exc):
    """Report a command's failure in one line; its exit status."""
    if isinstance(exc, InputError):
        error(args, str(exc))
        return 2
    if isinstance(exc, (ValueError, TypeError)):
        # The estimators' own checks (sklearn convention: ValueError/TypeError at the
        # top of fit) name the problem and the fix; add the file they concern.
        source = getattr(args, "data", None) or getattr(args, "corpus", None)
        error(args, f"{source}: {one_line(exc)}" if source else one_line(exc))
        return 2
    if isinstance(exc, SchedulerLostError):
        error(args, f"{exc}; {after_lost_scheduler(args)}")
        return 1
    if isinstance(exc, KeyboardInterrupt):
        print("\nlandmarking: interrupted", file=sys.stderr)
        return INTERRUPTED
    if isinstance(exc, OSError):
        # Unreadable input or unwritable output (permissions, full disk).
        where = f"{exc.filename}: " if exc.filename else ""
        error(args, f"{where}{exc.strerror or one_line(exc)}; check the path, its permissions "
                    "and the free space.")
        return 2
    if isinstance(exc, MemoryError):
        # A device's MemoryError names what to lower; a bare one gets the usual advice.
        error(args, one_line(exc) if str(exc) else
              "out of memory; use fewer rows or columns, or a smaller --batch-size.")
        return 1
    error(args, f"{type(exc).__name__}: {one_line(exc)} (rerun with --debug for the traceback)")
    return 1
