"""Bad input as users meet it: one matrix of API calls and one of command lines.

Every API case asserts the exception type and a ``match=`` on the words a user
needs to fix the call; every command-line case asserts exit status 2, one line on
stderr and the words of the fix. The input kinds beyond plain arrays (read-only
arrays and memory maps, float16, big-endian and Fortran-ordered arrays, pandas
DataFrames, lists, sparse matrices with explicit NaN) each give a result equal to
the plain array's, or a clear error; ``fit`` never writes to the caller's data;
``transform`` from 8 threads at once equals serial calls.

Dask and Zarr inputs are checked with the module that reads them (``_blocks.py``).
"""

import re
import tempfile
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

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
    cli,
)

try:
    import pandas as pd
except ImportError:  # pragma: no cover - pandas is optional
    pd = None

needs_pandas = pytest.mark.skipif(pd is None, reason="pandas is not installed")


def _data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return np.abs(rng.normal(size=(n, d))) + 0.1


X = _data()


def _graph(n=60):
    W = sp.random(n, n, density=0.1, random_state=0)
    return (W + W.T).tocsr()


def _with_nan(W):
    W = W.copy()
    W.data[0] = np.nan
    return W


_FILES = tempfile.TemporaryDirectory(prefix="landmarking-bad-input-")  # removed at exit


def _nan_in_one_block():
    """3,000 rows of ones with one NaN in row 2345 (the third of three 1,000-row blocks)."""
    X = np.ones((3000, 4))
    X[2345, 1] = np.nan
    return X


def _memmap_with_nan():
    path = Path(_FILES.name) / "nan.npy"
    if not path.exists():
        np.save(path, _nan_in_one_block())
    return np.load(path, mmap_mode="r")


def _gp(**params):
    return GPLandmarks(**{"n_landmarks": 2, "n_steps": 5, "random_state": 0, **params})


# ------------------------------------------------------------------ the API matrix
#
# (id, call, exception type, words the message must contain)

