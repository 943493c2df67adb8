"""Threads: how many a call may use, where they come from, and BLAS's share.

The rules, as scikit-learn's compiled (OpenMP) code follows them:

- ``n_jobs=None`` (every estimator's default) runs the compiled loops on
  :func:`default_threads`: ``OMP_NUM_THREADS`` where it is set, else the CPUs this
  process may use (its affinity mask and its cgroup CPU quota, as joblib counts
  them), and never more than an enclosing ``threadpoolctl.threadpool_limits(n)``
  allows OpenMP. BLAS's thread pool is left as the user set it. Inside
  ``joblib.parallel_config(n_jobs=...)``, ``None`` means that many threads.
- A number caps both the compiled loops and BLAS for the call: ``1`` one thread, ``-1``
  all cores, ``-2`` all but one.

:func:`thread_limits` applies the rule for the duration of a ``with`` block in the
calling thread and restores everything on exit (return, exception or Ctrl-C), so
nothing outlives the call. Inside the block the compiled loops run their parts
on one pool of Python threads (:func:`run_parts`), each part in compiled code that
releases the GIL; the pool is made on first use and closed with the block. A part
that itself asks for threads runs on one: nested parallelism would oversubscribe
the cores, and OpenMP does not nest by default either.

BLAS's thread count is one setting for the whole process (threadpoolctl changes
it for every thread), so a limit set by two threads at once must not record the
other's limit as the value to restore. :func:`blas_limit` is the one place that
changes it: the first of any overlapping limits records the user's settings, each
limit in force is the smallest asked for, and the last one out restores the
user's settings. Results never depend on the thread count beyond round-off (bit
for bit where a method says so).
"""

import threading
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar, copy_context
from numbers import Integral

from joblib import effective_n_jobs
from joblib.parallel import get_active_backend
from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
from threadpoolctl import ThreadpoolController

__all__ = ["check_n_jobs", "NJobs", "default_threads", "resolve_n_jobs", "thread_limits",
           "loop_threads", "run_parts", "blas_limit"]


def default_threads():
    """Threads for the compiled loops when nothing else says: scikit-learn's count
    for its OpenMP loops (``OMP_NUM_THREADS`` if set, else the usable CPUs under the
    affinity mask and the cgroup quota, capped by an enclosing ``threadpoolctl``
    limit on OpenMP), at least 1."""
    return max(1, int(_openmp_effective_n_threads()))


class _CallThreads:
    """The threads of one call: their count, and the pool the parts run on (made on
    first use by the thread that entered the call, closed when the call ends)."""

    def __init__(self, count, owner):
        self.count = count
        self.owner = owner
        self.pool = None

    def pool_for(self, n_threads):
        """The call's pool, when this thread owns it and it has room for
        ``n_threads`` parts at once; else None."""
        if self.owner != threading.get_ident() or n_threads > self.count:
            return None
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=self.count,
                                           thread_name_prefix="landmarking-loop")
        return self.pool

    def close(self):
        if self.pool is not None:
            # On Ctrl-C the parts not yet started are dropped; running parts end
            # first (they write into the caller's arrays).
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


#: The threads of the call this context is in (None outside any call). A context
#: variable: two threads of the user's, each in its own call, do not see each
#: other's count, and a pool thread sees the count of its part (one).
_CALL: ContextVar[_CallThreads | None] = ContextVar("landmarking_call_threads", default=None)


def loop_threads():
    """Threads for the compiled loops now: those of the enclosing
    :func:`thread_limits`, else :func:`default_threads`."""
    call = _CALL.get()
    return default_threads() if call is None else call.count


def _run_alone(func, part):
    """``func(part)`` in a pool thread, where nested compiled loops run on one thread."""
    _CALL.set(_CallThreads(1, threading.get_ident()))
    return func(part)


