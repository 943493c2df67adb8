"""The benchmark scripts (``benchmarks/``) keep working as the library changes.

Nothing is measured here: every script is imported and run as ``__main__`` with
``--help`` in this process (argparse prints its usage and exits 0 before any data
is read), so that an import path, a renamed helper or a broken parser fails here
instead of in the lead's next timing run. The shared helper ``benchmarks/_common.py``
has its cheap parts checked on their own, and the newer scripts a smoke run each on
tiny data (seconds, no data files).
"""

import argparse
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


@pytest.fixture
def bench_module(monkeypatch):
    """Import a benchmark script as a module (its folder first on the path)."""
    import importlib

    monkeypatch.syspath_prepend(str(BENCHMARKS))

    def load(name):
        return importlib.import_module(name)

    return load


def test_lll_spiral_structure_smoke(bench_module, tmp_path, capsys):
    # The paper's 100-point spiral (LLL Fig. 1): a second or two.
    module = bench_module("lll_spiral_structure")
    summary = module.main(["--out", str(tmp_path)])["100x20"]
    off_band = {name: share for name, (share, _) in summary["rows"].items()}
    # The spiral's geometry, not rounding, separates these: the landmarks' own graph
    # puts 0.41 of its mass across turns and LLL's C 0.07 (any BLAS moves the last
    # bits only), so a factor of 2 between them cannot flip.
    assert off_band["C = Z^T W Z (LLL)"] < 0.5 * off_band["W, landmarks alone"]
    assert summary["nnz_per_row"] == 5.0  # K_Z landmarks per point
    assert (tmp_path / "lll_spiral_structure_100.png").stat().st_size > 0
    assert "C = Z^T W Z" in capsys.readouterr().out


def test_gp_toy_active_learning_smoke(bench_module):
    # GP Fig. 1(a) beside 1(b) on 300 points with 30 steps: the structure of the
    # result, not the paper's figure.
    module = bench_module("gp_toy_active_learning")
    (name, X, labels), _ = module.manifolds(300, 0)
    fitted = module.fit_both(X, 30, 0)
    active, gp = fitted.values()
    assert active.landmarks_.shape == gp.landmarks_.shape == (module.N_POINTS, 2)
    row = module.describe(X, active.landmarks_, labels, 0)
    # Active learning picks data points: distance 0 up to the float64 rounding of
    # the distance computation (relative 1e-6 of the spacing at most).
    assert row["to data max"] < 1e-6
    assert sum(map(int, row["per circle"].split("/"))) == module.N_POINTS


def test_gp_mnist_classification_seeds_summary(bench_module, tmp_path, monkeypatch, capsys):
    # --seeds: the mean and standard error over seeds, and the paired difference
    # from random, from each seed's run (stubbed here: no MNIST needed).
    module = bench_module("gp_mnist_classification")
    fake = {0: {"Act5K": {10: 0.70}, "random": {10: 0.60}},
            1: {"Act5K": {10: 0.72}, "random": {10: 0.64}}}
    monkeypatch.setattr(module, "run", lambda args: fake[args.seed])
    args = argparse.Namespace(seeds=[0, 1], methods=["Act5K", "random"], out=tmp_path,
                              full=False)
    stats, diffs = module.run_seeds(args)
    assert stats["Act5K"][10] == pytest.approx((0.71, 0.01))
    assert stats["random"][10] == pytest.approx((0.62, 0.02))
    assert diffs["Act5K"][10] == pytest.approx((0.09, 0.01))
    assert module.mean_and_error([0.5]) == (0.5, 0.0)
    assert (tmp_path / "gp_mnist_classification_quick_seeds.json").exists()
    assert "+0.0900 +- 0.0100" in capsys.readouterr().out


