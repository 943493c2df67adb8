"""Fuzzing the public API: no input crashes the interpreter or passes silently.

Every public estimator (``fit``, ``fit_transform``, ``transform`` after a fit) and
every public function that takes arrays gets malformed dense and sparse arrays
(indices out of range or negative, a decreasing ``indptr``, wrong lengths, float
indices), odd dtypes (object, complex, bool, float16, int, strings), extreme scales
(1e300, 1e-300), empty and one-row inputs, NaN and infinity, out-of-range
parameters and bad index arguments (clamped points, neighbour lists, landmarks).
The property: each call raises a clear exception (``ValueError`` or ``TypeError``,
scikit-learn's ``NotFittedError`` included, with a message) or returns finite
results; it never kills the interpreter, never hangs, and never accepts a sparse
matrix whose index arrays do not describe its shape.

The compiled loops trust every index, so a regression can kill the process: the
calls run in one long-lived child worker (cases go to it pickled over a pipe, the
answers come back the same way); the parent restarts it when it dies or stops
answering, and the case that did it is reported. RuntimeWarnings from landmarking
are errors in the child, as in the test suite.

``LANDMARKING_FUZZ_EXAMPLES`` sets the number of examples (default 1,500: about
20 s on two cores, most cases being refused at once); ``benchmarks/fuzz_public.py``
runs a larger budget and prints the tally.
"""

from __future__ import annotations

import concurrent.futures
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: Examples per run of the test; LANDMARKING_FUZZ_EXAMPLES raises it.
DEFAULT_EXAMPLES = 1500
#: Seconds a case may take before the worker is called hung (the cases are tiny:
#: each takes well under a second when nothing is wrong).
CASE_TIMEOUT = 60.0


# ------------------------------------------------------------------ the worker (child)


def _finite(value):
    """Whether every number in a result (an array, a sparse matrix, a tuple, a
    dict's values, an estimator's fitted arrays) is finite."""
    if sp.issparse(value):
        return bool(np.all(np.isfinite(value.data)))
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or bool(np.all(np.isfinite(value)))
    if isinstance(value, (float, np.floating)):
        return bool(np.isfinite(value))
    if isinstance(value, (tuple, list)):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if hasattr(value, "get_params"):  # a fitted estimator: its arrays
        return all(_finite(v) for k, v in vars(value).items()
                   if k.endswith("_") and not k.startswith("_")
                   and isinstance(v, (np.ndarray, float, np.floating)))
    return True


def _run_case(case):
    """Run one case; the answer is ("ok", finite) or ("error", type, message, clear)."""
    import warnings

    import landmarking

    target, params = case["target"], case["params"]
    args, kwargs = case.get("args", ()), case.get("kwargs", {})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.filterwarnings("error", category=RuntimeWarning, module="landmarking")
            obj = getattr(landmarking, target, None)
            if isinstance(obj, type):
                est = obj(**params)
                method = case["method"]
                if method == "fit":
                    result = est.fit(*args, **kwargs)
                elif method == "fit_transform":
                    result = est.fit_transform(*args, **kwargs)
                else:  # fit on good data, transform the case's data
                    result = est.fit(case["fit_data"]).transform(*args)
            elif target == "_crash":  # the harness's own test
                import ctypes
                ctypes.string_at(0)
            elif target == "_hang":
                time.sleep(3600)
            else:
                result = obj(*args, **{**params, **kwargs})
    except Exception as exc:  # noqa: BLE001 - classified and reported to the parent
        clear = isinstance(exc, (ValueError, TypeError)) and bool(str(exc).strip())
        return ("error", type(exc).__name__, str(exc)[:500], clear)
    return ("ok", _finite(result))


def _read_message(stream):
    header = stream.read(8)
    if len(header) < 8:
        return None
    (size,) = struct.unpack("<Q", header)
    return pickle.loads(stream.read(size))


def _write_message(stream, message):
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(payload)) + payload)
    stream.flush()


