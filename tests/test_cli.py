"""The ``landmarking`` command, driven as a user drives it.

Workflows (files in, files and pictures out, Ctrl-C, --continue) run the command
in a subprocess. The many bad-input cases call ``cli.main`` in-process, which is
the same code path minus the interpreter start-up, to keep the suite fast; a few
of them are also checked through a subprocess.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
import scipy.sparse
from PIL import Image
from sklearn.base import BaseEstimator

from landmarking import GPLandmarks, LocallyLinearLandmarks, __version__, cli, load
from landmarking.io import read_result

STEPS = 40  # optimisation steps per GP landmark in these tests: quick, still deterministic


def run(*args, cwd, check=True):
    """Run ``landmarking ARGS`` in a fresh interpreter, as a shell user would."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "-m", "landmarking.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def assert_png_drawn(path, *, red=False):
    """The PNG is a real picture: not blank, and with red landmark markers if asked."""
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and min(image.shape[:2]) >= 100
    rgb = image[..., :3]
    ink = np.any(rgb < 0.9, axis=-1).mean()
    assert 0.005 < ink < 0.95, f"{path} looks blank or flooded ({ink:.3%} ink)"
    if red:
        markers = (rgb[..., 0] > 0.8) & (rgb[..., 1] < 0.2) & (rgb[..., 2] < 0.2)
        assert markers.sum() >= 20, f"{path} shows no red landmark markers"


def circle(n=300, seed=0):
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, 2 * np.pi, n)
    return np.c_[np.cos(angle), np.sin(angle)] + 0.02 * rng.normal(size=(n, 2)), angle


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder with small data files and one `landmarks` run that other tests reuse."""
    folder = tmp_path_factory.mktemp("cli")
    X, angle = circle()
    np.savetxt(folder / "circle.csv", X, delimiter=",", header="x,y", comments="")
    np.save(folder / "circle.npy", X)
    np.savetxt(folder / "halves.txt", (angle > np.pi).astype(int), fmt="%d", header="half",
               comments="")
    proc = run("landmarks", "circle.csv", "-n", 4, "--steps", STEPS, "-o", "lm.npz",
               "--plot", "lm.png", "--labels", "halves.txt", cwd=folder)
    return folder, X, proc


# ------------------------------------------------------------------ landmarks


def test_landmarks_writes_result_provenance_and_picture(workdir):
    folder, X, proc = workdir
    saved = read_result(folder / "lm.npz", required=["landmarks", "objective", "kernel_width"])
    assert saved["landmarks"].shape == (4, 2)
    # Landmarks lie on the noisy unit circle, spread around it.
    radii = np.linalg.norm(saved["landmarks"], axis=1)
    assert np.all(np.abs(radii - 1) < 0.15), radii
    angles = np.sort(np.arctan2(saved["landmarks"][:, 1], saved["landmarks"][:, 0]))
    assert np.diff(np.r_[angles, angles[0] + 2 * np.pi]).max() < np.pi
    assert np.all(saved["objective"] > 0)
    assert bool(saved["complete"]) and int(saved["n_requested"]) == 4
    params = saved["parameters"]
    assert params["method"] == "gp" and params["n_steps"] == STEPS and params["random_state"] == 0
    assert saved["version"] == __version__
    assert saved["input_sha256"] == hashlib.sha256((folder / "circle.csv").read_bytes()).hexdigest()
    assert saved["command"].startswith("landmarking landmarks circle.csv -n 4")
    # Same seed and settings as the library: the CLI adds nothing of its own.
    reference = GPLandmarks(n_landmarks=4, n_steps=STEPS, random_state=0).fit(X)
    np.testing.assert_allclose(saved["landmarks"], reference.landmarks_, rtol=0, atol=1e-12)
    assert_png_drawn(folder / "lm.png", red=True)
    assert "wrote 4 landmarks to lm.npz" in proc.stderr
    assert "done in" in proc.stderr


def test_continue_extends_and_matches_one_longer_run(workdir, tmp_path, monkeypatch):
    folder, X, _ = workdir
    (tmp_path / "circle.npy").write_bytes((folder / "circle.npy").read_bytes())
    monkeypatch.chdir(tmp_path)
    assert cli.main(["landmarks", "circle.npy", "-n", "2", "--steps", str(STEPS), "--seed", "5",
                     "-o", "lm.npz", "-q"]) == 0
    first = read_result(tmp_path / "lm.npz")
    proc = run("landmarks", "circle.npy", "-n", 5, "--continue", "lm.npz", "-o", "lm.npz", "-q",
               cwd=tmp_path)
    assert proc.stderr == ""  # --quiet: no bars, no messages
    extended = read_result(tmp_path / "lm.npz")
    assert extended["landmarks"].shape == (5, 2)
    np.testing.assert_array_equal(extended["landmarks"][:2], first["landmarks"])
    np.testing.assert_array_equal(extended["objective"][:2], first["objective"])
    assert extended["objective"].shape == (5,)
    single = GPLandmarks(n_landmarks=5, n_steps=STEPS, random_state=5).fit(X)
    np.testing.assert_allclose(extended["landmarks"], single.landmarks_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(extended["objective"], single.objective_, rtol=1e-12)


def test_continue_of_a_file_from_before_blocks_stays_one_landmark_at_a_time(tmp_path,
                                                                           monkeypatch):
    import json

    X, _ = circle(600, seed=2)
    np.save(tmp_path / "x.npy", X)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["landmarks", "x.npy", "-n", "50", "--steps", "20", "--block-size", "1",
                     "-o", "old.npz", "-q"]) == 0
    # As written before blocks existed: no block_size among the saved parameters.
    with np.load(tmp_path / "old.npz") as archive:
        arrays = dict(archive)
    saved = json.loads(str(arrays["parameters"]))
    del saved["block_size"]
    arrays["parameters"] = np.asarray(json.dumps(saved, sort_keys=True))
    np.savez(tmp_path / "old.npz", **arrays)
    assert cli.main(["landmarks", "x.npy", "-n", "60", "--continue", "old.npz", "-o",
                     "old.npz", "-q"]) == 0
    single = GPLandmarks(n_landmarks=60, n_steps=20, block_size=1, random_state=0).fit(X)
    np.testing.assert_allclose(read_result(tmp_path / "old.npz")["landmarks"],
                               single.landmarks_, rtol=0, atol=1e-12)


def test_block_size_option_learns_landmarks_in_blocks(workdir, tmp_path, monkeypatch, capsys):
    folder, X, _ = workdir
    (tmp_path / "circle.npy").write_bytes((folder / "circle.npy").read_bytes())
    monkeypatch.chdir(tmp_path)
    assert cli.main(["landmarks", "circle.npy", "-n", "4", "--steps", str(STEPS),
                     "--block-size", "2", "-o", "lm.npz", "-q"]) == 0
    blocks = GPLandmarks(n_landmarks=4, n_steps=STEPS, block_size=2, random_state=0).fit(X)
    np.testing.assert_array_equal(read_result(tmp_path / "lm.npz")["landmarks"],
                                  blocks.landmarks_)
    for bad, words in (("0", "'0' must be at least 1"), ("big", "'big' is not a whole number")):
        with pytest.raises(SystemExit):
            cli.main(["landmarks", "circle.npy", "-n", "4", "--block-size", bad, "-o", "x.npz"])
        assert words in capsys.readouterr().err
    assert cli.main(["landmarks", "circle.npy", "-n", "4", "--block-size", "5", "-o",
                     "x.npz", "-q"]) != 0
    assert "block_size=5 is larger than n_landmarks=4" in capsys.readouterr().err


def _default_sigint():
    # A runner started in the background (nohup, `&` in a script) ignores SIGINT and
    # its children inherit that; a user's terminal does not. Restore the default so
    # that the child sees Ctrl-C as a user's shell would deliver it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _end_or_show_stacks(proc, timeout):
    """The stderr of ``proc`` once it has ended; a process still running after
    ``timeout`` seconds is aborted and the test fails with its threads' stacks."""
    try:
        return proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        err = proc.communicate()[1].decode(errors="replace")
        pytest.fail(f"the interrupted run did not end within {timeout} s; its stacks:\n"
                    f"{err[-6000:]}")


