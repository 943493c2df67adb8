"""n_jobs: scikit-learn's meaning, applied only inside the call."""

import pytest
from joblib import parallel_config
from threadpoolctl import threadpool_info

from landmarking._parallel import (
    _BLAS_LIMITS,
    blas_limit,
    check_n_jobs,
    default_threads,
    loop_threads,
    resolve_n_jobs,
    thread_limits,
)


def _blas_threads():
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_resolve_none_is_every_usable_core_or_the_joblib_context():
    assert resolve_n_jobs(None) == default_threads() == loop_threads()
    assert resolve_n_jobs(1) == 1
    assert resolve_n_jobs(-1) >= 1
    with parallel_config(n_jobs=2):
        assert resolve_n_jobs(None) == 2
    with thread_limits(1):
        assert resolve_n_jobs(None) == 1


def test_thread_limits_set_the_loops_and_restore_blas():
    blas_before = _blas_threads()
    with thread_limits(1) as n_threads:
        assert n_threads == 1 and loop_threads() == 1
        assert all(threads == 1 for threads in _blas_threads())
        with thread_limits(2) as inner:  # nested calls: the inner count, then back
            assert inner == 2 and loop_threads() == 2
        assert loop_threads() == 1
    assert loop_threads() == default_threads()
    assert _blas_threads() == blas_before


def test_none_leaves_the_thread_pools_as_they_are():
    blas_before = _blas_threads()
    with thread_limits(None) as n_threads:
        assert n_threads == default_threads() == loop_threads()
        assert _blas_threads() == blas_before
    with parallel_config(n_jobs=1), thread_limits(None) as n_threads:
        assert n_threads == 1 and loop_threads() == 1
    assert loop_threads() == default_threads()


@pytest.mark.parametrize("bad", [0, 1.5, "all", True])
def test_bad_n_jobs(bad):
    with pytest.raises(ValueError, match="n_jobs must be None, a positive number"):
        check_n_jobs(bad)


def test_overlapping_blas_limits_of_two_threads_restore_the_users_setting():
    """Two threads limit BLAS at once and leave in the other order (the cells graph's
    threads and Dask's did so and left BLAS at one thread for good)."""
    import threading

    before = _blas_threads()
    entered, recorded = threading.Barrier(2), threading.Barrier(2)
    release_first = threading.Event()
    seen = {}

    def hold(name, limit, wait_for=None):
        with blas_limit(limit):
            entered.wait()
            seen[name] = list(_BLAS_LIMITS.active)
            recorded.wait()
            if wait_for is not None:
                wait_for.wait()
        if wait_for is None:
            release_first.set()

    first = threading.Thread(target=hold, args=("first", 1, release_first))
    second = threading.Thread(target=hold, args=("second", 2))
    first.start()
    second.start()
    first.join(60)
    second.join(60)
    # While both held, both limits were on record (the smaller one in force: how a
    # thread sees OpenBLAS's count then depends on the OpenBLAS release, so the
    # record is checked); afterwards the user's setting is back.
    assert sorted(seen["first"]) == sorted(seen["second"]) == [1, 2]
    assert _BLAS_LIMITS.active == []
    assert _blas_threads() == before


def test_a_failed_part_reaches_the_caller_after_every_part_ended():
    import time

    from landmarking._parallel import run_parts

    ended = []

    def part(i):
        if i == 0:
            raise RuntimeError("part 0 failed")
        time.sleep(0.05)
        ended.append(i)

    with thread_limits(2), pytest.raises(RuntimeError, match="part 0 failed"):
        run_parts(part, range(4), 2)
    assert sorted(ended) == [1, 2, 3]


def test_one_pool_per_call_and_nested_parts_run_alone():
    import threading

    from landmarking._parallel import run_parts

    names, inner = set(), []

    def part(i):
        names.add(threading.current_thread().name)
        inner.append(loop_threads())

    with thread_limits(2):
        for _ in range(5):
            run_parts(part, range(2), 2)
    # The five calls' parts ran on the call's two pool threads, not ten new ones,
    # and a part that asks for threads gets one.
    assert len(names) <= 2
    assert set(inner) == {1}


def test_default_threads_follow_omp_num_threads_and_threadpool_limits():
    import os
    import subprocess
    import sys

    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        assert default_threads() == 1
        assert loop_threads() == 1
    code = "from landmarking._parallel import default_threads; print(default_threads())"
    for value in ("1", "3"):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "OMP_NUM_THREADS": value}, timeout=120)
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == value