def run_parts(func, parts, n_threads):
    """``func(part)`` for every part, on up to ``n_threads`` threads at once.

    Each part must write only its own memory; ``func`` runs compiled code that
    releases the GIL, so the threads run at once. Parts are given out in order; a
    result never depends on which thread ran a part. With ``n_threads`` parts or
    fewer, every part runs at the same time as the others (the GP steps' threads
    meet at barriers). Returns once every part has ended; then raises the first
    failed part's error, if any.
    """
    parts = list(parts)
    n_threads = max(1, min(int(n_threads), len(parts)))
    if n_threads == 1:
        for part in parts:
            func(part)
        return
    call = _CALL.get()
    pool = None if call is None else call.pool_for(n_threads)
    if pool is None:
        with ThreadPoolExecutor(max_workers=n_threads,
                                thread_name_prefix="landmarking-loop") as own:
            _run_on(own, func, parts)
        return
    _run_on(pool, func, parts)


def _run_on(pool, func, parts):
    futures = [pool.submit(copy_context().run, _run_alone, func, part) for part in parts]
    wait(futures)
    for future in futures:
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


def _threads_for(asked):
    """Threads for an ``n_jobs`` already checked (:func:`_asked_n_jobs`)."""
    return loop_threads() if asked is None else max(1, int(effective_n_jobs(asked)))


def resolve_n_jobs(n_jobs):
    """The number of threads ``n_jobs`` stands for, at least 1 (None: the joblib
    context's, else :func:`loop_threads`)."""
    return _threads_for(_asked_n_jobs(n_jobs))


@contextmanager
def thread_limits(n_jobs):
    """Run the block with the threads ``n_jobs`` stands for; yields their count.

    The count is resolved once, here, in the calling thread (:func:`resolve_n_jobs`)
    and the compiled loops of the block use it (:func:`loop_threads`). A number
    (or a joblib context) also caps BLAS at that many threads for the block
    (:func:`blas_limit`); ``n_jobs=None`` outside a joblib context leaves BLAS as it
    is. Everything is restored on exit.
    """
    asked = _asked_n_jobs(n_jobs)
    n_threads = _threads_for(asked)
    call = _CallThreads(n_threads, threading.get_ident())
    token = _CALL.set(call)
    try:
        if asked is None:
            yield n_threads
        else:
            with blas_limit(n_threads):
                yield n_threads
    finally:
        try:
            call.close()
        finally:
            _CALL.reset(token)


# ---------------------------------------------------------------- BLAS's share

class _BlasLimits:
    """The BLAS thread limits in force in this process, and the user's settings
    to restore when the last one ends (see the module's docstring)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.active = []
        self.saved = None  # threadpoolctl's record of the user's settings

    def enter(self, limit, controller):
        with self.lock:
            if not self.active:
                controller = controller or ThreadpoolController()
                self.saved = controller.limit(limits=limit, user_api="blas")
            elif limit < min(self.active):
                (controller or ThreadpoolController()).limit(limits=limit, user_api="blas")
            self.active.append(limit)

    def leave(self, limit, controller):
        with self.lock:
            self.active.remove(limit)
            if not self.active:
                saved, self.saved = self.saved, None
                saved.restore_original_limits()
            elif limit < min(self.active):
                (controller or ThreadpoolController()).limit(limits=min(self.active),
                                                             user_api="blas")


#: One record for the process, as BLAS's thread count is one setting for it.
_BLAS_LIMITS = _BlasLimits()


@contextmanager
def blas_limit(limit, controller=None):
    """At most ``limit`` BLAS threads for the block, restored on exit.

    Safe when several threads hold limits at once (each limit in force is the
    smallest asked for, and the user's settings come back when the last ends).
    ``controller``: a ``threadpoolctl.ThreadpoolController`` made earlier, to spare
    the look-up of the loaded libraries (a call that limits BLAS many times makes
    one and passes it).
    """
    limit = max(1, int(limit))
    _BLAS_LIMITS.enter(limit, controller)
    try:
        yield
    finally:
        _BLAS_LIMITS.leave(limit, controller)