def test_lll_sweep_speed_sides_score_the_same_grid(bench_module, data_dir, monkeypatch):
    # Both sides of the sweep_lll timing score the nine settings of one grid with
    # the same classifier: 2,000 digits in this process (the script runs each side
    # in a new one). The floor is far below what either side reaches (0.81 and
    # 0.88 at 3,000 digits): a broken side scores near chance, 0.1.
    monkeypatch.setenv("LANDMARKING_DATA", str(data_dir))
    module = bench_module("lll_sweep_speed")
    sides = {side: module.run_side(side, 2000) for side in ("sweep", "le")}
    for row in sides.values():
        accuracies = 1 - np.array(row["errors"])
        # The first call and the warm repeat, each timed.
        assert accuracies.shape == (9,) and len(row["seconds"]) == 2
        assert min(row["seconds"]) > 0 and len(row["loads"]) == 2
        assert np.all((0.5 < accuracies) & (accuracies <= 1))


def test_gp_landmark_features_quick_gtzan(bench_module, data_dir, tmp_path, monkeypatch):
    # GP Fig. 6's protocol on the GTZAN stand-in, tiny: 300 training clips, 10
    # landmarks, one seed; every method and the raw line, scored on 300 test clips.
    monkeypatch.setenv("LANDMARKING_DATA", str(data_dir))
    module = bench_module("gp_landmark_features")
    results = module.main(["--sets", "gtzan", "--seeds", "0", "--sizes", "10",
                           "--n-train", "300", "--out", str(tmp_path)])["gtzan"]
    accuracy = results["per_seed"]["0"]
    assert set(accuracy) == {*module.METHODS, module.RAW}
    # Ten balanced genres: chance is 0.1, and the binomial standard error of an
    # accuracy near 0.1 on 300 test clips is 0.017, so 0.2 is six of them above it.
    for method in module.METHODS:
        assert 0.2 < accuracy[method][10] <= 1.0, method
        assert results["mean_error"][method][10] == (accuracy[method][10], 0.0)
    assert 0.2 < accuracy[module.RAW] <= 1.0
    assert (tmp_path / "gp_landmark_features_quick.png").stat().st_size > 0


def test_gp_landmark_features_standard_error(bench_module):
    module = bench_module("gp_landmark_features")
    mean, error = module.mean_and_error([0.5, 0.7, 0.6])
    # s.d. 0.1 (sample) / sqrt(3)
    assert mean == pytest.approx(0.6) and error == pytest.approx(0.1 / np.sqrt(3))


def test_authors_code_port_renames_xrange_only(bench_module, tmp_path):
    # The authors' Python 2 file is ported at run time by renaming xrange; a file
    # needing more (a print statement) is refused, never half-ported.
    module = bench_module("gp_topics_authors_code")
    source, counts = module.port_to_python3("for i in xrange(3):\n    pass\nmy_xrange_(1)\n")
    assert counts == {"xrange": 1} and "range(3)" in source and "my_xrange_(1)" in source
    with pytest.raises(ValueError, match="more than a mechanical port"):
        module.port_to_python3("print 'hello'\n")
    path = tmp_path / "manifold_gp.py"
    path.write_text("import numpy as np\n"
                    "def squares(n):\n    return [i * i for i in xrange(n)]\n")
    loaded, counts = module.load_authors_code(path)
    assert loaded.squares(4) == [0, 1, 4, 9] and counts == {"xrange": 1}