API_CASES = [
    # the data
    ("nan", lambda: _gp().fit(np.where(X > 2, np.nan, X)), ValueError, "contains NaN"),
    ("inf", lambda: _gp().fit(np.where(X > 2, np.inf, X)), ValueError, "contains infinity"),
    ("empty", lambda: _gp().fit(np.zeros((0, 3))), ValueError, r"0 sample\(s\)"),
    ("no columns", lambda: _gp().fit(np.zeros((5, 0))), ValueError, r"0 feature\(s\)"),
    ("1-D", lambda: _gp().fit(X[:, 0]), ValueError, "Expected 2D array, got 1D array"),
    ("3-D", lambda: _gp().fit(X.reshape(60, 3, 1)), ValueError, "dim 3"),
    ("complex", lambda: _gp().fit(X + 1j), ValueError, "Complex data not supported"),
    ("strings", lambda: _gp().fit(np.array([["a", "b"], ["c", "d"]])), ValueError,
     "could not convert string to float"),
    ("ragged list", lambda: _gp().fit([[1.0, 2.0], [3.0]]), ValueError, "inhomogeneous"),
    ("None", lambda: _gp().fit(None), ValueError, "Expected 2D array"),
    ("scalar", lambda: _gp().fit(3.0), ValueError, "Expected 2D array, got scalar"),
    ("object with None", lambda: _gp().fit(np.array([[1, None], [2, 3]], dtype=object)),
     ValueError, "contains NaN"),
    ("float16 overflow", lambda: _gp().fit(np.full((5, 2), 7e4).astype(np.float16)), ValueError,
     "infinity"),
    ("one row", lambda: _gp(n_landmarks=1).fit(X[:1]), ValueError, "needs at least 2 samples"),
    ("sparse to a dense method", lambda: ManifoldSculpting().fit(sp.csr_matrix(X)),
     TypeError, r"dense data is required. Use '\.toarray\(\)'"),
    ("sparse with NaN", lambda: NMFLandmarks(n_landmarks=2).fit(_with_nan(sp.csr_matrix(X))),
     ValueError, "contains NaN"),
    ("sphere, negative data", lambda: _gp(space="sphere").fit(X - 1), ValueError,
     "needs nonnegative data.*use space='euclidean'"),
    ("sphere, zero row", lambda: _gp(space="sphere").fit(np.vstack([X, np.zeros((1, 3))])),
     ValueError, "rows are all zero .*drop the empty rows"),
    ("NMF, negative data", lambda: NMFLandmarks(n_landmarks=2).fit(X - 1), ValueError,
     "NMF needs nonnegative data"),
    ("sparse with NaN, GP", lambda: _gp().fit(_with_nan(sp.csr_matrix(X))), ValueError,
     "Input X contains NaN"),
    ("memory map, NaN in one block", lambda: _gp().fit(_memmap_with_nan()), ValueError,
     r"NaN or infinity at row 2345 \(in the block of rows \d+-2999\); remove or impute"),
    ("memory map, NaN in one block, LLL", lambda: LocallyLinearLandmarks().fit(
        _memmap_with_nan()), ValueError, r"NaN or infinity at row 2345 .*remove or impute"),
    # the parameters
    ("n_landmarks 0", lambda: _gp(n_landmarks=0).fit(X), ValueError, "n_landmarks must be >= 1"),
    ("n_landmarks fractional", lambda: _gp(n_landmarks=2.5).fit(X), TypeError,
     "n_landmarks must be an integer, got 2.5"),
    ("n_landmarks > rows", lambda: RandomLandmarks(n_landmarks=100).fit(X), ValueError,
     "n_landmarks=100 needs at least 100 samples"),
    ("n_steps fractional", lambda: _gp(n_steps=1.5).fit(X), TypeError,
     "n_steps must be an integer"),
    ("batch_size 0", lambda: _gp(batch_size=0).fit(X), ValueError, "batch_size must be >= 1"),
    ("space unknown", lambda: _gp(space="torus").fit(X), ValueError,
     "space must be one of 'euclidean', 'nonnegative', 'sphere'; got 'torus'"),
    ("tau out of range", lambda: _gp(tau=2).fit(X), ValueError, r"tau must lie in \(0, 1\]"),
    ("kernel_width negative", lambda: _gp(kernel_width=-1).fit(X), ValueError,
     "kernel_width must be > 0.*pass a positive width"),
    ("kernel_width word", lambda: _gp(kernel_width="wide").fit(X), ValueError,
     "'auto' or 'variance'; got 'wide'"),
    ("random_state word", lambda: _gp(random_state="x").fit(X), ValueError,
     "cannot be used to seed"),
    ("init shape", lambda: _gp(init=np.zeros((1, 3))).fit(X), ValueError,
     r"init must be .* shape \(n_landmarks, n_features\) = \(2, 3\); got shape \(1, 3\)"),
    ("previous_landmarks shape", lambda: _gp().fit(X, previous_landmarks=np.zeros((1, 2))),
     ValueError, r"previous_landmarks must have shape \(k, 3\), got \(1, 2\)"),
    ("previous_landmarks NaN",
     lambda: _gp().fit(X, previous_landmarks=np.full((1, 3), np.nan)), ValueError,
     "previous_landmarks contain NaN or infinity; pass the finite landmarks"),
    ("init word", lambda: _gp(init="kmeans").fit(X), ValueError,
     "init must be 'auto', 'gaussian', 'uniform' or an array of starting points, got 'kmeans'"),
    ("checkpoint type", lambda: _gp().fit(X, checkpoint=3), TypeError,
     "checkpoint must be a file path or a callable"),
    ("checkpoint extension", lambda: _gp().fit(X, checkpoint="run.txt"), ValueError,
     "must name an .npz file"),
    ("checkpoint folder", lambda: _gp().fit(X, checkpoint="/no/such/folder/run.npz"), ValueError,
     "does not exist; create it first"),
    ("extend by 0", lambda: _gp().fit(X).extend(X, 0), ValueError, "n_more must be >= 1"),
    ("subsample < n_landmarks", lambda: ActiveLearningLandmarks(n_landmarks=5, subsample=2).fit(X),
     ValueError, "pass a larger subsample"),
    ("n_init 0", lambda: KMeansLandmarks(n_init=0).fit(X), ValueError, "n_init must be >= 1"),
    ("LLL n_landmarks > rows", lambda: LocallyLinearLandmarks(n_landmarks=100).fit(X), ValueError,
     "n_landmarks=100 exceeds the 60 samples"),
    ("LE n_components 0", lambda: LaplacianEigenmaps(n_components=0).fit(X), ValueError,
     "n_components must be >= 1"),
    ("sculpting n_neighbors > rows", lambda: ManifoldSculpting(n_neighbors=100).fit(X), ValueError,
     r"n_neighbors=100 must be smaller than the number of samples \(60\)"),
    ("sculpting scale_rate", lambda: ManifoldSculpting(scale_rate=1.5).fit(X), ValueError,
     "scale_rate must lie strictly between 0.0 and 1.0"),
    ("sculpting clamp index", lambda: ManifoldSculpting().fit(
        X, clamp_indices=[100], clamp_values=[[0, 0]]), ValueError,
     r"clamp_indices must lie in \[0, 60\)"),
    ("sculpting self-neighbours", lambda: ManifoldSculpting().fit(
        X, neighbors=np.zeros((60, 3), int)), ValueError,
     "must not list a point as its own neighbour"),
    # affinities
    ("affinity shape", lambda: LaplacianEigenmaps().fit(X, affinity=_graph()[:50, :50]), ValueError,
     "affinity is 50 x 50 but X has 60 rows"),
    ("affinity negative", lambda: LaplacianEigenmaps().fit(X, affinity=-_graph()), ValueError,
     "finite, nonnegative entries"),
    ("affinity asymmetric", lambda: LaplacianEigenmaps().fit(X, affinity=sp.triu(_graph()).tocsr()),
     ValueError, r"must be symmetric; symmetrise it first, e\.g\. W\.maximum\(W\.T\)"),
    ("affinity NaN", lambda: LaplacianEigenmaps().fit(X, affinity=_with_nan(_graph())), ValueError,
     "finite, nonnegative entries"),
    ("affinity dense", lambda: LaplacianEigenmaps().fit(X, affinity=_graph().toarray()), TypeError,
     r"convert it with scipy\.sparse\.csr_matrix\(W\)"),
    # fitted state
    ("transform unfitted", lambda: GPLandmarks().transform(X), NotFittedError, "not fitted yet"),
    ("LLL transform unfitted", lambda: LocallyLinearLandmarks().transform(X), NotFittedError,
     "not fitted yet"),
    ("extend unfitted", lambda: _gp().extend(X, 2), NotFittedError, "not fitted yet"),
    ("transform wrong columns", lambda: _gp().fit(X).transform(X[:, :2]), ValueError,
     "X has 2 features, but GPLandmarks is expecting 3"),
    ("LLL transform wrong columns", lambda: LocallyLinearLandmarks(
        n_landmarks=20, random_state=0).fit(X).transform(X[:, :2]), ValueError,
     "X has 2 features"),
]


