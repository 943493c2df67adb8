"""The benchmark scripts (``benchmarks/``) keep working as the library changes.

Nothing is measured here: every script is imported and run as ``__main__`` with
``--help`` in this process (argparse prints its usage and exits 0 before any data
is read), so that an import path, a renamed helper or a broken parser fails here
instead of in the lead's next timing run. The shared helper ``benchmarks/_common.py``
has its cheap parts checked on their own.
"""

import os
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))


@pytest.fixture
def common(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _common

    return _common


def test_there_are_benchmark_scripts():
    assert len(SCRIPTS) >= 20


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_imports_and_prints_its_help(script, common, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(script), run_name="__main__")
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:") and "--help" in out


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_starts_its_parser_from_the_shared_helper(script):
    # One argument-parser starter (benchmarks/_common.py): the common arguments
    # (--full or --quick, --seed(s), --out) and the machine line come with it.
    assert "ArgumentParser(" not in script.read_text(encoding="utf-8")


def test_parser_has_the_common_arguments(common, tmp_path, capsys):
    parser = common.argument_parser("Title line.\n\nMore.", seeds=(0, 1))
    args = common.parse(parser, ["--full", "--seed", "3", "--out", str(tmp_path / "o")])
    assert (args.full, args.seed, args.seeds) == (True, 3, [0, 1])
    assert args.out == tmp_path / "o" and args.out.is_dir()
    assert capsys.readouterr().out.startswith("load average")
    quick = common.argument_parser("T.", size="quick", seed=False, out=False)
    assert vars(common.parse(quick, [], machine=False)) == {"quick": False}
    assert parser.description == "Title line."


def test_throttled_blas_is_reported_with_the_shell_command_and_left_as_it_is(
        common, monkeypatch, tmp_path, capsys):
    # The throttling variables are unset from the shell, for the benchmark command
    # alone: parse names them in the machine line and prints the command, and the
    # run goes on in this process (the guard in conftest.py fails a test that execs
    # or changes os.environ) with the environment untouched.
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "512")
    monkeypatch.setattr(sys, "argv", ["benchmarks/knn.py", "--full"])
    before = dict(os.environ)
    parser = common.argument_parser("T.", out=False)
    assert common.parse(parser, ["--full"]).full
    assert dict(os.environ) == before
    out = capsys.readouterr().out.splitlines()
    assert "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 |" in out[0]
    assert out[1].startswith("note: OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 set")
    command = out[2].split()
    assert command[:5] == ["env", "-u", "OPENBLAS_CORETYPE", "-u", "OPENBLAS_L2_SIZE"]
    assert command[6:] == ["benchmarks/knn.py", "--full"]
    # One variable set: only it is named and unset; none set: no note.
    monkeypatch.delenv("OPENBLAS_L2_SIZE")
    note = common.throttle_note(["x.py"])
    assert "OPENBLAS_L2_SIZE" not in note and "env -u OPENBLAS_CORETYPE " in note
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    assert common.throttle_note() is None
    common.parse(parser, [], machine=False)
    assert capsys.readouterr().out == ""


def test_kernel_width_argument_reads_numbers_and_rules(common):
    parser = common.argument_parser("T.", size=None, seed=False, out=False)
    common.kernel_width_argument(parser)
    assert parser.parse_args([]).kernel_width == "variance"
    assert parser.parse_args(["--kernel-width", "2.5"]).kernel_width == 2.5
    assert parser.parse_args(["--kernel-width", "auto"]).kernel_width == "auto"


def test_run_child_returns_the_last_json_line(common, tmp_path):
    code = ("import json, sys\nimport _common\nprint('noise')\n"
            "print(json.dumps({'argv': sys.argv[1:], 'helper': _common.__name__}))")
    row = common.run_child(code, 1, "two")
    assert row["argv"] == ["1", "two"] and row["helper"] == "_common"
    assert row["process"] > 0
    script = tmp_path / "child.py"
    script.write_text("import json, os\nprint(json.dumps({'x': os.environ['X_ROW']}))\n")
    assert common.run_child(script, env={"X_ROW": "7"})["x"] == "7"
    # src: another checkout's src folder comes first on the child's path.
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "_probe_module.py").write_text("WHERE = 'other checkout'\n")
    code = "import json, _probe_module\nprint(json.dumps({'w': _probe_module.WHERE}))"
    with pytest.raises(RuntimeError, match="ModuleNotFoundError"):
        common.run_child(code)
    assert common.run_child(code, src=tmp_path / "src")["w"] == "other checkout"
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        common.run_child("1 / 0")


def test_timed_returns_seconds_and_value(common):
    seconds, value = common.timed(sorted, [3, 1, 2], reverse=True)
    assert value == [3, 2, 1] and 0 <= seconds < 5


def test_halves_alternate_within_each_subject(common):
    subjects = np.array([2, 1, 2, 1, 1, 2, 2])
    train, test = common.halves(subjects)
    assert np.array_equal(train, ~test)
    assert train.tolist() == [True, True, False, False, True, True, False]


def test_print_table_is_markdown(common, capsys):
    common.print_table(["a", "b"], [[1, 0.5]], floatfmt="{:.2f}")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| a") and lines[1].startswith("|---")
    assert lines[2].split("|")[2].strip() == "0.50"
