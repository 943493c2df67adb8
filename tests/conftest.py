import os
from contextlib import contextmanager
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

DATA_DIR = Path(os.environ.get("LANDMARKING_DATA",
                               Path(__file__).resolve().parents[1].parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir():
    """The real-data folder; tests that need it skip when it is absent."""
    if not DATA_DIR.exists():
        pytest.skip(f"real data not found at {DATA_DIR}; set LANDMARKING_DATA to run this test")
    return DATA_DIR


# ----------------------------------------------------------------- the process guard
#
# A test runs in the pytest process and leaves it as it found it. os.exec* would
# replace the test run with another program (the run ends there, without a failure
# or a summary), and os.fork would copy a process whose threads (Dask's, OpenBLAS's)
# hold locks that the copy never releases; a test starts programs with subprocess
# (its fork and exec happen in C, in _posixsubprocess, and reach none of the
# functions below). A test that leaves os.environ changed changes every later test
# and every program those start (OPENBLAS_NUM_THREADS, say): it must use
# monkeypatch.setenv, or an env= of its own for a program it starts.

#: The functions of os that replace or copy the calling process.
PROCESS_REPLACERS = ("execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp",
                     "execvpe", "fork", "forkpty")

#: Variables left out of the comparison: pytest names the running test in one, and
#: scikit-learn and joblib set the others, with setdefault, when they are first
#: imported (whichever test that is).
ENVIRON_UNCHECKED = frozenset({"PYTEST_CURRENT_TEST", "KMP_DUPLICATE_LIB_OK",
                               "KMP_INIT_AT_FORK"})


class ProcessGuardError(RuntimeError):
    """A test replaced or copied the pytest process, or left os.environ changed."""


def refusing(name):
    """A stand-in for ``os.<name>`` that raises :class:`ProcessGuardError`."""
    def refused(*args, **kwargs):
        raise ProcessGuardError(
            f"os.{name} called in the pytest process: it would replace or copy the test "
            "run; start the program with subprocess.run (or a Python function with "
            "multiprocessing's 'spawn' start method) instead.")

    refused.__name__ = name
    return refused


def environ_changes(before, after):
    """The variables that differ between two snapshots of os.environ, as sorted
    'NAME: old -> new' lines (absent written as such), ENVIRON_UNCHECKED left out."""
    names = (before.keys() | after.keys()) - ENVIRON_UNCHECKED
    return [f"{name}: {before.get(name, '(absent)')!r} -> {after.get(name, '(absent)')!r}"
            for name in sorted(names) if before.get(name) != after.get(name)]


def restore_environ(before):
    """Put os.environ back to the snapshot ``before`` (ENVIRON_UNCHECKED left as
    they are)."""
    for name in (before.keys() | os.environ.keys()) - ENVIRON_UNCHECKED:
        if name not in before:
            del os.environ[name]
        elif os.environ.get(name) != before[name]:
            os.environ[name] = before[name]


@contextmanager
def environ_kept():
    """os.environ put back on exit, around code of a library that writes to it by
    design: dask.distributed's Nanny sets its pre-spawn environment
    (OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS=1,
    MALLOC_TRIM_THRESHOLD_, PYTHONHASHSEED) and __DASK_PARENT_PID in this process
    each time it starts a worker, and leaves them: every program a later test
    starts would run BLAS on one thread. A worker has its environment once started,
    so it is put back as soon as the cluster (or a restarted worker) is up."""
    before = dict(os.environ)
    try:
        yield
    finally:
        restore_environ(before)


_ORIGINALS = pytest.StashKey[dict]()
_ENVIRON = pytest.StashKey[dict]()


def pytest_configure(config):
    config.stash[_ORIGINALS] = {name: getattr(os, name) for name in PROCESS_REPLACERS
                                if hasattr(os, name)}
    for name in config.stash[_ORIGINALS]:
        setattr(os, name, refusing(name))


def pytest_unconfigure(config):
    for name, function in config.stash.get(_ORIGINALS, {}).items():
        setattr(os, name, function)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before any fixture of the test is set up.
    item.stash[_ENVIRON] = dict(os.environ)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    # After pytest's own teardown, so after the test's fixtures were finalised
    # (monkeypatch's undo included): what is left is the test's doing. The error is
    # the test's teardown error; os.environ is put back, so that no later test
    # inherits the change.
    before = item.stash.get(_ENVIRON, None)
    if before is None:
        return
    changes = environ_changes(before, os.environ)
    if changes:
        restore_environ(before)
        raise ProcessGuardError(
            "the test left os.environ changed (use monkeypatch.setenv, pass env= to the "
            "program it starts, or wrap a library that writes it in environ_kept):\n  "
            + "\n  ".join(changes))