def test_ctrl_c_writes_finished_landmarks_and_resume_completes_them(tmp_path, monkeypatch):
    # One landmark at a time (--block-size 1), so that any k finished landmarks
    # continue to the first k + 1 of a single run; blocks: tests/test_faults.py.
    X, _ = circle(1500, seed=1)
    np.save(tmp_path / "x.npy", X)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    # -X faulthandler: a child that fails to end is sent SIGABRT, which prints where
    # each of its threads waits (see _end_or_show_stacks).
    proc = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "-m", "landmarking.cli", "landmarks", "x.npy",
         "-n", "200", "--steps", "300", "--block-size", "1", "-o", "part.npz"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, preexec_fn=_default_sigint)
    seen, deadline = b"", time.monotonic() + 120
    while b"landmark 4" not in seen and time.monotonic() < deadline:
        chunk = proc.stderr.read1(4096)
        if not chunk:
            break
        seen += chunk
    assert b"landmark 4" in seen, seen.decode(errors="replace")
    proc.send_signal(signal.SIGINT)
    err = (seen + _end_or_show_stacks(proc, timeout=120)).decode(errors="replace")
    assert proc.returncode == 130, err
    partial = read_result(tmp_path / "part.npz", required=["landmarks"])
    k = len(partial["landmarks"])
    assert 3 <= k < 200
    assert not bool(partial["complete"]) and int(partial["n_requested"]) == 200
    assert f"interrupted; wrote the {k} landmarks finished so far (of 200) to part.npz" in err
    assert "--continue part.npz -o part.npz" in err
    monkeypatch.chdir(tmp_path)
    assert cli.main(["landmarks", "x.npy", "-n", str(k + 1), "--steps", "300", "--block-size",
                     "1", "--continue", "part.npz", "-o", "part.npz", "-q"]) == 0
    resumed = read_result(tmp_path / "part.npz")
    assert bool(resumed["complete"])
    single = GPLandmarks(n_landmarks=k + 1, n_steps=300, block_size=1, random_state=0).fit(X)
    np.testing.assert_allclose(resumed["landmarks"], single.landmarks_, rtol=0, atol=1e-12)


