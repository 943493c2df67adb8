"""Refuse early, and say why, when a large allocation cannot fit in memory.

Before an allocation that grows with N^2, N x K or N x neighbours, the library
estimates its peak and calls :func:`check_memory`. When the estimate exceeds
:func:`available_memory` the call raises :class:`InsufficientMemoryError` at once,
before any of the memory is taken, with the estimate, what is available and the
way out. Without the check the process would either raise a bare ``MemoryError``
deep inside NumPy after minutes of work, or be killed by the kernel's OOM killer
without a word.

:class:`InsufficientMemoryError` derives from both ``MemoryError`` (what it is) and
``ValueError`` (the scikit-learn convention for a request that cannot be served
with the given data and parameters), so ``except MemoryError`` and
``except ValueError`` both catch it; the command line reports it as bad input
(exit status 2) with the message below.

Available memory is the smaller of

* the memory the kernel says can be allocated without swapping (``MemAvailable``
  in ``/proc/meminfo``; ``psutil.virtual_memory().available`` where psutil is
  installed and ``/proc`` is not), and
* the address-space limit ``RLIMIT_AS`` (``ulimit -v``) minus the address space the
  process already uses.

When neither can be read (an unusual platform) nothing is checked.

The memory budget of passes over data that lives outside memory (a memory map, a
Zarr store, a Dask array) is scikit-learn's ``working_memory`` setting, read in one
place, :func:`working_memory_bytes`, so that ``sklearn.config_context`` bounds
landmarking's blocks as it bounds scikit-learn's own chunked computations.
"""

import math
import os
from numbers import Real

from sklearn import get_config

__all__ = ["InsufficientMemoryError", "available_memory", "check_memory", "format_bytes",
           "working_memory_bytes", "BLOCKS_PER_BUDGET"]

#: A pass over out-of-core data holds one block of at most ``working_memory /
#: BLOCKS_PER_BUDGET`` bytes at a time (16 MiB with scikit-learn's default of 1024
#: MiB): the block's float64 temporaries (two or three of its size), a block read
#: ahead and what a fit keeps (its sample, kernel table and factors) then stay well
#: inside the budget, and a memory map is never read as one block of all rows. Small
#: blocks cost a memory map nothing: its pages are read ahead by the kernel.
BLOCKS_PER_BUDGET = 64


class InsufficientMemoryError(MemoryError, ValueError):
    """An allocation would not fit in the available memory; the message says what to do."""


def format_bytes(n):
    """``1536`` -> ``'1.5 KiB'``: a byte count for messages.

    Examples
    --------
    >>> format_bytes(3 * 2**30)
    '3.0 GiB'
    """
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover - the loop always returns


def proc_field(path, name, base=10):
    """The first number after ``name:`` in a ``/proc`` file, or None where unreadable.

    ``/proc/meminfo`` and ``/proc/self/status`` hold lines like ``MemAvailable:
    1234 kB`` and ``Umask: 0022``; ``base=8`` reads the octal umask.
    """
    try:
        with open(path, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(name + ":"):
                    return int(line.split()[1], base)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _meminfo_available():
    kib = proc_field("/proc/meminfo", "MemAvailable")
    if kib is not None:
        return kib * 1024
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().available)


def _address_space_used():
    """Virtual memory of this process in bytes (VmSize), or None."""
    kib = proc_field(f"/proc/{os.getpid()}/status", "VmSize")
    if kib is not None:
        return kib * 1024
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.Process().memory_info().vms)


def _rlimit_room():
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    used = _address_space_used()
    return max(soft - (used or 0), 0)


def working_memory_bytes():
    """scikit-learn's ``working_memory`` setting (MiB), in bytes: the one memory budget.

    Raises
    ------
    ValueError
        When the setting is not a positive finite number of MiB (scikit-learn
        stores whatever it is given, so a bad value would otherwise surface as a
        confusing error deep inside a pass over the data).

    Examples
    --------
    >>> from sklearn import config_context
    >>> with config_context(working_memory=64):
    ...     working_memory_bytes()
    67108864
    """
    value = get_config()["working_memory"]
    if (isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value)
            or value <= 0):
        raise ValueError(
            f"scikit-learn's working_memory must be a positive number of MiB (it sizes "
            f"the blocks landmarking reads out-of-core data in); got {value!r}. Set it "
            "with sklearn.set_config(working_memory=1024) or, for one call, "
            "`with sklearn.config_context(working_memory=256): ...`."
        )
    return int(value * 2**20)


def available_memory():
    """Bytes this process can still allocate, or None when unknown.

    The smaller of the system's available memory and the room left under
    ``RLIMIT_AS``. Read afresh at each call (it changes as other programs run).

    Examples
    --------
    >>> available_memory() is None or available_memory() > 0
    True
    """
    limits = [v for v in (_meminfo_available(), _rlimit_room()) if v is not None]
    return min(limits) if limits else None


def check_memory(nbytes, *, what, way_out):
    """Raise :class:`InsufficientMemoryError` if ``nbytes`` more will not fit.

    Parameters
    ----------
    nbytes : int or float
        Estimated peak of the allocation about to happen, in bytes.
    what : str
        What needs the memory, e.g. ``"the dense 50000 x 50000 eigenproblem"``.
    way_out : str
        What the user can do instead, e.g. ``"use LocallyLinearLandmarks"``.

    Raises
    ------
    InsufficientMemoryError
        With the estimate, the memory available and ``way_out``.

    Examples
    --------
    >>> check_memory(1024, what="a small table", way_out="nothing")  # fits: returns quietly
    >>> check_memory(2**60, what="a huge table", way_out="use less data")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    landmarking._memory.InsufficientMemoryError: a huge table needs about 1048576.0 TiB ...
    """
    available = available_memory()
    if available is None or nbytes <= available:
        return
    raise InsufficientMemoryError(
        f"{what} needs about {format_bytes(nbytes)} but only {format_bytes(available)} "
        f"is available (free RAM or the address-space limit, ulimit -v); {way_out.rstrip('.')}."
    )