def worker_main():
    """The child: read cases from stdin, answer on the original stdout (anything
    the library prints goes to stderr, so that it cannot corrupt the answers)."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    while True:
        case = _read_message(requests)
        if case is None:
            return
        _write_message(answers, _run_case(case))


# ------------------------------------------------------------------ the parent


class Worker:
    """One child interpreter that runs cases; restarted after a crash or a hang."""

    def __init__(self, timeout=CASE_TIMEOUT):
        self.timeout = timeout
        self.process = None
        self.log = None
        self.reader = concurrent.futures.ThreadPoolExecutor(1)

    def start(self):
        self.log = tempfile.TemporaryFile()
        code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                "import test_fuzz_public as t; t.worker_main()")
        env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.log, env=env)

    def _stderr_tail(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-2000:]

    def stop(self):
        """End the child (the worker starts a new one on its next case)."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.process.stdin.close()
            self.process.stdout.close()
            self.log.close()
        self.process = None

    def run(self, case, timeout=None):
        """("ok", finite), ("error", type, message, clear), ("crash", detail) or
        ("hang", detail): no answer within ``timeout`` seconds (default the
        worker's), a fresh child's start included."""
        timeout = self.timeout if timeout is None else timeout
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self.start()
        try:
            _write_message(self.process.stdin, case)
        except BrokenPipeError:
            pass
        # The answer is read on a thread, so that a silent child can be timed out on
        # every platform (select() takes no pipes on Windows).
        reading = self.reader.submit(_read_message, self.process.stdout)
        try:
            answer = reading.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            detail = f"no answer after {timeout:.0f} s"
            self.stop()  # the read ends with the child
            reading.exception()
            return ("hang", detail)
        if answer is None:
            code = self.process.wait()
            detail = f"the worker died (exit status {code}): {self._stderr_tail()}"
            self.stop()
            return ("crash", detail)
        return answer


class Tally:
    """Counts of the outcomes; with ``strict`` the first bad one fails the test."""

    KINDS = ("crash", "hang", "silent acceptance", "non-finite result", "unclear error")

    def __init__(self, strict=True):
        self.strict = strict
        self.examples = 0
        self.counts = dict.fromkeys(("ok", "clear error", *self.KINDS), 0)
        self.failures = []
        self.failed_cases = []

    def record(self, case, answer):
        self.examples += 1
        kind = _verdict(case, answer)
        self.counts[kind] += 1
        if kind in self.KINDS:
            message = f"{kind}: {describe(case)} -> {answer}"
            self.failures.append(message)
            self.failed_cases.append(case)
            if self.strict:
                raise AssertionError(message)

    def summary(self):
        return (f"{self.examples} examples: "
                + ", ".join(f"{n} {kind}" for kind, n in self.counts.items()))


def _verdict(case, answer):
    if answer[0] in ("crash", "hang"):
        return answer[0]
    if answer[0] == "ok":
        if case["malformed"]:
            return "silent acceptance"
        return "ok" if answer[1] else "non-finite result"
    return "clear error" if answer[3] else "unclear error"


def describe(case):
    """A case in words, arrays by shape and dtype (the failure report)."""
    def one(value):
        if sp.issparse(value):
            return f"<{value.format} {value.shape} {value.dtype}>"
        if isinstance(value, np.ndarray):
            return f"<ndarray {value.shape} {value.dtype}>"
        return repr(value)
    parts = [one(a) for a in case.get("args", ())]
    parts += [f"{k}={one(v)}" for k, v in {**case["params"], **case.get("kwargs", {})}.items()]
    return (f"{case['target']}.{case.get('method', '')}({', '.join(parts)}) "
            f"[{case['note']}]")


# ------------------------------------------------------------------ the cases

_SCALES = [1.0, 1.0, 1.0, 1e300, 1e-300, 1e150, 1e-150]
_DTYPES = [np.float64, np.float64, np.float64, np.float64, np.float32, np.float16, np.int64,
           np.bool_, np.complex128, object, "U3"]