def test_image_folder_landmarks_as_grid_and_csv_output(tmp_path):
    from sklearn.datasets import load_digits

    digits = load_digits()
    folder = tmp_path / "digits"
    folder.mkdir()
    pixels = np.round(digits.images[:40] * 255 / 16).astype(np.uint8)
    for i, image in enumerate(pixels):
        Image.fromarray(image).save(folder / f"d{i}.{'pgm' if i % 3 else 'png'}")
    proc = run("landmarks", "digits", "-n", 6, "--method", "kmeans", "-o", "centres.csv",
               "--plot", "grid.png", cwd=tmp_path)
    assert "wrote 6 landmarks to centres.csv" in proc.stderr
    text = (tmp_path / "centres.csv").read_text()
    assert text.startswith(f"# landmarking {__version__}: landmarks")
    centres = np.loadtxt(tmp_path / "centres.csv", delimiter=",")
    assert centres.shape == (6, 64)
    # k-means centres are averages of the [0, 1]-scaled pixels.
    assert -1e-6 <= centres.min() and centres.max() <= 1 + 1e-6 and centres.max() > 0.5
    assert_png_drawn(tmp_path / "grid.png")


@pytest.mark.parametrize("method, name", [("random", "RandomLandmarks"),
                                          ("active", "ActiveLearningLandmarks"),
                                          ("rpcholesky", "RPCholeskyLandmarks"),
                                          ("kmeans", "KMeansLandmarks")])
def test_baseline_methods_match_the_library(tmp_path, monkeypatch, method, name):
    import landmarking

    X, _ = circle(120, seed=2)
    np.save(tmp_path / "x.npy", X)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["landmarks", "x.npy", "-n", "5", "--method", method, "--seed", "4",
                     "--kernel-width", "0.05", "-o", "lm.npz", "-q"]) == 0
    saved = read_result(tmp_path / "lm.npz")
    reference = getattr(landmarking, name)(n_landmarks=5, kernel_width=0.05, random_state=4).fit(X)
    np.testing.assert_allclose(saved["landmarks"], reference.landmarks_, rtol=0, atol=1e-12)
    assert saved["parameters"]["method"] == method and float(saved["kernel_width"]) == 0.05


def test_landmarks_drawn_on_a_given_view(workdir, tmp_path, monkeypatch, capsys):
    folder, X, _ = workdir
    monkeypatch.chdir(tmp_path)
    angle = np.arctan2(X[:, 1], X[:, 0])
    np.save(tmp_path / "view.npy", np.c_[angle, np.cos(3 * angle)])
    assert cli.main(["landmarks", str(folder / "circle.npy"), "-n", "3", "--steps", str(STEPS),
                     "--view", "view.npy", "--plot", "v.png", "-o", "v.npz", "-q"]) == 0
    assert_png_drawn(tmp_path / "v.png", red=True)
    np.save(tmp_path / "short.npy", np.zeros((10, 2)))
    assert cli.main(["landmarks", str(folder / "circle.npy"), "-n", "3", "--view", "short.npy",
                     "--plot", "w.png", "-o", "w.npz", "-q"]) == 2
    assert "short.npy: the view has shape (10, 2) but needs one row" in capsys.readouterr().err
    assert cli.main(["landmarks", str(folder / "circle.npy"), "-n", "3", "--view", "view.npy",
                     "-o", "w.npz", "-q"]) == 2
    assert "--view sets the picture's coordinates; add --plot" in capsys.readouterr().err
    assert not (tmp_path / "w.npz").exists()


