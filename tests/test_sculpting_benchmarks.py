"""The Manifold Sculpting experiment scripts (Figs. 13, 14, 18, 19 and IV-C) run.

Each script's ``main`` runs here at a toy size (seconds), so that a renamed
parameter or helper fails here; nothing is measured. Their scores of a 1-D order
are checked on orders whose score is known exactly.
"""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench(monkeypatch):
    """Import a benchmark module by name (benchmarks/ first on the path), with the
    BLAS-throttling variables unset (as test_benchmarks.py does), so that no
    version of ``parse`` re-executes pytest."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _common

    for name in getattr(_common, "THROTTLES", ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):
        monkeypatch.delenv(name, raising=False)

    def load(name):
        sys.modules.pop(name, None)
        return importlib.import_module(name)

    return load


# ----------------------------------------------------------------- scores of a 1-D order

def test_pose_scores_of_a_circle_cut_once(bench):
    m = bench("_sculpting_methods")
    pose = np.arange(72)
    y = (pose - 30) % 72  # the turntable cut between poses 29 and 30, laid flat
    # 71 of the 72 consecutive pairs stay adjacent: exact, integer comparisons.
    assert m.pose_neighbour_recall(y, pose, 72) == 71 / 72
    # One cut reads the pose as the axis exactly (rho = 1 up to rounding of
    # sums of about 72^3 in float64: far below 1e-12).
    assert m.circular_rank_correlation(y, pose, 72) == pytest.approx(1.0, abs=1e-12)
    # A circle projected on a diameter interleaves its two halves: most pairs split.
    folded = np.cos(2 * np.pi * (pose + 0.25) / 72)
    assert m.pose_neighbour_recall(folded, pose, 72) < 0.5


def test_pose_scores_of_an_open_arc(bench):
    m = bench("_sculpting_methods")
    pose = np.arange(36)
    assert m.pose_neighbour_recall(-pose, pose) == 1.0
    assert m.rank_correlation(-pose, pose) == pytest.approx(1.0, abs=1e-12)
    swapped = pose.copy()
    swapped[[0, 35]] = swapped[[35, 0]]
    assert m.pose_neighbour_recall(swapped, pose) == 33 / 35


def test_shortest_path_is_the_line_order(bench):
    m = bench("_sculpting_methods")
    X = np.array([[0.0], [3.0], [1.0], [7.0], [2.0]])
    # Points on a line: the sorted order is the shortest path, mean step 7 / 4.
    assert m.shortest_path_length(X) == pytest.approx(7 / 4, rel=1e-12)
    assert m.path_length(X, np.argsort(X[:, 0])) == pytest.approx(7 / 4, rel=1e-12)
    assert m.random_path_length(X, n_orders=50) > 7 / 4
    with pytest.raises(ValueError, match="at most 14"):
        m.shortest_path_length(np.zeros((15, 1)))


# ----------------------------------------------------------------- the scripts at toy sizes

def test_image_windows_script(bench, tmp_path, capsys):
    script = bench("sculpting_image_windows")
    pic = script.picture(12)
    assert pic.shape == (12, 12) and 0 <= pic.min() and pic.max() <= 1
    X, truth = script.windows(pic, 4, 9)
    assert X.shape == (16, 81) and truth.max(axis=0).tolist() == [3, 3]
    assert np.array_equal(X[1], pic[0:9, 1:10].ravel())  # offset (column 1, row 0)
    assert script.main(["--positions", "6", "--window", "6", "-k", "6",
                        "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "MS (ltsa), norm. nbhd" in out and "load average" in out
    assert (tmp_path / "sculpting_image_windows.png").stat().st_size > 0


def test_supervision_script(bench, tmp_path, capsys):
    script = bench("sculpting_supervision")
    assert script.main(["-n", "150", "-k", "8", "--fractions", "0", "0.5", "--starts", "ltsa",
                        "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "MSE unaligned" in out and "load average" in out
    assert (tmp_path / "sculpting_supervision.png").stat().st_size > 0


def test_one_dimension_script_on_faces(bench, data_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LANDMARKING_DATA", str(data_dir))
    script = bench("sculpting_one_dimension")
    # Olivetti only (COIL-20's 72-image objects take longer than a smoke test).
    assert script.main(["--objects", "--subjects", "0", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "random order" in out and "MS (ltsa)" in out
    assert (tmp_path / "sculpting_one_dimension.png").stat().st_size > 0


def test_newsgroups_query_script_on_a_toy_corpus(bench, tmp_path, monkeypatch, capsys):
    script = bench("sculpting_newsgroups_query")
    rng = np.random.default_rng(0)
    senses = (["amp", "box", "audio", "sound", "stereo", "bass"],
              ["house", "vote", "congress", "bill", "senate", "party"])
    docs, labels = [], []
    for i in range(40):
        words = rng.choice(senses[i % 2], size=25).tolist() + ["speaker"] * (1 + i % 3)
        docs.append(" ".join(words))
        labels.append(i % 2)
    monkeypatch.setattr(script, "corpus", lambda: (docs, np.array(labels), ["a.x", "b.y"]))
    assert len(script.retrieve(docs, "speaker")) == 40
    order, cut = script.two_means_cut(np.array([0.0, 0.1, 5.0, 5.2, 0.2]))
    assert cut == 3 and set(order[:cut]) == {0, 1, 4}
    X, vocabulary, kept = script.vectors(docs[:4], "sqrt")
    assert X.shape == (4, len(vocabulary)) and kept.tolist() == [0, 1, 2, 3]
    assert script.main(["--queries", "speaker", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "terms of one half" in out and "AMI" in out and "speaker," not in out
    assert (tmp_path / "sculpting_newsgroups_query.png").stat().st_size > 0


def test_sweeps_script_measures_every_method(bench, tmp_path, capsys):
    """Figs. 7, 10 and 12 at one toy cell each: every method has a finite MSE or
    a note saying why not, and on the S-curve, where LTSA's start is already
    unfolded (MSE < 1), sculpting from it is better than LTSA."""
    import json

    pytest.importorskip("cvxpy")
    script = bench("sculpting_sweeps")
    assert script.main(["--figures", "fig7", "fig10", "fig12", "--fig7-n", "250", "--ks", "10",
                        "--sizes", "250", "--budget", "120", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Fig. 10: S-curve" in out and "load average" in out
    assert (tmp_path / "sculpting_sweeps.png").stat().st_size > 0
    rows = json.loads((tmp_path / "sculpting_sweeps.json").read_text())
    for figure in ("fig7", "fig10", "fig12"):
        mine = {r["method"]: r for r in rows if r["figure"] == figure}
        assert set(mine) == set(script.WITH_LMVU)
        for r in mine.values():
            assert (r["mse"] is not None and np.isfinite(r["mse"])) or r["note"]
    scurve = {r["method"]: r["mse"] for r in rows if r["figure"] == "fig10"}
    assert scurve["LTSA"] < 1.0
    # Measured 6x better at N = 250 and 16x at 400 (quick run); any gain passes.
    assert scurve["MS (ltsa)"] < scurve["LTSA"]
    # L-MVU ran (cvxpy is installed) and is not distorted on the S-curve (0.2 measured).
    assert scurve["L-MVU"] is not None and scurve["L-MVU"] < 1.0


def test_lmvu_memory_estimate(bench):
    script = bench("sculpting_sweeps")
    # 2,000 points, k = 6: 44 landmarks, at most 12,000 edge vectors of 43 float64
    # (the rounds' programs hold their few edges only).
    assert script.lmvu_edge_vectors_mib(2000, 6) == pytest.approx(12000 * 43 * 8 / 2**20)


def test_sweeps_script_runs_the_methods_asked(bench, tmp_path, capsys):
    import json

    script = bench("sculpting_sweeps")
    assert script.main(["--figures", "fig12", "--sizes", "250", "--methods", "Isomap", "LTSA",
                        "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "sculpting_sweeps.json").read_text())
    assert sorted(r["method"] for r in rows) == ["Isomap", "LTSA"]
    assert "Fig. 12" in capsys.readouterr().out


def test_stages_script_follows_one_path(bench, tmp_path, capsys):
    """Fig. 5's stages are fits stopped at max_iter: a shorter fit is the start of
    a longer one (the same errors, iteration for iteration), and from the paper's
    start a fit stopped before min_iter has scaled the dropped dimension by
    sigma ** max_iter exactly."""
    from sklearn.datasets import make_swiss_roll

    script = bench("sculpting_stages")
    X, _ = make_swiss_roll(200, random_state=0)
    _, short = script.stage_fit(X, "pca", 10, 0.95, 20, 0)
    _, long = script.stage_fit(X, "pca", 10, 0.95, 40, 0)
    assert short.n_iter_ == 20 and long.n_iter_ == 40
    # The same operations in the same order: equal to the last bit.
    assert np.array_equal(short.error_, long.error_[:20])
    # 40 products of 0.95: rounding error below 40 ulps.
    assert long.scale_ == pytest.approx(0.95 ** 40, rel=1e-13)
    assert script.start_state(X, "pca", 10).shape == (200, 3)
    assert script.start_state(X, "ltsa", 10).shape == (200, 2)
    assert script.main(["-n", "200", "-k", "10", "--stages", "0", "15", "30",
                        "--converged", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "default rule" in out and "load average" in out
    assert (tmp_path / "sculpting_stages.png").stat().st_size > 0


def test_sculpting_script_adds_lmvu_on_request(bench, tmp_path, capsys):
    """``sculpting.py --lmvu`` puts landmark MVU beside the other methods (the
    paper's Figs. 2 and 17): one row of the table, scored like the rest; without
    the flag there is none."""
    pytest.importorskip("cvxpy")
    script = bench("sculpting")
    args = ["-n", "300", "--datasets", "swiss", "--no-pca", "--out", str(tmp_path)]
    assert script.main(args + ["--lmvu", "120"]) == 0
    table = capsys.readouterr().out
    lmvu = [line for line in table.splitlines() if " L-MVU " in line]
    assert len(lmvu) == 1
    # The row's median normalised MSE is a finite number (the solver finished).
    assert np.isfinite(float(lmvu[0].split()[5]))
    assert (tmp_path / "sculpting.png").stat().st_size > 0
    assert script.main(args) == 0
    assert " L-MVU " not in capsys.readouterr().out
