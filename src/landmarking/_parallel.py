"""``n_jobs``: the threads of a call, applied only for the duration of that call.

``n_jobs=None`` (every estimator's default) runs the compiled kernels on every core
this process may use and leaves BLAS's thread pool as it is (every core, unless the
user capped it with ``threadpoolctl``), as scikit-learn's own OpenMP and BLAS code
does; inside ``joblib.parallel_config(n_jobs=...)`` it means that many threads.
A number caps both: ``1`` one thread, ``-1`` all cores, ``-2`` all but one.
:func:`thread_limits` sets the kernels' thread count and caps the BLAS thread pools
for the duration of a ``with`` block and restores both afterwards, so nothing leaks
into the user's session. Results never depend on the thread count beyond round-off
(bit for bit where a method says so).

The kernels compiled ahead of time (Cython, ``*.pyx``) run their parts on a pool of
Python threads, each part in compiled code that releases the GIL
(:func:`run_parts`); :func:`kernel_threads` is their thread count: the one
:func:`thread_limits` set for the enclosing call, else every core this process may
use (OpenMP's default, which scikit-learn's compiled code follows).
"""

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from numbers import Integral

from joblib import effective_n_jobs
from joblib.parallel import get_active_backend
from threadpoolctl import threadpool_limits

__all__ = ["check_n_jobs", "NJobs", "resolve_n_jobs", "thread_limits", "kernel_threads",
           "run_parts"]

#: The thread count of the compiled kernels inside a :func:`thread_limits` block
#: (None outside one: every usable core). A context variable, so that two threads
#: of the user's, each in its own call, do not see each other's count.
_KERNEL_THREADS: ContextVar[int | None] = ContextVar("landmarking_kernel_threads",
                                                     default=None)


def usable_cores():
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS)
        return max(1, os.cpu_count() or 1)


def kernel_threads():
    """Threads for the compiled kernels now: those of the enclosing
    :func:`thread_limits`, else :func:`usable_cores`."""
    threads = _KERNEL_THREADS.get()
    return usable_cores() if threads is None else threads


def run_parts(func, parts, n_threads):
    """``func(part)`` for every part, on up to ``n_threads`` threads.

    Each part must write only its own memory; ``func`` runs compiled code that
    releases the GIL, so the threads run at once. Parts are given out in order;
    a result never depends on which thread ran a part.
    """
    parts = list(parts)
    n_threads = max(1, min(int(n_threads), len(parts)))
    if n_threads == 1:
        for part in parts:
            func(part)
        return
    with ThreadPoolExecutor(max_workers=n_threads,
                            thread_name_prefix="landmarking-kernel") as pool:
        for future in [pool.submit(func, part) for part in parts]:
            future.result()


def check_n_jobs(n_jobs):
    """Check the ``n_jobs`` parameter: None or a nonzero integer."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0:
        raise ValueError(
            f"n_jobs must be None, a positive number of threads, or -1 for all cores "
            f"(-2 for all but one, ...); got {n_jobs!r}."
        )
    return int(n_jobs)


class NJobs:
    """The rule of ``n_jobs`` in a ``_parameter_rules`` table
    (:func:`landmarking._validation.check_params`): :func:`check_n_jobs`."""

    def accepts(self, value):
        return value is None or (not isinstance(value, bool) and isinstance(value, Integral)
                                 and value != 0)

    def describe(self):
        return "None or a nonzero integer"

    def check(self, value, name):
        return check_n_jobs(value)


def _asked_n_jobs(n_jobs):
    """The checked ``n_jobs``, or for None that of an enclosing
    ``joblib.parallel_config`` (None when there is none)."""
    n_jobs = check_n_jobs(n_jobs)
    return get_active_backend()[1] if n_jobs is None else n_jobs


def resolve_n_jobs(n_jobs):
    """The number of threads ``n_jobs`` stands for, at least 1 (None: the joblib
    context's, else :func:`kernel_threads`)."""
    asked = _asked_n_jobs(n_jobs)
    if asked is None:
        return kernel_threads()
    return max(1, int(effective_n_jobs(asked)))


@contextmanager
def thread_limits(n_jobs):
    """Run the block with ``n_jobs`` kernel threads and at most ``n_jobs`` BLAS threads.

    ``n_jobs=None`` outside a joblib context changes nothing (the kernels on
    :func:`kernel_threads`, BLAS as it is). Yields the resolved thread count.
    """
    asked = _asked_n_jobs(n_jobs)
    if asked is None:
        yield kernel_threads()
        return
    n_threads = max(1, int(effective_n_jobs(asked)))
    token = _KERNEL_THREADS.set(n_threads)
    try:
        with threadpool_limits(limits=n_threads, user_api="blas"):
            yield n_threads
    finally:
        _KERNEL_THREADS.reset(token)