def test_sparse_input_gives_the_dense_result(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(9)
    dense = rng.random((150, 6)) * (rng.random((150, 6)) < 0.5)
    np.save(tmp_path / "dense.npy", dense)
    scipy.sparse.save_npz(tmp_path / "sparse.npz", scipy.sparse.csr_matrix(dense))
    monkeypatch.chdir(tmp_path)
    for name in ("dense.npy", "sparse.npz"):
        assert cli.main(["landmarks", name, "-n", "3", "--steps", "20", "--space", "nonnegative",
                         "-o", f"{name}.lm.npz"]) == 0
    # GPLandmarks takes CSR as it is: no dense copy, the same landmarks up to the
    # rounding of sparse products.
    assert "densifying" not in capsys.readouterr().err
    np.testing.assert_allclose(read_result(tmp_path / "sparse.npz.lm.npz")["landmarks"],
                               read_result(tmp_path / "dense.npy.lm.npz")["landmarks"],
                               rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ features


def test_features_from_saved_landmarks_dense_and_sparse(workdir, tmp_path):
    folder, X, _ = workdir
    saved = read_result(folder / "lm.npz")
    new = np.random.default_rng(7).normal(size=(25, 2))
    new[new < 0.3] = 0.0  # sparse enough to store as a sparse matrix
    np.save(tmp_path / "new.npy", new)
    scipy.sparse.save_npz(tmp_path / "new_sparse.npz", scipy.sparse.csr_matrix(new))
    run("features", "new.npy", "--landmarks", folder / "lm.npz", "-o", "f.npz", "-q", cwd=tmp_path)
    assert cli.main(["features", str(tmp_path / "new_sparse.npz"), "--landmarks",
                     str(folder / "lm.npz"), "-o", str(tmp_path / "fs.npz"), "-q"]) == 0
    d2 = ((new[:, None, :] - saved["landmarks"][None, :, :]) ** 2).sum(-1)
    expected = np.exp(-d2 / float(saved["kernel_width"]))
    dense = read_result(tmp_path / "f.npz")
    np.testing.assert_allclose(dense["features"], expected, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(read_result(tmp_path / "fs.npz")["features"], expected,
                               rtol=1e-10, atol=1e-14)
    assert dense["parameters"]["kernel_width"] == float(saved["kernel_width"])
    assert dense["parameters"]["landmarks_sha256"] == hashlib.sha256(
        (folder / "lm.npz").read_bytes()).hexdigest()


# ------------------------------------------------------------------ embed, transform


def test_embed_lll_saves_model_that_places_new_points(tmp_path):
    from sklearn.datasets import make_swiss_roll

    X, position = make_swiss_roll(400, random_state=0)
    np.save(tmp_path / "roll.npy", X)
    np.save(tmp_path / "position.npy", position)
    np.save(tmp_path / "some.npy", X[:40])
    run("embed", "roll.npy", "--method", "lll", "-d", 2, "--n-landmarks", 80, "--neighbors", 10,
        "--landmark-neighbors", 5, "-o", "emb.npz", "--model", "model.npz", "--plot", "emb.png",
        "--labels", "position.npy", "-q", cwd=tmp_path)
    saved = read_result(tmp_path / "emb.npz")
    embedding = saved["embedding"]
    assert saved["parameters"]["n_landmarks"] == 80 and saved["parameters"]["random_state"] == 0
    # The command passes its options through unchanged: same result as the library.
    reference = LocallyLinearLandmarks(n_components=2, n_landmarks=80, n_neighbors=10,
                                       n_landmark_neighbors=5, random_state=0).fit(X)
    scale = np.abs(reference.embedding_).max()
    np.testing.assert_allclose(embedding, reference.embedding_, rtol=0, atol=1e-6 * scale)
    # The model is the fitted estimator in landmarking.save's format.
    model = load(tmp_path / "model.npz")
    assert type(model) is LocallyLinearLandmarks
    np.testing.assert_array_equal(model.landmarks_, reference.landmarks_)
    assert model.landmark_embedding_.shape == (80, 2)
    assert model.n_landmark_neighbors == 5 and model.reg == reference.reg
    np.testing.assert_array_equal(model.embedding_, embedding)
    assert_png_drawn(tmp_path / "emb.png")
    run("transform", "some.npy", "--model", "model.npz", "-o", "placed.npz", "--plot",
        "placed.png", "-q", cwd=tmp_path)
    placed = read_result(tmp_path / "placed.npz")
    np.testing.assert_allclose(placed["embedding"], reference.transform(X[:40]), rtol=0,
                               atol=1e-6 * scale)
    # The loaded model places them as the library does (to rounding: BLAS results
    # depend on the alignment of the arrays, which differs between processes).
    np.testing.assert_allclose(placed["embedding"], model.transform(X[:40]), rtol=1e-12,
                               atol=1e-14 * scale)
    assert placed["parameters"]["estimator"] == "LocallyLinearLandmarks"
    assert_png_drawn(tmp_path / "placed.png")


def test_transform_still_reads_lll_models_of_version_0_1(tmp_path, monkeypatch):
    from landmarking.io import write_result

    X = circle(200)[0] @ np.array([[1.0, 0.0, 0.5], [0.0, 1.0, -0.5]])
    lll = LocallyLinearLandmarks(n_landmarks=30, n_neighbors=8, random_state=0).fit(X)
    # What `embed --model` wrote before models were saved with landmarking.save.
    write_result(tmp_path / "old.npz", {
        "landmarks": lll.landmarks_, "landmark_embedding": lll.landmark_embedding_,
        "n_landmark_neighbors": np.asarray(lll.n_landmark_neighbors),
        "reg": np.asarray(lll.reg)}, parameters={"method": "lll"}, result="landmark_embedding")
    np.save(tmp_path / "new.npy", X[:20] + 0.01)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["transform", "new.npy", "--model", "old.npz", "-o", "placed.npz", "-q"]) == 0
    np.testing.assert_allclose(read_result("placed.npz")["embedding"],
                               lll.transform(X[:20] + 0.01), rtol=1e-12, atol=1e-15)


def test_landmarks_model_gives_features_through_transform(workdir, tmp_path, monkeypatch, capsys):
    folder, X, _ = workdir
    monkeypatch.chdir(tmp_path)
    np.save("new.npy", X[:30] * 1.1)
    assert cli.main(["landmarks", str(folder / "circle.npy"), "-n", "5", "--method", "kmeans",
                     "-o", "lm.npz", "--model", "lm_model.npz", "-q"]) == 0
    model = load("lm_model.npz")
    np.testing.assert_array_equal(model.landmarks_, read_result("lm.npz")["landmarks"])
    assert cli.main(["transform", "new.npy", "--model", "lm_model.npz", "-o", "f.npz", "-q"]) == 0
    features = read_result("f.npz")
    np.testing.assert_allclose(features["features"], model.transform(X[:30] * 1.1), rtol=1e-12,
                               atol=1e-15)
    assert features["parameters"]["estimator"] == "KMeansLandmarks"
    # Features are not coordinates to draw.
    assert cli.main(["transform", "new.npy", "--model", "lm_model.npz", "-o", "g.npz",
                     "--plot", "g.png", "-q"]) == 2
    assert "whose transform gives landmark features, not coordinates to draw; drop --plot" in (
        capsys.readouterr().err)
    assert not Path("g.npz").exists()
    np.save("wide.npy", np.ones((4, 3)))
    assert cli.main(["transform", "wide.npy", "--model", "lm_model.npz", "-o", "h.npz", "-q"]) == 2
    assert "wide.npy: has 3 columns but the model in lm_model.npz was fitted on 2" in (
        capsys.readouterr().err)


class _EmbeddingWithoutTransform(BaseEstimator):
    """A stand-in for an estimator that embeds its training data but cannot place new
    points (no ``transform``): every library estimator has one today, so the CLI's two
    refusals (``transform --model`` and ``embed --model``) need this to run."""

    def __init__(self, n_components=2):
        self.n_components = n_components

    def fit(self, X, y=None):
        self.embedding_ = np.asarray(X)[:, :self.n_components]
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def fit_transform(self, X, y=None):
        return self.fit(X).embedding_


@pytest.fixture
def without_transform(monkeypatch):
    """The stand-in, registered for this test only: a model file may name it and
    ``embed --method stand-in`` builds it."""
    import landmarking
    from landmarking import persistence
    from landmarking.cli.parser import EMBED_METHODS

    cls = _EmbeddingWithoutTransform
    name = cls.__name__
    monkeypatch.setitem(persistence.ESTIMATORS, name, cls)
    monkeypatch.setitem(persistence._NAME_OF, cls, name)
    monkeypatch.setitem(EMBED_METHODS, "stand-in", name)
    monkeypatch.setattr(landmarking, name, cls, raising=False)
    assert not hasattr(cls, "transform")
    return cls


def test_model_of_an_estimator_without_transform_is_refused(tmp_path, monkeypatch, capsys,
                                                            without_transform):
    from landmarking import save

    cls = without_transform
    monkeypatch.chdir(tmp_path)
    X = circle(60)[0] @ np.array([[1.0, 0.0, 0.5], [0.0, 1.0, -0.5]])
    np.save("points.npy", X)
    save(cls().fit(X), "model.npz")
    assert type(load("model.npz")) is cls
    assert cli.main(["transform", "points.npy", "--model", "model.npz", "-o", "t.npz", "-q"]) == 2
    line = capsys.readouterr().err.strip()
    assert line == (f"landmarking transform: error: model.npz: holds a {cls.__name__}, which "
                    "cannot place new points (it has no transform); save a model of --method "
                    "lll with `landmarking embed --model`.")
    assert not Path("t.npz").exists()
    assert cli.main(["embed", "points.npy", "--method", "stand-in", "--model", "m.npz",
                     "-o", "e.npz", "-q"]) == 2
    assert (f"--model saves a model for `landmarking transform`, and --method stand-in "
            f"({cls.__name__}) cannot place new points; use --method lll, or drop --model"
            in capsys.readouterr().err)
    assert not Path("e.npz").exists() and not Path("m.npz").exists()
    # Without --model the stand-in embeds: the refusal is about --model alone.
    assert cli.main(["embed", "points.npy", "--method", "stand-in", "-o", "e.npz", "-q"]) == 0
    np.testing.assert_array_equal(read_result("e.npz")["embedding"], X[:, :2])


def test_embed_laplacian_eigenmaps_and_sculpting(tmp_path, monkeypatch):
    from sklearn.datasets import make_swiss_roll

    from landmarking.sculpting.estimator import ManifoldSculpting
    from landmarking.spectral.laplacian import LaplacianEigenmaps

    X, _ = make_swiss_roll(250, random_state=1)
    np.save(tmp_path / "roll.npy", X)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["embed", "roll.npy", "--method", "le", "-d", "2", "--neighbors", "10",
                     "--bandwidth", "3", "-o", "le.npz", "-q"]) == 0
    le = read_result(tmp_path / "le.npz")
    assert le["parameters"]["method"] == "le" and le["parameters"]["bandwidth"] == 3.0
    reference = LaplacianEigenmaps(n_neighbors=10, bandwidth=3.0, random_state=0).fit(X)
    np.testing.assert_allclose(le["embedding"], reference.embedding_, rtol=0,
                               atol=1e-6 * np.abs(reference.embedding_).max())
    assert cli.main(["embed", "roll.npy", "--method", "sculpting", "-d", "2", "--neighbors", "12",
                     "--scale-rate", "0.9", "--seed", "3", "-o", "sc.npz", "-q"]) == 0
    sculpted = read_result(tmp_path / "sc.npz")
    reference = ManifoldSculpting(n_neighbors=12, scale_rate=0.9, random_state=3).fit(X)
    np.testing.assert_allclose(sculpted["embedding"], reference.embedding_, rtol=0,
                               atol=1e-6 * np.abs(reference.embedding_).max())
    assert cli.main(["embed", "roll.npy", "--method", "sculpting", "--neighbors", "12",
                     "--start", "ltsa", "-o", "sl.npz", "-q"]) == 0
    sculpted = read_result(tmp_path / "sl.npz")
    assert sculpted["parameters"]["preprocess"] == "ltsa"
    reference = ManifoldSculpting(n_neighbors=12, preprocess="ltsa", random_state=0).fit(X)
    np.testing.assert_allclose(sculpted["embedding"], reference.embedding_, rtol=0,
                               atol=1e-6 * np.abs(reference.embedding_).max())
    assert cli.main(["embed", "roll.npy", "--method", "le", "--start", "ltsa",
                     "-o", "bad.npz", "-q"]) == 2


def test_embed_lll_on_saved_gp_landmarks(workdir, tmp_path, monkeypatch):
    from landmarking.lll.estimator import LocallyLinearLandmarks

    folder, X, _ = workdir
    monkeypatch.chdir(tmp_path)
    assert cli.main(["embed", str(folder / "circle.npy"), "--method", "lll", "-d", "1",
                     "--landmarks", str(folder / "lm.npz"), "--landmark-neighbors", "2",
                     "--neighbors", "8", "-o", "e.npz", "-q"]) == 0
    saved = read_result(tmp_path / "e.npz")
    assert saved["parameters"]["landmarks"] == str(folder / "lm.npz")
    T = read_result(folder / "lm.npz")["landmarks"]
    reference = LocallyLinearLandmarks(n_components=1, landmarks=T, n_landmark_neighbors=2,
                                       n_neighbors=8, random_state=0).fit(X)
    np.testing.assert_allclose(saved["embedding"], reference.embedding_, rtol=0,
                               atol=1e-9 * np.abs(reference.embedding_).max())


# ------------------------------------------------------------------ topics


def test_topics_prints_each_landmarks_words(tmp_path):
    groups = [["apple", "pear", "banana", "fruit", "juice"],
              ["engine", "wheel", "road", "driver", "car"],
              ["guitar", "drum", "song", "band", "music"]]
    rng = np.random.default_rng(8)
    with open(tmp_path / "posts.jsonl", "w") as fh:
        for i in range(60):
            words = rng.choice(groups[i % 3], size=12)
            fh.write(json.dumps({"body": " ".join(words), "id": i}) + "\n")
    proc = run("topics", "posts.jsonl", "--field", "body", "-n", 3, "--top", 4, "--steps", 100,
               "-o", "topics.npz", cwd=tmp_path)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("topic")]
    assert len(lines) == 3
    found = set()
    for line in lines:
        words = line.split(":", 1)[1].split()
        assert len(words) == 4
        group = [g for g, members in enumerate(groups) if set(words) <= set(members)]
        assert len(group) == 1, line  # every topic's words come from one group
        found.add(group[0])
    assert found == {0, 1, 2}
    saved = read_result(tmp_path / "topics.npz", required=["landmarks", "vocabulary"])
    expected = hashlib.sha256((tmp_path / "posts.jsonl").read_bytes()).hexdigest()
    assert saved["input_sha256"] == expected
    assert saved["landmarks"].shape == (3, 15) and saved["vocabulary"].shape == (15,)
    np.testing.assert_allclose(np.linalg.norm(saved["landmarks"], axis=1), 1.0, rtol=1e-9)


