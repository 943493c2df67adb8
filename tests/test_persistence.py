"""landmarking.save / landmarking.load: round trips of every estimator, and bad files."""

import copy
import dataclasses
import inspect
import io
import json
import math
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.manifold import LocallyLinearEmbedding
from sklearn.neighbors import NearestNeighbors

import landmarking
from landmarking import (
    ActiveLearningLandmarks,
    GPLandmarks,
    KMeansLandmarks,
    LaplacianEigenmaps,
    LocallyLinearLandmarks,
    ManifoldSculpting,
    NMFLandmarks,
    RandomLandmarks,
    RPCholeskyLandmarks,
    load,
    save,
)
from landmarking.persistence import ESTIMATORS, FORMAT_VERSION, HEADER, ModelFileError


def roll(n=160, seed=0):
    """A small noisy Swiss roll strip in 3-D."""
    rng = np.random.RandomState(seed)
    t = 1.5 * np.pi * (1 + 2 * rng.rand(n))
    h = 4 * rng.rand(n)
    return np.c_[t * np.cos(t), h, t * np.sin(t)] / 5 + 0.01 * rng.normal(size=(n, 3))


X = roll()
X_NEW = roll(25, seed=1)
COUNTS = scipy.sparse.random(120, 8, density=0.6, format="csr",
                             random_state=np.random.RandomState(2), dtype=np.float64) * 5
INIT = np.abs(np.random.RandomState(3).normal(size=(4, 3)))


def _cases():
    """(id, unfitted estimator, training data, data to transform)."""
    gp = dict(n_steps=15, batch_size=60, random_state=0)
    return [
        ("gp", GPLandmarks(n_landmarks=3, **gp), X, X_NEW),
        ("gp-init-float32", GPLandmarks(n_landmarks=4, init=INIT, space="nonnegative",
                                        **gp), np.abs(X).astype(np.float32),
         np.abs(X_NEW).astype(np.float32)),
        ("random-randomstate", RandomLandmarks(n_landmarks=5,
                                               random_state=np.random.RandomState(4)), X, X_NEW),
        ("active", ActiveLearningLandmarks(n_landmarks=5, subsample=100, random_state=0), X,
         X_NEW),
        ("rpcholesky", RPCholeskyLandmarks(n_landmarks=5, random_state=0), X, X_NEW),
        ("kmeans", KMeansLandmarks(n_landmarks=4, random_state=0), X, X_NEW),
        ("nmf-sparse", NMFLandmarks(n_landmarks=3, max_iter=50, random_state=0), COUNTS,
         COUNTS[:10]),
        ("lll", LocallyLinearLandmarks(n_landmarks=30, n_neighbors=8, random_state=0), X, X_NEW),
        ("lll-le-nystrom", LocallyLinearLandmarks(n_landmarks=30, n_neighbors=8,
                                                  method="le-nystrom", random_state=0), X, X_NEW),
        ("lll-gp-landmarks", LocallyLinearLandmarks(
            n_neighbors=8, landmarks=GPLandmarks(n_landmarks=25, **gp), random_state=0), X, X_NEW),
        ("lll-fitted-landmarks-float32", LocallyLinearLandmarks(
            n_neighbors=8, landmarks=KMeansLandmarks(n_landmarks=25, random_state=0).fit(X),
            random_state=0), X.astype(np.float32), X_NEW.astype(np.float32)),
        ("lll-refine", LocallyLinearLandmarks(n_landmarks=30, n_neighbors=8, refine=True,
                                              random_state=0), X, X_NEW),
        ("lll-array-landmarks", LocallyLinearLandmarks(n_neighbors=8, landmarks=X[::6] + 0.01,
                                                       random_state=0), X, X_NEW),
        ("laplacian", LaplacianEigenmaps(n_neighbors=8, random_state=0), X, X_NEW),
        ("sculpting", ManifoldSculpting(n_neighbors=8, min_iter=4, max_iter=8, patience=2,
                                        random_state=0), X, X_NEW),
        ("sculpting-lle-start", ManifoldSculpting(
            n_neighbors=8, preprocess=LocallyLinearEmbedding(n_neighbors=8, random_state=0),
            min_iter=2, max_iter=4, patience=2, random_state=0), X, X_NEW),
        ("sculpting-array-start", ManifoldSculpting(n_neighbors=8, preprocess=X[:, [0, 2]],
                                                    min_iter=2, max_iter=4, patience=2,
                                                    random_state=0), X, X_NEW),
    ]


