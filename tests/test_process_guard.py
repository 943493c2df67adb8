"""The process guard of ``tests/conftest.py`` fires.

Every test of this suite runs under it: os.exec* and os.fork raise, and a test that
leaves os.environ changed gets a teardown error. Here a small suite of tests that
break those rules runs in a pytest of its own (a new process, with a copy of the
conftest), so that the errors are pytest's reports, and the tests that keep them
(monkeypatch, subprocess) pass.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROCESS_REPLACERS, ProcessGuardError, environ_changes

CONFTEST = Path(__file__).resolve().parent / "conftest.py"

RULE_BREAKERS = '''
import multiprocessing
import os
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def module_leak():
    os.environ["GUARD_MODULE_LEAK"] = "1"
    yield


def test_leaves_a_variable_set():
    os.environ["GUARD_LEAK"] = "1"


def test_removes_a_variable():
    del os.environ["GUARD_PRESENT"]


def test_monkeypatch_is_undone_before_the_check(monkeypatch):
    monkeypatch.setenv("GUARD_PATCHED", "1")
    monkeypatch.delenv("GUARD_PRESENT")


def test_execv_raises():
    os.execv(sys.executable, [sys.executable, "-c", "pass"])


def test_fork_raises():
    pid = os.fork()
    if pid == 0:
        os._exit(0)


def test_multiprocessing_fork_raises():
    multiprocessing.get_context("fork").Process(target=print).start()


def test_subprocess_and_spawn_run():
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0
    process = multiprocessing.get_context("spawn").Process(target=print)
    process.start()
    process.join()
    assert process.exitcode == 0


def test_a_module_fixture_that_leaks(module_leak):
    pass


def test_sees_no_earlier_leak():
    assert "GUARD_LEAK" not in os.environ and "GUARD_MODULE_LEAK" not in os.environ
    assert os.environ["GUARD_PRESENT"] == "1"
'''


def test_the_guard_fails_exec_fork_and_environ_leaks_and_passes_the_rest(tmp_path):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_rules.py").write_text(RULE_BREAKERS)
    env = dict(os.environ, GUARD_PRESENT="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
         "-o", "addopts=", "test_rules.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr

    def outcome(name):
        lines = [line for line in out.splitlines() if f"test_rules.py::{name}" in line]
        return {line.split()[0] for line in lines}

    assert outcome("test_leaves_a_variable_set") == {"PASSED", "ERROR"}
    assert "GUARD_LEAK: '(absent)' -> '1'" in out
    assert outcome("test_removes_a_variable") == {"PASSED", "ERROR"}
    assert "GUARD_PRESENT: '1' -> '(absent)'" in out
    assert outcome("test_monkeypatch_is_undone_before_the_check") == {"PASSED"}
    assert outcome("test_execv_raises") == {"FAILED"}
    assert outcome("test_fork_raises") == {"FAILED"}
    assert outcome("test_multiprocessing_fork_raises") == {"FAILED"}
    assert "ProcessGuardError: os.execv called in the pytest process" in out
    assert "ProcessGuardError: os.fork called in the pytest process" in out
    assert outcome("test_subprocess_and_spawn_run") == {"PASSED"}
    assert outcome("test_a_module_fixture_that_leaks") == {"PASSED", "ERROR"}
    assert outcome("test_sees_no_earlier_leak") == {"PASSED"}


@pytest.mark.parametrize("name", PROCESS_REPLACERS)
def test_this_process_refuses_every_replacer(name):
    if not hasattr(os, name):
        pytest.skip(f"os.{name} does not exist on this platform")
    with pytest.raises(ProcessGuardError, match=rf"os\.{name} called in the pytest process"):
        getattr(os, name)(sys.executable, [sys.executable, "-c", "pass"])


def test_environ_changes_names_each_change_and_leaves_pytest_s_variable_out():
    before = {"A": "1", "B": "2", "PYTEST_CURRENT_TEST": "x (setup)"}
    after = {"A": "1", "B": "3", "C": "4", "PYTEST_CURRENT_TEST": "x (teardown)"}
    assert environ_changes(before, after) == ["B: '2' -> '3'", "C: '(absent)' -> '4'"]
    assert environ_changes(before, dict(before)) == []