# ------------------------------------------------------------------ help, demo, reproduce


def test_console_script_and_help_examples(tmp_path, capsys):
    script = Path(sys.executable).parent / "landmarking"
    assert script.exists(), "the console script is installed with the package"
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "example:" in proc.stdout
    for command in ("landmarks", "features", "embed", "transform", "topics", "demo", "reproduce"):
        with pytest.raises(SystemExit) as exit_info:
            cli.main([command, "--help"])
        assert exit_info.value.code == 0
        text = capsys.readouterr().out
        assert "example:" in text and f"landmarking {command}" in text.split("example:")[1]


def test_demo_calls_run_demo(monkeypatch):
    import types

    calls = []
    monkeypatch.setitem(sys.modules, "landmarking.demo",
                        types.SimpleNamespace(run_demo=lambda: calls.append(True)))
    assert cli.main(["demo", "-q"]) == 0
    assert calls == [True]


def test_reproduce_runs_the_benchmark_script(tmp_path, monkeypatch, capsys):
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "gp_faces.py").write_text(
        "import json, os, sys\n"
        "json.dump({'argv': sys.argv[1:], 'cwd': os.getcwd(),"
        " 'data': os.environ['LANDMARKING_DATA']},"
        " open(sys.argv[0] + '.json', 'w'))\n")
    monkeypatch.setattr(cli, "benchmarks_dir", lambda: bench)
    user_folder = tmp_path / "user"
    user_folder.mkdir()
    monkeypatch.chdir(user_folder)
    monkeypatch.setenv("LANDMARKING_DATA", "data")
    assert cli.main(["reproduce", "faces", "--full", "--out", "somewhere", "-q"]) == 0
    record = json.loads((bench / "gp_faces.py.json").read_text())
    # The script runs from the checkout's root; the user's relative paths still hold.
    assert record == {"argv": ["--full", "--out", str(user_folder / "somewhere")],
                      "cwd": str(tmp_path), "data": str(user_folder / "data")}
    assert cli.main(["reproduce", "mnist", "-q"]) == 2
    assert ("gp_mnist_classification.py: this experiment's script is missing"
            in capsys.readouterr().err)
    monkeypatch.setattr(cli, "benchmarks_dir", lambda: tmp_path / "absent")
    assert cli.main(["reproduce", "faces"]) == 2
    assert "no benchmarks folder" in capsys.readouterr().err