CASES = _cases()


def assert_same(a, b, where="estimator"):
    """a and b hold the same values, of the same types, bit for bit."""
    assert type(a) is type(b), f"{where}: {type(a)} != {type(b)}"
    if isinstance(a, BaseEstimator):
        assert_same(a.get_params(deep=False), b.get_params(deep=False), f"{where}.params")
        assert sorted(vars(a)) == sorted(vars(b)), where
        for key in vars(a):
            assert_same(vars(a)[key], vars(b)[key], f"{where}.{key}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert a.flags.f_contiguous == b.flags.f_contiguous, where
        if a.dtype.hasobject:
            assert a.tolist() == b.tolist(), where
        else:
            assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), where
    elif scipy.sparse.issparse(a):
        assert a.format == b.format and a.shape == b.shape, where
        for part in ("data", "indices", "indptr"):
            assert_same(getattr(a, part), getattr(b, part), f"{where}.{part}")
    elif isinstance(a, np.random.RandomState):
        sa, sb = a.get_state(), b.get_state()
        assert sa[0] == sb[0] and np.array_equal(sa[1], sb[1]) and sa[2:] == sb[2:], where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif dataclasses.is_dataclass(a):  # a result record (RefineResult)
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif hasattr(a, "get_arrays"):  # a scikit-learn KDTree / BallTree, rebuilt on load
        for x, y in zip(a.get_arrays(), b.get_arrays(), strict=True):
            assert_same(x, y, f"{where}.get_arrays()")
    elif isinstance(a, (float, np.floating)) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


@pytest.fixture(scope="module")
def fitted():
    import warnings

    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. NMF's convergence warning at 50 iterations
        for name, est, train, new in CASES:
            out[name] = (est.fit(train), train, new)
    return out


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_round_trip_is_bit_for_bit(fitted, tmp_path, name):
    est, train, new = fitted[name]
    path = tmp_path / "model.npz"
    save(est, path)
    back = load(path)
    assert_same(est, back)
    if hasattr(est, "transform"):
        ours, theirs = est.transform(new), back.transform(new)
        assert ours.dtype == theirs.dtype
        assert np.array_equal(ours, theirs)
    # A second save of the loaded model writes the same description and arrays.
    save(back, tmp_path / "again.npz")
    with np.load(path) as one, np.load(tmp_path / "again.npz") as two:
        assert sorted(one.files) == sorted(two.files)
        for member in one.files:
            assert np.array_equal(one[member], two[member]), member


def test_sculpting_add_samples_after_load_matches(fitted, tmp_path):
    # add_samples reads private state (the training data); a loaded model must
    # continue exactly as the original does.
    est = fitted["sculpting"][0]
    save(est, tmp_path / "m.npz")
    original, back = copy.deepcopy(est), load(tmp_path / "m.npz")
    original.add_samples(X_NEW[:5])
    back.add_samples(X_NEW[:5])
    assert_same(original, back)


def test_fitted_landmark_estimator_inside_lll_is_kept(fitted, tmp_path):
    est = fitted["lll-fitted-landmarks-float32"][0]
    save(est, tmp_path / "m.npz")
    inner = load(tmp_path / "m.npz").landmarks
    assert type(inner) is KMeansLandmarks
    np.testing.assert_array_equal(inner.landmarks_, est.landmarks.landmarks_)


def test_every_public_estimator_is_registered_and_tested():
    public = {name for name in landmarking.__all__
              if inspect.isclass(getattr(landmarking, name))
              and issubclass(getattr(landmarking, name), BaseEstimator)}
    assert public <= set(ESTIMATORS)
    assert public <= {type(est).__name__ for _, est, _, _ in CASES}