def test_authors_run_takes_prefixes_of_one_sequential_run(bench_module):
    # authors_run wraps the instance's per-landmark method to time it: the first n
    # landmarks of one run, and the times when the run reached them.
    import types

    module = bench_module("gp_topics_authors_code")

    class Sequential:
        def __init__(self, n_landmarks, **kwargs):
            self.n_landmarks, self.kwargs, self.landmarks = n_landmarks, kwargs, None

        def _learn_single_landmark(self, X):
            return X[0] * (0 if self.landmarks is None else len(self.landmarks))

        def learn_landmarks(self, X):
            self.kern_width = float(np.var(X, axis=0).sum())
            for _ in range(self.n_landmarks):
                t = self._learn_single_landmark(X)
                done = self.landmarks
                self.landmarks = t[None] if done is None else np.vstack([done, t])
            return self

    fake = types.SimpleNamespace(ManifoldGP=Sequential, proj_sph_pos=None)
    X = np.eye(3)
    runs, width = module.authors_run(fake, X, (1, 3), seed=0, n_steps=5)
    assert width == pytest.approx(3 * (1 / 3 - 1 / 9))  # three columns of variance 2/9
    assert np.array_equal(runs[3][0][:, 0], [0, 1, 2]) and runs[1][0].shape == (1, 3)
    assert 0 <= runs[1][1] <= runs[3][1]


def test_lll_auto_rules_roll_rows_put_the_defaults_at_exact_le(bench_module):
    # The roll table's rows at 2,000 points: the defaults there are 300 landmarks
    # (LOW_DIMENSION_MIN_LANDMARKS) and no refinement. Measured: exact LE 0.87,
    # the defaults 0.87, 100 landmarks 0.98 (at 10,000 points too); errors are
    # Procrustes errors of a roll, set by its geometry, so a bound 10% above LE's
    # cannot be crossed by rounding, and a broken row would be near 1.
    module = bench_module("lll_auto_rules")
    rows = {row[1]: row for row in module.roll_rows([2000], 3) if row[3] in ("", 0)}
    assert rows["LLL, the defaults"][2] == 300
    assert rows["LLL, the defaults"][5] < 1.1 * rows["exact LE"][5]
    assert all(row[4] > 0 for row in rows.values())


def test_lll_auto_rules_text_rows_score_both_splits(bench_module, data_dir, monkeypatch):
    # 3,000 posts of 20 Newsgroups: every fit's 20-way accuracy is far above
    # chance (0.05), and the defaults (100 landmarks, no refinement below 10,000
    # posts) are what LLL resolves.
    monkeypatch.setenv("LANDMARKING_DATA", str(data_dir))
    module = bench_module("lll_auto_rules")
    rows = {row[1]: row for row in module.text_rows([3000])}
    assert rows["LLL, the defaults"][2:4] == [100, 0]
    assert all(0.1 < row[5] <= 1 for row in rows.values())


def test_lll_auto_rules_roll_graphs_score_each_builder(bench_module):
    # 5,000 roll points: both KD-trees are exact (recall 1 up to ties, which a
    # continuous roll does not have); the cells and HNSW are measured above 0.98
    # there, so 0.9 leaves room for any BLAS while a broken builder scores ~0.
    pytest.importorskip("usearch", reason="the HNSW row is the ann extra")
    module = bench_module("lll_auto_rules")
    rows = {row[1]: row for row in module.roll_graph_rows([5000])}
    assert rows["KD-tree (auto: SciPy's)"][2] == 1.0
    assert rows["scikit-learn's KD-tree (the tree before)"][2] == 1.0
    assert rows["cells of 100"][2] > 0.9 and rows["HNSW (usearch)"][2] > 0.9


def test_lll_auto_rules_cell_rows_follow_the_probes(bench_module):
    # 4,000 points of a 5-D blob in 30 features, cells of 100: one row per number
    # of probes. 5 probes search a superset of 1 probe's candidates (a point's own
    # cell only); recall measured 0.56 and 0.997, so asking 0.1 apart leaves room
    # for any BLAS while equal rows (the probes ignored) fail.
    pytest.importorskip("usearch", reason="the table's first row is the HNSW graph")
    module = bench_module("lll_auto_rules")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 5)) @ rng.normal(size=(5, 30)) + 0.01 * rng.normal(size=(4000, 30))
    rows = {row[0]: row for row in module.cell_rows(X, [100], lambda graph: 0.0, (1, 5))}
    assert set(rows) == {"HNSW (usearch)", "cells of 100, 1 probes", "cells of 100"}
    assert rows["cells of 100"][2] > rows["cells of 100, 1 probes"][2] + 0.1
    assert rows["cells of 100"][1] == 40