def test_benchmarks_folder_is_found_from_the_source_checkout():
    assert cli.benchmarks_dir() == Path(__file__).resolve().parents[1] / "benchmarks"


# ------------------------------------------------------------------ bad input


def _bad_inputs(folder):
    (folder / "ragged.csv").write_text("x,y\n1,2\n3,4\n5\n")
    (folder / "words.csv").write_text("1,2\n3,four\n")
    np.save(folder / "nan.npy", np.array([[1.0, 2.0], [np.nan, 0.0]]))
    np.save(folder / "tiny.npy", np.zeros((3, 2)) + np.arange(3)[:, None])
    np.savez(folder / "pair.npz", X=np.ones((5, 2)), y=np.arange(5))
    np.save(folder / "negative.npy", -np.ones((20, 3)))
    (folder / "data.json").write_text("[]")
    (folder / "taken.npz").write_bytes(b"keep me")
    np.save(folder / "three_cols.npy", np.ones((5, 3)))


BAD_INPUTS = [
    (["landmarks", "data.json", "-n", "2", "-o", "o.npz"],
     r"data\.json: cannot read files ending in '\.json'; give a \.npy, \.npz, \.csv"),
    (["landmarks", "ragged.csv", "-n", "2", "-o", "o.npz"],
     r"ragged\.csv: line 4 has 1 fields but earlier rows have 2 \(ragged CSV\)"),
    (["landmarks", "words.csv", "-n", "2", "-o", "o.npz"],
     r"words\.csv: line 2, column 2 holds 'four', which is not a number"),
    (["landmarks", "nan.npy", "-n", "2", "-o", "o.npz"],
     r"nan\.npy: NaN value in row 2, column 1 .*remove or impute"),
    (["landmarks", "tiny.npy", "-n", "5", "-o", "o.npz"],
     r"tiny\.npy: has 3 rows, fewer than the 5 landmarks requested; ask for at most 3 with -n"),
    (["landmarks", "pair.npz", "--key", "Z", "-n", "2", "-o", "o.npz"],
     r"pair\.npz: has no array named 'Z' \(it holds: X, y\); pass --key"),
    (["landmarks", "pair.npz", "-n", "2", "-o", "o.npz"],
     r"pair\.npz: holds several arrays \(X, y\); choose one with --key"),
    (["landmarks", "tiny.npy", "-n", "2", "-o", "taken.npz"],
     r"taken\.npz: already exists; pass --force to overwrite it"),
    (["landmarks", "tiny.npy", "-n", "2", "-o", "o.txt"],
     r"o\.txt: cannot write files ending in '\.txt'"),
    (["landmarks", "tiny.npy", "-n", "2", "-o", "o.npz", "--plot", "p.jpg"],
     r"p\.jpg: --plot writes a PNG image"),
    (["landmarks", "negative.npy", "-n", "2", "--space", "sphere", "-o", "o.npz"],
     r"negative\.npy: space='sphere' needs nonnegative data"),
    (["landmarks", "tiny.npy", "-n", "2", "--method", "random", "--steps", "5", "-o", "o.npz"],
     r"--steps does not apply to --method random; drop it"),
    (["landmarks", "tiny.npy", "-n", "2", "--method", "kmeans", "--continue", "taken.npz",
      "-o", "o.npz"],
     r"--continue extends gp runs only"),
    (["landmarks", "tiny.npy", "-n", "2", "--labels", "tiny.npy", "-o", "o.npz"],
     r"--labels colours the picture; add --plot NAME\.png or drop --labels"),
    (["features", "three_cols.npy", "--landmarks", "missing.npz", "-o", "f.npz"],
     r"missing\.npz: no such file"),
    (["embed", "tiny.npy", "--method", "lll", "--n-landmarks", "9", "-o", "e.npz"],
     r"tiny\.npy: has 3 rows, fewer than the 9 landmarks requested"),
    (["embed", "tiny.npy", "--method", "sculpting", "--bandwidth", "2", "-o", "e.npz"],
     r"--bandwidth does not apply to --method sculpting"),
    (["transform", "tiny.npy", "--model", "taken.npz", "-o", "t.npz"],
     r"taken\.npz: not a landmarking model file \(not an \.npz archive\); give the file "
     r"written by landmarking\.save"),
    (["transform", "tiny.npy", "--model", "pair.npz", "-o", "t.npz"],
     r"pair\.npz: not a landmarking model file \(it holds: X, y\)"),
    (["transform", "tiny.npy", "--model", "missing.npz", "-o", "t.npz"],
     r"missing\.npz: no such file; give the model written by `landmarking embed --model`"),
    (["landmarks", "tiny.npy", "-n", "2", "-o", "o.npz", "--model", "taken.npz"],
     r"taken\.npz: already exists; pass --force to overwrite it, or choose another --model"),
    (["topics", "posts.csv", "-n", "2"],
     r"posts\.csv: no such file or folder; give a folder of \.txt files or a \.jsonl file"),
]


