"""n_jobs: scikit-learn's meaning, applied only inside the call."""

import pytest
from joblib import parallel_config
from threadpoolctl import threadpool_info

from landmarking._parallel import (
    check_n_jobs,
    kernel_threads,
    resolve_n_jobs,
    thread_limits,
    usable_cores,
)


def _blas_threads():
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_resolve_none_is_every_usable_core_or_the_joblib_context():
    assert resolve_n_jobs(None) == usable_cores() == kernel_threads()
    assert resolve_n_jobs(1) == 1
    assert resolve_n_jobs(-1) >= 1
    with parallel_config(n_jobs=2):
        assert resolve_n_jobs(None) == 2
    with thread_limits(1):
        assert resolve_n_jobs(None) == 1


def test_thread_limits_set_the_kernels_and_restore_blas():
    blas_before = _blas_threads()
    with thread_limits(1) as n_threads:
        assert n_threads == 1 and kernel_threads() == 1
        assert all(threads == 1 for threads in _blas_threads())
        with thread_limits(2) as inner:  # nested calls: the inner count, then back
            assert inner == 2 and kernel_threads() == 2
        assert kernel_threads() == 1
    assert kernel_threads() == usable_cores()
    assert _blas_threads() == blas_before


def test_none_leaves_the_thread_pools_as_they_are():
    blas_before = _blas_threads()
    with thread_limits(None) as n_threads:
        assert n_threads == usable_cores() == kernel_threads()
        assert _blas_threads() == blas_before
    with parallel_config(n_jobs=1), thread_limits(None) as n_threads:
        assert n_threads == 1 and kernel_threads() == 1
    assert kernel_threads() == usable_cores()


@pytest.mark.parametrize("bad", [0, 1.5, "all", True])
def test_bad_n_jobs(bad):
    with pytest.raises(ValueError, match="n_jobs must be None, a positive number"):
        check_n_jobs(bad)