def _pandas_cases():
    if pd is None:
        return []
    return [
        ("DataFrame with a text column", lambda: _gp().fit(
            pd.DataFrame({"a": [1.0, 2, 3], "b": ["x", "y", "z"]})), ValueError,
         "could not convert string to float: 'x'"),
        ("DataFrame with pd.NA", lambda: _gp().fit(pd.DataFrame(
            {"a": pd.array([1.0, None, 3.0], dtype="Float64"), "b": [1.0, 2, 3]})), ValueError,
         "contains NaN"),
        ("DataFrame, other column names", lambda: _gp().fit(
            pd.DataFrame(X, columns=list("abc"))).transform(pd.DataFrame(X, columns=list("xyz"))),
         ValueError, "feature names should match those that were passed during fit"),
    ]


def _dask_cases():
    try:
        import dask.array as da
    except ImportError:  # pragma: no cover - dask is optional (the scale extra)
        return []
    return [
        ("Dask array, NaN in one chunk", lambda: _gp().fit(
            da.from_array(_nan_in_one_block(), chunks=(1000, 4))), ValueError,
         r"NaN or infinity at row 2345 \(in the block of rows 2000-2999\)"),
        ("Dask array, NaN in one chunk, LLL", lambda: LocallyLinearLandmarks().fit(
            da.from_array(_nan_in_one_block(), chunks=(1000, 4))), ValueError,
         r"NaN or infinity at row 2345 \(in the block of rows 2000-2999\)"),
    ]


ALL_API_CASES = API_CASES + _pandas_cases() + _dask_cases()


def test_the_matrix_is_as_large_as_promised():
    assert len(API_CASES) >= 45
    assert len(CLI_CASES) >= 18


@pytest.mark.parametrize("call, error, words", [c[1:] for c in ALL_API_CASES],
                         ids=[c[0] for c in ALL_API_CASES])