def test_nested_nearest_neighbors_is_refitted(tmp_path):
    est = RandomLandmarks(n_landmarks=3, random_state=0).fit(X)
    est.finder_ = NearestNeighbors(n_neighbors=4, algorithm="kd_tree").fit(X)
    save(est, tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    assert_same(est, back)
    np.testing.assert_array_equal(back.finder_.kneighbors(X_NEW)[1],
                                  est.finder_.kneighbors(X_NEW)[1])


def test_values_of_every_kind_round_trip(tmp_path):
    est = RandomLandmarks(n_landmarks=3, random_state=0).fit(X)
    est.feature_names_in_ = np.array(["a", "b", "c"], dtype=object)
    est.extra_ = {"nan": float("nan"), "inf": -math.inf, "big": 2**70, "none": None,
                  "tuple": (1, "x", np.int32(7)), "list": [np.float32(0.5), True],
                  "nested": {"csc": scipy.sparse.csc_matrix(np.eye(3)),
                             "csr_array": scipy.sparse.csr_array(np.eye(2)),
                             "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
                             "words": np.array(["α", "beta"]), "empty": np.zeros((0, 2))}}
    save(est, tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    assert_same(est, back)


# --------------------------------------------------------------------- saving errors


def test_saving_an_unfitted_estimator_raises():
    with pytest.raises(NotFittedError, match=r"This GPLandmarks is not fitted yet.*call fit"):
        save(GPLandmarks(), "never-written.npz")
    assert not os.path.exists("never-written.npz")


def test_saving_what_the_format_cannot_hold_names_the_attribute(tmp_path):
    est = RandomLandmarks(n_landmarks=3, random_state=0).fit(X)
    est.index_ = object()
    with pytest.raises(TypeError, match=r"RandomLandmarks\.index_ is a builtins\.object, which "
                                        r"a model file cannot store without pickle"):
        save(est, tmp_path / "m.npz")
    del est.index_
    est.mixed_ = np.array([1, "a"], dtype=object)
    with pytest.raises(TypeError, match=r"RandomLandmarks\.mixed_ is an object array"):
        save(est, tmp_path / "m.npz")
    del est.mixed_
    est.coo_ = scipy.sparse.coo_matrix(np.eye(2))
    with pytest.raises(TypeError, match=r"RandomLandmarks\.coo_ is a sparse matrix in COO "
                                        r"format.*\.tocsr\(\)"):
        save(est, tmp_path / "m.npz")
    del est.coo_
    est.table_ = {1: 2.0}
    with pytest.raises(TypeError, match=r"RandomLandmarks\.table_ is a dict with a key 1"):
        save(est, tmp_path / "m.npz")
    assert list(tmp_path.iterdir()) == []


def test_saving_a_callable_parameter_says_to_pass_a_name(tmp_path):
    est = ManifoldSculpting(n_neighbors=8, min_iter=2, max_iter=3, patience=1,
                            metric=lambda a, b: np.abs(a - b).sum(), random_state=0).fit(X)
    with pytest.raises(TypeError, match=r"ManifoldSculpting\.metric is a function.*pass it by "
                                        r"name"):
        save(est, tmp_path / "m.npz")


def test_saving_a_foreign_estimator_or_a_subclass_is_refused(tmp_path):
    from sklearn.manifold import Isomap

    lll = LocallyLinearLandmarks(n_landmarks=20, n_neighbors=8, random_state=0).fit(X)
    lll.set_params(landmarks=Isomap())
    with pytest.raises(TypeError, match=r"LocallyLinearLandmarks\.landmarks is a "
                                        r"sklearn\.manifold\._isomap\.Isomap, which a model "
                                        r"file cannot name"):
        save(lll, tmp_path / "m.npz")

    class MyLandmarks(RandomLandmarks):
        pass

    with pytest.raises(TypeError, match=r"not a .*MyLandmarks.*subclasses are not stored"):
        save(MyLandmarks(n_landmarks=2).fit(X), tmp_path / "m.npz")
    with pytest.raises(TypeError, match=r"landmarking\.save stores the library's estimators"):
        save(NearestNeighbors().fit(X), tmp_path / "m.npz")


def test_transient_attributes_are_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(RandomLandmarks, "_persistence_transient", ("index_",), raising=False)
    est = RandomLandmarks(n_landmarks=3, random_state=0).fit(X)
    est.index_ = object()
    save(est, tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    assert not hasattr(back, "index_")
    np.testing.assert_array_equal(back.landmarks_, est.landmarks_)


# --------------------------------------------------------------------- files


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_file_mode_honours_the_umask(tmp_path, umask, mode):
    est = RandomLandmarks(n_landmarks=3, random_state=0).fit(X)
    old = os.umask(umask)
    try:
        save(est, tmp_path / "m.npz")
    finally:
        os.umask(old)
    assert (tmp_path / "m.npz").stat().st_mode & 0o777 == mode


def test_save_replaces_atomically_and_leaves_no_temporary_file(tmp_path):
    est = RandomLandmarks(n_landmarks=3, random_state=0).fit(X)
    target = tmp_path / "m.npz"
    target.write_bytes(b"old")
    save(est, target)
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]
    assert load(target).n_landmarks == 3
    # A save that fails keeps the file that was there.
    before = target.read_bytes()
    est.bad_ = object()
    with pytest.raises(TypeError, match=r"RandomLandmarks\.bad_ is a builtins\.object, which "
                                        r"a model file cannot store without pickle"):
        save(est, target)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]
    with pytest.raises(FileNotFoundError, match=r"the folder .*missing does not exist"):
        save(RandomLandmarks(n_landmarks=3).fit(X), tmp_path / "missing" / "m.npz")


def test_format_is_a_plain_npz_with_a_json_description(tmp_path):
    est = LocallyLinearLandmarks(n_landmarks=20, n_neighbors=8, random_state=0).fit(X)
    save(est, tmp_path / "m.npz")
    with zipfile.ZipFile(tmp_path / "m.npz") as archive:
        assert all(name.endswith(".npy") for name in archive.namelist())
    with np.load(tmp_path / "m.npz", allow_pickle=False) as content:
        header = json.loads(content[HEADER].tobytes())
        np.testing.assert_array_equal(content["estimator/state/landmarks_"], est.landmarks_)
    assert header["format"] == "landmarking-model"
    assert header["format_version"] == list(FORMAT_VERSION)
    assert header["library_version"] == landmarking.__version__
    tree = header["estimator"]
    assert tree["class"] == "LocallyLinearLandmarks" and tree["params"]["n_landmarks"] == 20
    assert tree["state"]["weights_"]["kind"] == "sparse"
    assert tree["state"]["timings_"]["kind"] == "dict"
    assert set(header["arrays"]) == set(content.files) - {HEADER}


# --------------------------------------------------------------------- loading errors


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "model.npz"
    save(RandomLandmarks(n_landmarks=3, random_state=0).fit(X), path)
    return path


def rewrite(path, *, edit=None, drop=(), replace=None):
    """Rewrite a model file: edit its JSON, drop members, replace member bytes."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    if edit is not None:
        raw = np.load(io.BytesIO(members[HEADER + ".npy"]))
        header = json.loads(raw.tobytes())
        edit(header)
        buffer = io.BytesIO()
        np.save(buffer, np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
        members[HEADER + ".npy"] = buffer.getvalue()
    for name in drop:
        del members[name + ".npy"]
    for name, data in (replace or {}).items():
        members[name + ".npy"] = data
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def edit(header):
        node = header
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
    return edit


def test_newer_minor_version_with_unknown_fields_still_loads(model_file):
    def edit(header):
        header["format_version"] = [FORMAT_VERSION[0], FORMAT_VERSION[1] + 3]
        header["written_on"] = "a field a later minor version added"
    rewrite(model_file, edit=edit)
    assert load(model_file).n_landmarks == 3


def test_older_file_without_a_newer_parameter_loads_with_its_default(model_file):
    def edit(header):
        header["library_version"] = "0.0.1"
        del header["estimator"]["params"]["kernel_width"]
    rewrite(model_file, edit=edit)
    back = load(model_file)
    assert back.kernel_width == RandomLandmarks().kernel_width and back.n_landmarks == 3


@pytest.mark.parametrize("edit, drop, message", [
    (_set("format_version", [FORMAT_VERSION[0] + 1, 0]), (),
     r"model\.npz: written by landmarking .* in model format 2\.0, newer than the format 1\.x "
     r"this landmarking .* reads; upgrade landmarking"),
    (_set("library_version", "99.0.0"), (),
     r"model\.npz: written by landmarking 99\.0\.0, a newer major version .*; upgrade landmarking"),
    (None, ("estimator/state/landmarks_",),
     r"model\.npz: the model's arrays 'estimator/state/landmarks_' are missing from the file"),
    (_set("estimator", "class", "TotallyNewLandmarks"), (),
     r"model\.npz: estimator names the estimator class 'TotallyNewLandmarks', which this "
     r"landmarking does not know .*upgrade landmarking, or refit"),
    (_set("estimator", "params", "shiny", 1), (),
     r"model\.npz: estimator: RandomLandmarks of this landmarking has no parameter 'shiny'"),
    (_set("estimator", "state", "landmarks_", "kind", "tensor"), (),
     r"model\.npz: estimator\.landmarks_ is a value of kind 'tensor', which this landmarking "
     r"cannot read"),
    (_set("estimator", "state", "landmarks_", "kind", "__class__"), (),
     r"model\.npz: estimator\.landmarks_ is a value of kind '__class__', which this landmarking "
     r"cannot read"),
    (_set("estimator", "params", "n_landmarks", {"kind": "list", "items": 3}), (),
     r"model\.npz: estimator\.n_landmarks: the list entry cannot be rebuilt .*damaged"),
    (_set("estimator", "state", "landmarks_", "array", "__landmarking_model__"), (),
     r"model\.npz: an entry refers to the array '__landmarking_model__', which the file does "
     r"not list among its arrays"),
    (_set("format", "something-else"), (),
     r"model\.npz: not a landmarking model file \(format 'something-else'\)"),
    (_set("format_version", "one"), (), r"model\.npz: has no valid format version"),
], ids=["newer-format-major", "newer-library-major", "missing-array", "unknown-class",
        "unknown-parameter", "unknown-kind", "method-name-as-kind", "malformed-list",
        "header-as-array", "other-format", "bad-version"])
def test_bad_model_files_raise_clear_errors(model_file, edit, drop, message):
    rewrite(model_file, edit=edit, drop=drop)
    with pytest.raises(ModelFileError, match=message):
        load(model_file)


def test_unknown_result_class_is_refused_naming_the_fix(tmp_path):
    path = tmp_path / "model.npz"
    landmarking.save(LocallyLinearLandmarks(n_landmarks=30, n_neighbors=8, refine=True,
                                            random_state=0).fit(X), path)
    rewrite(path, edit=_set("estimator", "state", "refine_result_", "class", "os.system"))
    with pytest.raises(ModelFileError, match=r"model\.npz: estimator\.refine_result_ names the "
                                             r"result class 'os\.system', which this landmarking "
                                             r"does not know .*upgrade landmarking, or refit"):
        load(path)


def test_pickled_object_array_is_refused(model_file):
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"evil": 1}, None], dtype=object), allow_pickle=True)
    rewrite(model_file, replace={"estimator/state/landmarks_": buffer.getvalue()})
    with pytest.raises(ModelFileError, match=r"model\.npz: the array 'estimator/state/landmarks_' "
                                             r"holds pickled Python objects.*will not load"):
        load(model_file)


def test_truncated_and_damaged_files_are_refused(model_file, tmp_path):
    data = model_file.read_bytes()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match=r"truncated\.npz: truncated or damaged archive"):
        load(truncated)
    damaged = tmp_path / "damaged.npz"
    # Flip bytes inside the landmarks' data (the CRC check catches it).
    with zipfile.ZipFile(model_file) as archive:
        info = archive.getinfo("estimator/state/landmarks_.npy")
    at = info.header_offset + 30 + len(info.filename) + info.file_size - 8
    damaged.write_bytes(data[:at] + bytes(b ^ 0xFF for b in data[at:at + 4]) + data[at + 4:])
    with pytest.raises(ModelFileError, match=r"damaged\.npz: .*damaged.*save the model again"):
        load(damaged)


def test_member_that_is_not_an_npy_file_is_refused(model_file):
    with zipfile.ZipFile(model_file, "a") as archive:
        archive.writestr("notes.txt", b"hello")
    def edit(header):
        header["estimator"]["state"]["landmarks_"]["array"] = "notes.txt"
        header["arrays"].append("notes.txt")
    rewrite(model_file, edit=edit)
    with pytest.raises(ModelFileError, match=r"model\.npz: the member 'notes\.txt' is not an "
                                             r"array; the file is damaged"):
        load(model_file)


def test_other_files_are_not_models(tmp_path):
    np.savez(tmp_path / "plain.npz", X=X)
    with pytest.raises(ModelFileError, match=r"plain\.npz: not a landmarking model file "
                                             r"\(it holds: X\)"):
        load(tmp_path / "plain.npz")
    (tmp_path / "text.npz").write_text("keep me")
    with pytest.raises(ModelFileError, match=r"text\.npz: not a landmarking model file "
                                             r"\(not an \.npz archive\)"):
        load(tmp_path / "text.npz")
    np.savez(tmp_path / "old.npz", landmarks=X[:5], landmark_embedding=X[:5, :2],
             n_landmark_neighbors=np.asarray(3))
    with pytest.raises(ModelFileError, match=r"old\.npz: an LLL model of landmarking 0\.1's "
                                             r"`embed --model`.*`landmarking transform --model` "
                                             r"still reads it"):
        load(tmp_path / "old.npz")
    with pytest.raises(FileNotFoundError, match=r"no such model file"):
        load(tmp_path / "absent.npz")


BEFORE_LAYOUT = Path(__file__).resolve().parent / "data" / "before_layout"


@pytest.mark.parametrize("name", ["lll", "sculpting"])
def test_a_model_saved_before_the_packages_were_laid_out_alike_loads(name):
    # Written by tests/data/before_layout/make_models.py with the code in which
    # LLL's NumPy path was lll/lll.py and its refinement lll/refined.py: a model
    # file names classes, never modules, so it loads after the renames and maps
    # new points as it did then.
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_models", BEFORE_LAYOUT / "make_models.py")
    make_models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_models)
    _, X_new = make_models.data()
    model = load(BEFORE_LAYOUT / f"{name}_model.npz")
    expected = np.load(BEFORE_LAYOUT / "transforms.npz")[name]
    if name == "lll":
        np.testing.assert_allclose(model.transform(X_new), expected, rtol=0,
                                   atol=1e-12 * np.abs(expected).max())
        return
    # Sculpting places the points by a hill climb that stops at max_iter_, and
    # rounding (another BLAS kernel under the neighbour search and the LLE start, a
    # product summed in another order) flips some of its comparisons, so the
    # placement is reproducible only to the climb's own resolution. Its stopping
    # rule counts an error that has not improved for `patience` iterations as
    # converged: a point is placed to within the distance it still travels in the
    # last `patience` iterations; and where it no longer travels, to what one visit
    # can change: at most _MAX_CLIMB_STEPS rounds of one step of the final eta in
    # each of the t dimensions.
    import copy

    import landmarking.sculpting._incremental as incremental
    from landmarking.sculpting._loop import _MAX_CLIMB_STEPS

    new = X_new[:20]
    sculpt, final_eta = incremental.sculpt, []

    def recording(*args, **kwargs):
        out = sculpt(*args, **kwargs)
        final_eta.append(out[2])
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(incremental, "sculpt", recording)
        placed = model.transform(new)
    earlier = copy.deepcopy(model)
    earlier.max_iter_ -= model._schedule().patience
    travel = np.linalg.norm(placed - earlier.transform(new), axis=1)
    resolution = np.sqrt(placed.shape[1]) * _MAX_CLIMB_STEPS * final_eta[0]
    assert np.all(np.linalg.norm(placed - expected, axis=1) <= travel + resolution)


BEFORE_NAMES = Path(__file__).resolve().parent / "data" / "before_names"


@pytest.mark.parametrize("name", ["gp", "lll"])
def test_a_model_saved_before_the_modules_were_renamed_loads(name):
    # Written by tests/data/before_names/make_renamed_models.py with the code in
    # which the CPU backends were gp/_numpy.py and lll/_numpy.py, GP's function
    # gp/learn.py, the refinements gp/refine.py, lll/refine.py and
    # spectral/refine.py (whose RefineResult the refined LLL model holds): a model
    # file names classes, never modules, so it loads after the renames and maps new
    # points as it did then.
    import importlib.util

    from landmarking.spectral.refine_eigenvectors import RefineResult

    spec = importlib.util.spec_from_file_location(
        "make_models_before_names", BEFORE_NAMES / "make_renamed_models.py")
    make_models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_models)
    _, X_new = make_models.data()
    model = load(BEFORE_NAMES / f"{name}_model.npz")
    expected = np.load(BEFORE_NAMES / "transforms.npz")[name]
    if name == "lll":
        assert isinstance(model, LocallyLinearLandmarks)
        assert isinstance(model.refine_result_, RefineResult)
    else:
        assert isinstance(model, GPLandmarks) and model.refine == 1
    # The same arithmetic on the same stored landmarks: on the machine that wrote the
    # file the values are equal bit for bit; another BLAS may sum the squared
    # distances (GP) or the weights' products (LLL) in another order, a rounding
    # error of a few ulps of the largest value, far below this bound.
    np.testing.assert_allclose(model.transform(X_new), expected, rtol=0,
                               atol=1e-12 * np.abs(expected).max())