def test_lll_auto_rules_cells_table_scores_exact_le_on_each_graph(bench_module, capsys):
    # The whole cells table on 3,000 deformed digits: every graph's exact-LE
    # 10-NN accuracy is printed (digits: chance 0.1; measured above 0.8).
    pytest.importorskip("usearch", reason="the table's first row is the HNSW graph")
    module = bench_module("lll_auto_rules")
    module.main(["--tables", "cells", "--n", "3000", "--cell-sizes", "100", "--probes", "3,5"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("|") and "cells of" in line]
    assert len(rows) == 2 and "3 probes" in rows[0]
    assert all(0.5 < float(row.split("|")[-2]) <= 1 for row in rows)


def test_gp_faces_tsne_scores_on_a_toy_map(bench_module):
    # GP Fig. 3's measures on 60 toy "faces" (3 subjects of 20 in three far-apart
    # clusters) with their own 2-D map: each method's 20 landmarks, scored.
    module = bench_module("gp_faces_tsne")
    rng = np.random.default_rng(0)
    subjects = np.repeat(np.arange(3), 20)
    X = np.abs(rng.normal(size=(60, 8)) * 0.05 + 3.0 * np.eye(8)[subjects])
    positions = 10.0 * np.eye(2)[subjects % 2] * (1 + subjects[:, None]) \
        + rng.normal(size=(60, 2))
    regions = module.map_regions(positions)
    for method in module.METHODS:
        landmarks, _ = module.fit_landmarks(method, X, 0, 30)
        measured, placed, near = module.scores(landmarks, X, positions, subjects, regions, 1.0)
        assert landmarks.shape == (module.N_LANDMARKS, 8) and placed.shape == (20, 2)
        assert near.shape == (20, module.N_NEAREST)
        # 20 landmarks among three subjects and 20 regions: counts, bounded so.
        assert 1 <= measured["subjects"] <= 3 and 1 <= measured["regions"] <= 20
        assert measured["map gap"] >= 0
    # Random landmarks are faces: no averaging ratio (distance 0 to the nearest face).
    landmarks, _ = module.fit_landmarks("random", X, 0, 30)
    assert np.isnan(module.scores(landmarks, X, positions, subjects, regions, 1.0)[0]["averaging"])
    assert module.mean_and_error([1.0, float("nan"), 3.0]) == (2.0, 1.0)


# Fourteen posts are too few for a kernel width that covers more than a post or two;
# the warning saying so is expected on toy data.
@pytest.mark.filterwarnings("ignore:kernel_width_")
def test_gp_runtime_text_times_gp_and_lda_per_unit(bench_module):
    # GP Fig. 4(b)'s comparison on eight toy posts, 2 landmarks / topics, 5 steps:
    # the structure of the result (wall and CPU seconds, positive), not a speed.
    module = bench_module("gp_runtime_text")
    docs = ["apples pears apples", "pears plums", "plums apples pears", "cars trucks",
            "trucks buses cars", "buses cars", "", "apples trucks"] * 2
    counts, X = module.histograms(docs)
    assert counts.shape[0] == X.shape[0] == 14  # the two empty posts left out
    # Square roots of normalised histograms: unit rows up to float32 rounding.
    assert np.allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-6)
    cfg = dict(n_landmarks=2, n_steps=5, passes=(1,), sizes=(7, None))
    per_unit = module.compare(counts, X, cfg, 0)
    assert set(per_unit) == {*module.GP_SETTINGS, "online LDA, 1 pass"}
    assert all(v.shape == (2,) and np.all(v >= 0) for v in per_unit.values())
    per_n = module.growth(X, cfg, 0, per_unit)
    assert sorted(per_n) == [7, 14] and per_n[14] == {k: per_unit[k] for k in module.GP_SETTINGS}