def test_bad_api_input_names_the_problem(call, error, words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=words):
            call()


# ------------------------------------------------------------------ input kinds


def _read_only(array):
    array = np.array(array)
    array.flags.writeable = False
    return array


def _read_only_sparse(array):
    matrix = sp.csr_matrix(array)
    for part in (matrix.data, matrix.indices, matrix.indptr):
        part.flags.writeable = False
    return matrix


@pytest.fixture(scope="module")
def memmap_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("kinds") / "x.npy"
    np.save(path, X)
    return path


def _kinds(memmap_file):
    """Every dense kind of the same values, and what the estimator should treat it as."""
    kinds = {
        "read-only ndarray": (_read_only(X), X),
        "read-only memory map": (np.load(memmap_file, mmap_mode="r"), X),
        "float16": (X.astype(np.float16), X.astype(np.float16).astype(np.float64)),
        "big-endian": (X.astype(">f8"), X),
        "Fortran order": (np.asfortranarray(X), X),
        "list of lists": (X.tolist(), X),
    }
    if pd is not None:
        kinds["pandas DataFrame"] = (pd.DataFrame(X, columns=["a", "b", "c"]), X)
    return kinds


ESTIMATORS = {
    "GPLandmarks": lambda: GPLandmarks(n_landmarks=3, n_steps=20, random_state=0),
    "RandomLandmarks": lambda: RandomLandmarks(n_landmarks=3, random_state=0),
    "ActiveLearningLandmarks": lambda: ActiveLearningLandmarks(n_landmarks=3, random_state=0),
    "RPCholeskyLandmarks": lambda: RPCholeskyLandmarks(n_landmarks=3, random_state=0),
    "KMeansLandmarks": lambda: KMeansLandmarks(n_landmarks=3, random_state=0),
    "NMFLandmarks": lambda: NMFLandmarks(n_landmarks=3, random_state=0, max_iter=50),
    "LocallyLinearLandmarks": lambda: LocallyLinearLandmarks(n_landmarks=20, random_state=0),
    "LaplacianEigenmaps": lambda: LaplacianEigenmaps(random_state=0),
    "ManifoldSculpting": lambda: ManifoldSculpting(n_neighbors=8, min_iter=2, max_iter=5,
                                                   random_state=0),
}


def _result(model, data):
    if hasattr(model, "embedding_"):
        return np.asarray(model.embedding_)
    return np.asarray(model.transform(data))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_input_kind_gives_the_plain_array_result_and_is_never_written(name, memmap_file):
    """Read-only inputs of every kind: a write would raise, so success proves none."""
    make = ESTIMATORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = {}
        for kind, (data, plain) in _kinds(memmap_file).items():
            key = plain.tobytes()
            if key not in reference:
                reference[key] = _result(make().fit(plain), plain)
            before = np.array(data, dtype=np.float64, copy=True)
            model = make().fit(data)
            np.testing.assert_allclose(_result(model, data), reference[key], rtol=1e-6, atol=1e-9,
                                       err_msg=f"{name} on a {kind}")
            np.testing.assert_array_equal(np.asarray(data, dtype=np.float64), before)
            if kind == "pandas DataFrame":
                assert list(model.feature_names_in_) == ["a", "b", "c"]