@st.composite
def dense_data(draw, n=None, d=None):
    """A dense array: shapes from empty to 60 rows, any dtype, extreme scales,
    duplicates, NaN and infinity, or the wrong number of dimensions."""
    n = draw(st.sampled_from([0, 1, 2, 3, 5, 12, 40, 60])) if n is None else n
    d = draw(st.sampled_from([0, 1, 2, 3, 5])) if d is None else d
    seed = draw(st.integers(0, 2**16))
    X = np.random.default_rng(seed).normal(size=(n, d)) * draw(st.sampled_from(_SCALES))
    notes = []
    if draw(st.booleans()) and X.size:
        X = np.abs(X)  # nonnegative data: NMF and space="sphere" can use it
    if draw(st.integers(0, 5)) == 0 and n:
        X[:] = X[0]
        notes.append("identical rows")
    special = draw(st.sampled_from([None, None, None, np.nan, np.inf, -np.inf]))
    if special is not None and X.size:
        X.flat[draw(st.integers(0, X.size - 1))] = special
        notes.append(f"one {special}")
    dtype = draw(st.sampled_from(_DTYPES))
    with np.errstate(all="ignore"):
        X = X.astype(dtype) if dtype != "U3" else X.astype(str).astype("U3")
    shape = draw(st.sampled_from(["2-D"] * 8 + ["1-D", "3-D"]))
    if shape == "1-D":
        X = X.ravel()
    elif shape == "3-D":
        X = X[..., None]
    notes.append(f"{shape} {np.dtype(X.dtype)}")
    return X, ", ".join(notes)


_CORRUPTIONS = ["index too large", "negative index", "decreasing indptr", "indptr too short",
                "indptr[0] not 0", "indptr past the end", "float indices"]


