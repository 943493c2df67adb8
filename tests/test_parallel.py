"""n_jobs: scikit-learn's meaning, applied only inside the call."""

import numba
import pytest
from joblib import parallel_config
from threadpoolctl import threadpool_info

from landmarking._parallel import check_n_jobs, resolve_n_jobs, thread_limits


def test_resolve_none_is_the_threads_numba_has_or_the_joblib_context():
    assert resolve_n_jobs(None) == numba.get_num_threads()
    numba_before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        assert resolve_n_jobs(None) == 1
    finally:
        numba.set_num_threads(numba_before)
    assert resolve_n_jobs(1) == 1
    assert resolve_n_jobs(-1) >= 1
    with parallel_config(n_jobs=2):
        assert resolve_n_jobs(None) == 2


def test_thread_limits_restore_numba_and_blas():
    numba_before = numba.get_num_threads()
    blas_before = [pool["num_threads"] for pool in threadpool_info()
                   if pool["user_api"] == "blas"]
    with thread_limits(1) as n_threads:
        assert n_threads == 1 and numba.get_num_threads() == 1
        assert all(pool["num_threads"] == 1 for pool in threadpool_info()
                   if pool["user_api"] == "blas")
    assert numba.get_num_threads() == numba_before
    assert [pool["num_threads"] for pool in threadpool_info()
            if pool["user_api"] == "blas"] == blas_before


def test_none_leaves_the_thread_pools_as_they_are():
    numba_before = numba.get_num_threads()
    blas_before = [pool["num_threads"] for pool in threadpool_info()
                   if pool["user_api"] == "blas"]
    with thread_limits(None) as n_threads:
        assert n_threads == numba_before == numba.get_num_threads()
        assert [pool["num_threads"] for pool in threadpool_info()
                if pool["user_api"] == "blas"] == blas_before
    with parallel_config(n_jobs=1), thread_limits(None) as n_threads:
        assert n_threads == 1 and numba.get_num_threads() == 1
    assert numba.get_num_threads() == numba_before


@pytest.mark.parametrize("bad", [0, 1.5, "all", True])
def test_bad_n_jobs(bad):
    with pytest.raises(ValueError, match="n_jobs must be None, a positive number"):
        check_n_jobs(bad)