def test_read_only_sparse_input_is_never_written():
    data = _read_only_sparse(X)
    before = data.toarray()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = NMFLandmarks(n_landmarks=3, random_state=0, max_iter=50).fit(data)
        dense = NMFLandmarks(n_landmarks=3, random_state=0, max_iter=50).fit(X)
    np.testing.assert_allclose(model.transform(data), dense.transform(X), rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(data.toarray(), before)


def test_read_only_input_to_fit_keywords_is_never_written():
    """previous_landmarks, init and clamp values are the caller's too."""
    previous = _read_only(GPLandmarks(n_landmarks=2, n_steps=20, random_state=0).fit(X).landmarks_)
    init = _read_only(X[:3])
    longer = GPLandmarks(n_landmarks=3, n_steps=20, random_state=0, init=init).fit(
        _read_only(X), previous_landmarks=previous)
    assert longer.landmarks_.shape == (3, 3)
    clamp = _read_only(np.zeros((2, 2)))
    ManifoldSculpting(n_neighbors=8, min_iter=2, max_iter=5, random_state=0).fit(
        _read_only(X), clamp_indices=_read_only(np.array([0, 1])), clamp_values=clamp)


# ------------------------------------------------------------------ threads


@pytest.mark.parametrize("name", ["GPLandmarks", "KMeansLandmarks", "NMFLandmarks",
                                  "LocallyLinearLandmarks"])
def test_transform_from_8_threads_equals_serial_calls(name):
    data = _data(400, 3, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ESTIMATORS[name]().fit(data)
    pieces = [data[i::8] for i in range(8)]
    serial = [model.transform(p) for p in pieces]
    barrier = threading.Barrier(8)

    def call(piece):
        barrier.wait()  # all eight transform at the same moment
        return model.transform(piece)

    with ThreadPoolExecutor(8) as pool:
        parallel = list(pool.map(call, pieces * 4))
    for k, result in enumerate(parallel):
        np.testing.assert_array_equal(result, serial[k % 8])


# ------------------------------------------------------------------ the command line


def _files(folder):
    (folder / "empty.csv").write_text("")
    (folder / "header.csv").write_text("x,y\n")
    (folder / "binary.csv").write_bytes(bytes(range(256)) * 4)
    np.save(folder / "good.npy", X)
    (folder / "truncated.npy").write_bytes((folder / "good.npy").read_bytes()[:100])
    np.savez(folder / "pickled.npz", X=np.array([{"a": 1}, None], dtype=object))
    np.savez(folder / "pair.npz", X=X, y=np.arange(60))
    (folder / "taken.npz").write_bytes(b"keep me")
    (folder / "images").mkdir()
    (folder / "images" / "readme.txt").write_text("no images here")
    np.save(folder / "f16.npy", X.astype(np.float16))
    np.save(folder / "complex.npy", X + 1j)
    np.save(folder / "strings.npy", np.array([["a", "b"], ["c", "d"]]))
    np.save(folder / "1d.npy", X[:, 0])
    matrix = sp.csr_matrix(X)
    matrix.data[3] = np.nan
    sp.save_npz(folder / "sparse_nan.npz", matrix)
    (folder / "corpus.jsonl").write_text('{"text": "a b"}\n{"body": "c"}\n')
    (folder / "notjson.jsonl").write_text('{"text": "a b"}\nnot json\n')
    np.save(folder / "nan_block.npy", _nan_in_one_block())
    infinite = np.ones((3000, 4))
    infinite[2345, 1] = np.inf
    np.save(folder / "inf_block.npy", infinite)


CLI_CASES = [
    (["landmarks", "empty.csv"], r"empty\.csv: the CSV file has no data rows"),
    (["landmarks", "header.csv"], r"header\.csv: the CSV file has a header but no data rows"),
    (["landmarks", "binary.csv"], r"binary\.csv: line \d+.*(not a number|fields)"),
    (["landmarks", "truncated.npy"],
     r"truncated\.npy: not a valid \.npy file .*save it with np\.save"),
    (["landmarks", "pickled.npz", "--key", "X"], r"pickled\.npz: array 'X' holds Python objects"),
    (["landmarks", "pair.npz", "--key", "Z"],
     r"pair\.npz: has no array named 'Z' \(it holds: X, y\)"),
    (["landmarks", "pair.npz"], r"pair\.npz: holds several arrays \(X, y\); choose one with --key"),
    (["landmarks", "good.npy", "-o", "taken.npz"], r"taken\.npz: already exists; pass --force"),
    (["landmarks", "good.npy", "-o", "nofolder/o.npz"],
     r"the folder nofolder does not exist; create it"),
    (["landmarks", "images"], r"images: the folder holds no \.png or \.pgm images"),
    (["landmarks", "missing.npy"], r"missing\.npy: no such file or folder"),
    (["landmarks", "good.npy", "--continue", "taken.npz"],
     r"taken\.npz: not a readable \.npz file"),
    (["landmarks", "good.npy", "--continue", "good.npy"],
     r"good\.npy: expected the \.npz file written by landmarking"),
    (["landmarks", "complex.npy"], r"complex\.npy: holds complex128 values, not real numbers"),
    (["landmarks", "strings.npy"], r"strings\.npy: holds <U1 values, not real numbers"),
    (["landmarks", "1d.npy"], r"1d\.npy: the data must be a 2-D array .*reshape"),
    (["landmarks", "sparse_nan.npz"],
     r"sparse_nan\.npz: contains NaN or infinite values \(first in row 2\)"),
    (["landmarks", "good.npy", "-n", "100"],
     r"good\.npy: has 60 rows, fewer than the 100 landmarks"),
    (["features", "good.npy", "--landmarks", "pair.npz"], r"pair\.npz: has no 'landmarks' entry"),
    (["transform", "good.npy", "--model", "pair.npz"],
     r"pair\.npz: not a landmarking model file .*give the file written by"),
    (["embed", "good.npy", "--method", "le", "--neighbors", "80"], r"too few for --neighbors 80"),
    (["topics", "corpus.jsonl"], r"corpus\.jsonl: line 2 has no text field 'text' \(found: body\)"),
    (["topics", "notjson.jsonl"], r"notjson\.jsonl: line 2 is not valid JSON"),
    (["topics", "good.npy"], r"a corpus is a folder of \.txt files or a \.jsonl file"),
    # One bad value deep in a large file: the row and column named (1-based, as in a
    # text editor).
    (["landmarks", "nan_block.npy"],
     r"nan_block\.npy: NaN value in row 2346, column 2 \(1 rows affected\); remove or impute"),
    (["landmarks", "inf_block.npy"], r"inf_block\.npy: infinite value in row 2346, column 2"),
    (["embed", "nan_block.npy"], r"nan_block\.npy: NaN value in row 2346, column 2"),
]


def _argv(argv):
    argv = list(argv)
    if argv[0] in ("landmarks", "features", "embed", "transform") and "-o" not in argv:
        argv += ["-o", "o.npz"]
    if argv[0] == "landmarks" and "-n" not in argv:
        argv += ["-n", "2"]
    return argv + ["-q"]


@pytest.mark.parametrize("argv, words", CLI_CASES,
                         ids=[f"{i}-" + " ".join(a[:2]) for i, (a, _) in enumerate(CLI_CASES)])
def test_bad_command_line_exits_2_with_one_line(tmp_path, monkeypatch, capsys, argv, words):
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli.main(_argv(argv)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"landmarking {argv[0]}: error: ")
    assert re.search(words, err[0]), err[0]
    assert (tmp_path / "taken.npz").read_bytes() == b"keep me"
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("name, array", [
    ("f16.npy", X.astype(np.float16)),
    ("big.npy", X.astype(">f8")),
    ("fortran.npy", np.asfortranarray(X)),
])
def test_new_array_kinds_on_the_command_line_give_the_plain_result(tmp_path, monkeypatch, name,
                                                                    array):
    monkeypatch.chdir(tmp_path)
    np.save(name, array)
    np.save("plain.npy", np.asarray(array, dtype=np.float64))
    for source, out in ((name, "a.npz"), ("plain.npy", "b.npz")):
        assert cli.main(["landmarks", source, "-n", "3", "--steps", "20", "-o", out, "-q"]) == 0
    a, b = np.load("a.npz"), np.load("b.npz")
    np.testing.assert_array_equal(a["landmarks"], b["landmarks"])


# ------------------------------------------------------------------ malformed sparse input
#
# The compiled loops (and SciPy's own sparse products) trust every index of a
# sparse matrix, and SciPy builds one from (data, indices, indptr) without checking
# the indices' range or that indptr never decreases: without the boundary checks
# these calls killed the interpreter. Each runs first in a child worker (so that a
# regression fails this test instead of killing pytest), and only when the child
# answered with the error, again here under pytest.raises.


def _bad_csr(n_rows, n_cols, where, value=None, seed=0):
    """A CSR matrix built as users build one, with one index or indptr entry bad."""
    A = sp.random(n_rows, n_cols, density=0.3, random_state=seed, format="csr")
    if n_rows == n_cols:
        A = (A + A.T).tocsr()
    indices, indptr = A.indices.copy(), A.indptr.copy()
    if where == "index":
        indices[len(indices) // 2] = value
    else:  # a decreasing indptr: two row ends swapped
        k = next(i for i in range(1, n_rows) if indptr[i + 1] > indptr[i])
        indptr[k], indptr[k + 1] = indptr[k + 1], indptr[k]
    return sp.csr_matrix((A.data.copy(), indices, indptr), shape=A.shape)


_OUT_OF_RANGE = r"has a column index out of range \[0, {n}\): found {found}\. Build it with"
_DECREASING = r"has a decreasing indptr \(indptr\[\d+\] = \d+ > indptr\[\d+\] = \d+\)"

CRASH_CASES = [
    # (id, target, params, args, kwargs, error, words)
    ("LLL affinity, column too large", "LocallyLinearLandmarks",
     {"n_landmarks": 20, "random_state": 0}, (X,),
     {"affinity": _bad_csr(60, 60, "index", 100_060)}, ValueError,
     "affinity " + _OUT_OF_RANGE.format(n=60, found=100060)),
    ("LLL affinity, negative column", "LocallyLinearLandmarks",
     {"n_landmarks": 20, "random_state": 0}, (X,),
     {"affinity": _bad_csr(60, 60, "index", -100_000)}, ValueError,
     "affinity " + _OUT_OF_RANGE.format(n=60, found=-100000)),
    ("LE affinity, column too large", "LaplacianEigenmaps", {"random_state": 0}, (X,),
     {"affinity": _bad_csr(60, 60, "index", 100_060)}, ValueError,
     "affinity " + _OUT_OF_RANGE.format(n=60, found=100060)),
    ("LE affinity, decreasing indptr", "LaplacianEigenmaps", {"random_state": 0}, (X,),
     {"affinity": _bad_csr(60, 60, "indptr")}, ValueError, "affinity " + _DECREASING),
    ("GP, decreasing indptr", "GPLandmarks", {"n_landmarks": 2, "n_steps": 5,
                                              "random_state": 0},
     (_bad_csr(60, 3, "indptr"),), {}, ValueError, "X " + _DECREASING),
    *[(f"{name}, sparse X, column {value}", name,
       {"n_landmarks": 2, "random_state": 0, **({"n_steps": 5} if name == "GPLandmarks" else {})},
       (_bad_csr(60, 3, "index", value),), {}, ValueError,
       "X " + _OUT_OF_RANGE.format(n=3, found=value))
      for name in ("GPLandmarks", "KMeansLandmarks", "RPCholeskyLandmarks")
      for value in (10_000_000, -10_000_000)],
]


@pytest.fixture(scope="module")
def child():
    from test_fuzz_public import Worker

    worker = Worker(timeout=120)
    yield worker
    worker.stop()


@pytest.mark.parametrize("target, params, args, kwargs, error, words",
                         [c[1:] for c in CRASH_CASES], ids=[c[0] for c in CRASH_CASES])
def test_malformed_sparse_input_is_refused_before_any_compiled_code(child, target, params,
                                                                    args, kwargs, error,
                                                                    words):
    import landmarking

    answer = child.run({"target": target, "method": "fit", "params": params, "args": args,
                        "kwargs": kwargs, "note": "", "malformed": True})
    assert answer[0] == "error", f"in a child process: {answer}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=words):
            getattr(landmarking, target)(**params).fit(*args, **kwargs)


@pytest.mark.parametrize("scale, words", [
    (1e200, r"X's entries reach [0-9.]+e\+200 in absolute value, so squared distances .* "
            r"overflow float64; divide X by a scale such as np\.abs\(X\)\.max\(\) first"),
    (1e-200, r"X's entries are at most [0-9.]+e-200 in absolute value, so their squares .* "
             r"underflow float64; divide X by a scale"),
])
def test_gp_on_data_whose_squares_leave_float64_names_the_overflow(scale, words):
    # Not "zero variance": the rows differ; the variance of the kernel width rule
    # overflowed (underflowed). A given width does not help: squared distances
    # between rows of 1e200 are infinite.
    with pytest.raises(ValueError, match=words):
        _gp().fit(X * scale)
    if scale > 1:
        with pytest.raises(ValueError, match=words):
            _gp(kernel_width=1.0).fit(X * scale)


def test_gp_is_scale_equivariant_where_float64_holds_the_squares():
    # 1e150 and 1e-150: the squares (1e300, 1e-300) are still normal float64 numbers,
    # and the landmarks scale with the data. Tolerance: every operation of the fit is
    # scale-equivariant up to rounding, a few ulps per step of 5 steps.
    reference = _gp().fit(X).landmarks_
    for scale in (1e150, 1e-150):
        np.testing.assert_allclose(_gp().fit(X * scale).landmarks_ / scale, reference,
                                   rtol=1e-12)