@pytest.mark.parametrize("argv, message", BAD_INPUTS, ids=[" ".join(a[:2]) + f"-{i}" for i, (a, _)
                                                           in enumerate(BAD_INPUTS)])
def test_bad_input_exits_2_with_one_line(tmp_path, monkeypatch, capsys, argv, message):
    _bad_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli.main([*argv, "-q"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"landmarking {argv[0]}: error: ")
    assert __import__("re").search(message, lines[0]), lines[0]
    assert (tmp_path / "taken.npz").read_bytes() == b"keep me"
    assert not (tmp_path / "o.npz").exists()


def test_continue_checks_data_and_parameters(workdir, tmp_path, capsys, monkeypatch):
    folder, X, _ = workdir
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "other.npy", X + 1.0)
    assert cli.main(["landmarks", "other.npy", "-n", "6", "--continue", str(folder / "lm.npz"),
                     "-o", "x.npz", "-q"]) == 2
    assert ("was learnt from other data than other.npy (the sha256 differs)"
            in capsys.readouterr().err)
    write_copy = tmp_path / "lm.npz"
    write_copy.write_bytes((folder / "lm.npz").read_bytes())
    assert cli.main(["landmarks", str(folder / "circle.csv"), "-n", "3", "--continue", "lm.npz",
                     "-o", "lm.npz", "-q"]) == 2
    assert "already holds 4 landmarks; -n is the total" in capsys.readouterr().err
    assert cli.main(["landmarks", str(folder / "circle.csv"), "-n", "6", "--steps", "7",
                     "--continue", "lm.npz", "-o", "lm.npz", "-q"]) == 2
    assert f"was learnt with --steps {STEPS}, not 7; drop --steps" in capsys.readouterr().err
    assert write_copy.read_bytes() == (folder / "lm.npz").read_bytes()


def test_bad_input_through_the_command_and_debug_traceback(tmp_path):
    (tmp_path / "ragged.csv").write_text("1,2\n3\n")
    proc = run("landmarks", "ragged.csv", "-n", 1, "-o", "o.npz", cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "landmarking landmarks: error: ragged.csv: line 2 has 1 fields but earlier rows have 2 "
        "(ragged CSV); give every row the same number of values.")
    proc = run("landmarks", "ragged.csv", "-n", 1, "-o", "o.npz", "--debug", cwd=tmp_path,
               check=False)
    assert proc.returncode != 0
    assert "Traceback (most recent call last)" in proc.stderr and "InputError" in proc.stderr



def test_bad_option_values_exit_2(capsys):
    for argv, message in [
        (["landmarks", "x.npy", "-n", "0", "-o", "o.npz"], "'0' must be at least 1"),
        (["landmarks", "x.npy", "-n", "2", "--kernel-width", "-1", "-o", "o.npz"],
         "'-1' must be a finite number > 0"),
        (["landmarks", "x.npy", "-n", "2", "--image-shape", "28", "-o", "o.npz"],
         "is not HEIGHTxWIDTH"),
        (["embed", "x.npy", "--method", "tsne", "-o", "o.npz"], "invalid choice"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