def _corrupt(A, how):
    """A copy of the CSR/CSC/COO matrix A with its index arrays corrupted ``how``,
    built as users build matrices (SciPy checks little of this)."""
    if A.format == "coo":  # SciPy checks COO indices when it builds one: set after
        M = sp.coo_matrix((A.data.copy(), (A.row.copy(), A.col.copy())), shape=A.shape)
        if how == "negative index":
            M.col[0] = -3
        else:
            M.row[0] = A.shape[0] + 7
        return M
    data, indices, indptr = A.data.copy(), A.indices.copy(), A.indptr.copy()
    bound = A.shape[1] if A.format == "csr" else A.shape[0]
    if how == "index too large":
        indices[len(indices) // 2] = bound + 100_000
    elif how == "negative index":
        indices[0] = -100_000
    elif how == "decreasing indptr":
        k = max(1, len(indptr) // 2)
        indptr[k] = indptr[k - 1] - 1 if indptr[k - 1] > 0 else indptr[-1] + 1
    elif how == "indptr too short":
        indptr = indptr[:-1]
    elif how == "indptr[0] not 0":
        indptr = indptr + 1
    elif how == "indptr past the end":
        indptr[-1] = len(indices) + 5
    matrix = sp.csr_matrix if A.format == "csr" else sp.csc_matrix
    try:
        M = matrix((data, indices, indptr), shape=A.shape)
    except (ValueError, TypeError):  # SciPy caught it: corrupt the built matrix instead
        M = matrix((data, A.indices.copy(), A.indptr.copy()), shape=A.shape)
        M.indptr = indptr
        M.indices = indices
    if how == "float indices":
        M.indices = M.indices.astype(np.float64)
    return M


@st.composite
def sparse_data(draw, n=None, d=None, square=False):
    """A sparse matrix, well formed or with one corruption: (matrix, note, malformed)."""
    n = draw(st.sampled_from([2, 5, 12, 40])) if n is None else n
    d = (n if square else draw(st.sampled_from([1, 3, 5]))) if d is None else d
    seed = draw(st.integers(0, 2**16))
    A = sp.random(n, d, density=0.6, random_state=seed, format="csr")
    if square:
        A = (A + A.T).tocsr()
        A.setdiag(0)
        A.eliminate_zeros()
        A = A + sp.diags(np.ones(n - 1), 1, shape=(n, n)) + sp.diags(np.ones(n - 1), -1,
                                                                      shape=(n, n))
        A = A.tocsr()
    fmt = draw(st.sampled_from(["csr", "csr", "csc", "coo", "lil"]))
    how = draw(st.sampled_from([None, None, *_CORRUPTIONS]))
    if A.nnz == 0 or fmt == "lil":
        how = None
    if fmt == "coo" and how not in (None, "index too large", "negative index"):
        how = "index too large"
    dtype = draw(st.sampled_from([np.float64] * 6 + [np.float32, np.int64, np.bool_,
                                                      np.complex128]))
    A = A.astype(dtype).asformat(fmt)
    if how is not None:
        A = _corrupt(A, how)
    return A, f"{fmt} {np.dtype(dtype)}, {how or 'well formed'}", how is not None


def _indices(draw, n):
    """Row indices as users may pass them: in range or not, repeated, floats, bools."""
    kind = draw(st.sampled_from(["ok", "out of range", "negative", "repeated", "floats",
                                 "bools", "2-D"]))
    k = max(1, min(n, 3))
    idx = np.arange(k)
    if kind == "out of range":
        idx = np.array([0, n + 5])
    elif kind == "negative":
        idx = np.array([-n - 5])
    elif kind == "repeated":
        idx = np.array([0, 0])
    elif kind == "floats":
        idx = idx.astype(float) + 0.5
    elif kind == "bools":
        idx = np.ones(k, dtype=bool)
    elif kind == "2-D":
        idx = idx[None]
    return idx, kind


#: Each target's parameters: values a user may pass, good and bad.
_INT = [0, -1, 1, 2, 3, 2.5, "x", None, True, 10**12]
#: Iteration counts: a huge one is a valid request for a long run, not a bad value.
_ITER = [0, -1, 1, 2, 3, 2.5, "x", None, True]
_FLOAT = [0.0, -1.0, 0.5, 1e-300, 1e300, np.nan, np.inf, "x", None]

_SMALL = {
    "GPLandmarks": {"n_landmarks": 2, "n_steps": 3, "batch_size": 20, "random_state": 0},
    "RandomLandmarks": {"n_landmarks": 2, "random_state": 0},
    "ActiveLearningLandmarks": {"n_landmarks": 2, "random_state": 0},
    "RPCholeskyLandmarks": {"n_landmarks": 2, "random_state": 0},
    "KMeansLandmarks": {"n_landmarks": 2, "random_state": 0, "max_iter": 20},
    "NMFLandmarks": {"n_landmarks": 2, "random_state": 0, "max_iter": 20},
    "ManifoldSculpting": {"n_components": 1, "n_neighbors": 3, "min_iter": 1, "max_iter": 3,
                          "random_state": 0},
    "LaplacianEigenmaps": {"n_components": 1, "n_neighbors": 3, "random_state": 0},
    "LocallyLinearLandmarks": {"n_components": 1, "n_landmarks": 6, "n_neighbors": 3,
                               "n_landmark_neighbors": 3, "random_state": 0},
}

_PARAMETERS = {
    "GPLandmarks": {"n_landmarks": _INT, "n_steps": _ITER, "batch_size": _INT, "tau": _FLOAT,
                    "s0": _FLOAT, "kernel_width": [*_FLOAT, "auto", "variance"],
                    "space": ["euclidean", "nonnegative", "sphere", "torus"]},
    "RandomLandmarks": {"n_landmarks": _INT, "kernel_width": _FLOAT},
    "ActiveLearningLandmarks": {"n_landmarks": _INT, "subsample": _INT,
                                "kernel_width": _FLOAT},
    "RPCholeskyLandmarks": {"n_landmarks": _INT, "subsample": _INT, "kernel_width": _FLOAT},
    "KMeansLandmarks": {"n_landmarks": _INT, "n_init": _ITER, "max_iter": _ITER},
    "NMFLandmarks": {"n_landmarks": _INT, "max_iter": _ITER, "tol": _FLOAT},
    "ManifoldSculpting": {"n_components": _INT, "n_neighbors": _INT, "scale_rate": _FLOAT,
                          "patience": _ITER, "max_iter": _ITER,
                          "preprocess": ["ltsa", "pca", "none", "x"]},
    "LaplacianEigenmaps": {"n_components": _INT, "n_neighbors": _INT, "bandwidth": _FLOAT,
                           "eigen_solver": ["auto", "dense", "arpack", "lobpcg", "x"],
                           "tol": _FLOAT, "max_iter": _ITER},
    "LocallyLinearLandmarks": {"n_components": _INT, "n_landmarks": _INT,
                               "n_landmark_neighbors": _INT, "n_neighbors": _INT,
                               "reg": _FLOAT, "bandwidth": _FLOAT,
                               "method": ["lll", "le-z", "le-nystrom", "x"],
                               "refine": [False, True, 2, -1, "x"]},
    "estimate_intrinsic_dimension": {"max_dim": _INT, "n_neighbors": _INT,
                                     "scale_rate": _FLOAT, "patience": _ITER},
    "locally_linear_landmarks": {"n_components": _INT, "n_landmarks": _INT,
                                 "n_landmark_neighbors": _INT, "n_neighbors": _INT,
                                 "reg": _FLOAT},
    "lll_out_of_sample": {"n_landmark_neighbors": _INT, "reg": _FLOAT, "chunk_size": _INT},
    "sweep_lll": {"n_landmarks": _INT, "n_components": _INT},
}

_ESTIMATORS = [name for name in _SMALL]
_TRANSFORMERS = ["GPLandmarks", "KMeansLandmarks", "NMFLandmarks", "LocallyLinearLandmarks",
                 "ManifoldSculpting", "RandomLandmarks", "ActiveLearningLandmarks",
                 "RPCholeskyLandmarks", "LaplacianEigenmaps"]
_SPARSE_OK = {"GPLandmarks", "RandomLandmarks", "ActiveLearningLandmarks",
              "RPCholeskyLandmarks", "KMeansLandmarks", "NMFLandmarks",
              "LocallyLinearLandmarks", "LaplacianEigenmaps", "locally_linear_landmarks",
              "lll_out_of_sample", "sweep_lll"}


def _data(draw, target, **kw):
    """Dense or (for the methods that take it) sparse data: (X, note, malformed)."""
    if target in _SPARSE_OK and draw(st.integers(0, 2)) == 0:
        return draw(sparse_data(**kw))
    X, note = draw(dense_data(**kw))
    return X, note, False


def _params(draw, target):
    params = dict(_SMALL.get(target, {}))
    table = _PARAMETERS[target]
    for name in draw(st.lists(st.sampled_from(sorted(table)), max_size=2, unique=True)):
        params[name] = draw(st.sampled_from(table[name]))
    return params


def _good(n=40, d=3, seed=0):
    return np.abs(np.random.default_rng(seed).normal(size=(n, d))) + 0.1


@st.composite
def cases(draw):
    target = draw(st.sampled_from(_ESTIMATORS + ["estimate_intrinsic_dimension",
                                                 "locally_linear_landmarks",
                                                 "lll_out_of_sample", "sweep_lll"]))
    params = _params(draw, target)
    case = {"target": target, "params": params, "kwargs": {}}
    if target in _ESTIMATORS:
        case["method"] = draw(st.sampled_from(
            ["fit", "fit_transform", *(["transform"] if target in _TRANSFORMERS else [])]))
    if case.get("method") == "transform":
        case["fit_data"] = _good()
        X, note, malformed = _data(draw, target, d=draw(st.sampled_from([3, 3, 2])))
        case.update(args=(X,), note=note, malformed=malformed)
        return case
    X, note, malformed = _data(draw, target)
    case.update(args=(X,), note=note, malformed=malformed)
    extra = draw(st.integers(0, 3))
    n = X.shape[0] if getattr(X, "ndim", 0) >= 1 else 0
    if target in ("LocallyLinearLandmarks", "LaplacianEigenmaps",
                  "locally_linear_landmarks") and extra == 0:
        W, w_note, w_bad = draw(sparse_data(n=draw(st.sampled_from([40, 40, 12])),
                                            square=True))
        case["args"] = (_good(),)
        case["kwargs"]["affinity"] = W
        case["note"], case["malformed"] = f"affinity {w_note}", w_bad
    elif target == "ManifoldSculpting" and extra == 0 and case["method"] == "fit":
        idx, kind = _indices(draw, 40)
        case["args"] = (_good(40, 3),)
        if draw(st.booleans()):
            case["kwargs"].update(clamp_indices=idx, clamp_values=np.zeros((len(idx), 1)))
        else:
            table = np.tile((np.arange(1, 4) + np.arange(40)[:, None]) % 40, 1)
            if kind != "ok":
                table[0, 0] = idx.ravel()[-1] if kind != "repeated" else 0
            case["kwargs"]["neighbors"] = table.astype(idx.dtype) if kind in (
                "floats", "bools") else table
        case["note"] = f"index argument: {kind}"
        case["malformed"] = False  # a clear error is wanted, but some are valid
    elif target == "GPLandmarks" and extra == 0 and case["method"] == "fit":
        prev, note = draw(dense_data(n=draw(st.sampled_from([1, 2])), d=3))
        case["args"] = (_good(),)
        case["kwargs"]["previous_landmarks"] = prev
        case["note"], case["malformed"] = f"previous_landmarks {note}", False
    elif target == "LocallyLinearLandmarks" and extra == 1:
        T, note = draw(dense_data(n=draw(st.sampled_from([0, 1, 6])), d=3))
        case["args"] = (_good(),)
        case["params"]["landmarks"] = T
        case["note"], case["malformed"] = f"landmarks {note}", False
    elif target == "lll_out_of_sample":
        L = draw(st.sampled_from([0, 1, 4, 6]))
        T, note = draw(dense_data(n=L, d=draw(st.sampled_from([3, 3, 2]))))
        E, e_note = draw(dense_data(n=draw(st.sampled_from([L, L, L + 1])), d=2))
        Y = X if n else _good(5, 3)
        case["args"] = (Y, T, E)
        case["params"].setdefault("n_landmark_neighbors", 3)
        case["note"] += f"; landmarks {note}; embedding {e_note}"
    elif target == "sweep_lll":
        case["kwargs"].update(bandwidths=draw(st.sampled_from([[1.0], [-1.0], [], [np.nan]])),
                              n_neighbors=draw(st.sampled_from([[3], [0], [], [10**6]])),
                              score=draw(st.sampled_from(["labels", "callable"])))
        if case["kwargs"]["score"] == "labels":
            case["kwargs"]["score"] = np.zeros(n)
        else:
            case["kwargs"]["score"] = _Score()
        case["params"].setdefault("n_landmarks", 6)
        case["params"].setdefault("n_components", 1)
    elif target == "estimate_intrinsic_dimension":
        case["params"].setdefault("n_neighbors", 3)
        case["params"].setdefault("patience", 2)
    return case


class _Score:
    """A picklable score callable for sweep_lll: the embedding's spread."""

    def __call__(self, embedding):
        return float(np.std(embedding))


# ------------------------------------------------------------------ the tests


def fuzz(n_examples, tally, worker, seed=0):
    """Run ``n_examples`` hypothesis examples through ``worker`` into ``tally``."""
    @settings(max_examples=n_examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(cases())
    def one(case):
        tally.record(case, worker.run(case))

    one()


@pytest.fixture
def worker():
    w = Worker()
    yield w
    w.stop()


def test_public_api_never_crashes_hangs_or_accepts_malformed_input(worker, capsys):
    n_examples = int(os.environ.get("LANDMARKING_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))
    tally = Tally(strict=True)
    start = time.perf_counter()
    fuzz(n_examples, tally, worker)
    with capsys.disabled():
        print(f"\nfuzz_public: {tally.summary()} in {time.perf_counter() - start:.0f} s")
    assert tally.examples >= min(n_examples, 50)
    assert tally.counts["clear error"] > 0 and tally.counts["ok"] > 0


def test_the_worker_survives_a_crash_and_a_hang_and_reports_them():
    # The harness itself: a sleep and a segfault in the child are reported as a hang
    # and a crash, and the next case runs in a fresh worker. Only the hang gets a
    # short timeout, once the child has started (a start on a busy machine takes
    # seconds).
    w = Worker(timeout=CASE_TIMEOUT)
    try:
        ok = {"target": "RandomLandmarks", "method": "fit", "params": {"n_landmarks": 2},
              "args": (_good(),), "note": "", "malformed": False}
        assert w.run(ok) == ("ok", True)
        hang = {"target": "_hang", "params": {}, "note": "", "malformed": False}
        assert w.run(hang, timeout=3.0) == ("hang", "no answer after 3 s")
        crash = {"target": "_crash", "params": {}, "note": "", "malformed": False}
        assert w.run(crash)[0] == "crash"
        assert w.run(ok) == ("ok", True)
    finally:
        w.stop()
