"""Behaviour that must not change with the installed versions of NumPy, SciPy or BLAS.

`make test-min` runs these (with the whole suite) at the declared floors: each one
pins down a place where an older release behaved differently and the library now
gives the same result or message on every supported version.
"""

import errno
import gc
import io
import json
import sys
import zipfile

import numpy as np
import pytest
import scipy.sparse
from sklearn.datasets import make_swiss_roll

from landmarking import LocallyLinearLandmarks, RandomLandmarks, load, save
from landmarking._io_formats import write_npz
from landmarking.io import InputError, read_data
from landmarking.persistence import HEADER

# ------------------------------------------------------------------ n_jobs and BLAS


@pytest.mark.parametrize("method", ["le-z", "le-nystrom"])
def test_landmark_le_embedding_does_not_depend_on_n_jobs(method):
    # LAPACK's answer on the landmarks' eigenproblem changes with the BLAS thread
    # count (OpenBLAS 0.3.18 of scipy 1.10 and 0.3.21 of scipy 1.11, from 80
    # landmarks on); n_jobs must not reach it. (method="lll": tests/test_input_kinds.py.)
    X, _ = make_swiss_roll(900, random_state=3)
    fits = [LocallyLinearLandmarks(n_landmarks=80, method=method, random_state=0,
                                   n_jobs=n_jobs).fit(X) for n_jobs in (1, 2)]
    np.testing.assert_array_equal(fits[0].eigenvalues_, fits[1].eigenvalues_)
    np.testing.assert_array_equal(fits[0].embedding_, fits[1].embedding_)


# ------------------------------------------------------------------ .npz writing


class _SmallDisk(io.BytesIO):
    """A file that takes 4 KiB and refuses the rest, as a write past RLIMIT_FSIZE does."""

    def write(self, data):
        if self.tell() + memoryview(data).nbytes > 4096:
            raise OSError(errno.EFBIG, "File too large")
        return super().write(data)


def test_write_npz_writes_what_np_load_reads():
    arrays = {"x": np.arange(12.0).reshape(3, 4), "words": np.array(["a", "bc"]),
              "scalar": np.asarray(7), "f": np.asfortranarray(np.ones((2, 3), np.float32))}
    buffer = io.BytesIO()
    write_npz(buffer, arrays)
    buffer.seek(0)
    with zipfile.ZipFile(buffer) as archive:
        assert sorted(archive.namelist()) == sorted(f"{k}.npy" for k in arrays)
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as content:
        for name, value in arrays.items():
            assert content[name].dtype == value.dtype
            np.testing.assert_array_equal(content[name], value)
        assert content["f"].flags.f_contiguous


def test_write_npz_failure_leaves_no_late_error(monkeypatch):
    # NumPy 1.x's savez leaves the archive open after a failed write. The error's
    # traceback keeps it alive (the command line chains it) until after the file is
    # closed; the archive's late close then wrote to the closed file, and Python
    # printed that traceback ("Exception ignored in ZipFile.__del__").
    late = []
    monkeypatch.setattr(sys, "unraisablehook", late.append)
    disk, raised = _SmallDisk(), None
    try:
        write_npz(disk, {"small": np.zeros(10), "big": np.zeros(4000)})
    except OSError as exc:
        raised = exc
    assert str(raised) == "[Errno 27] File too large"
    disk.close()
    del raised
    gc.collect()
    assert [repr(e.exc_value) for e in late] == []


# ------------------------------------------------------------------ sparse files


def _csr_file(path, indices):
    scipy.sparse.save_npz(path, scipy.sparse.csr_matrix(np.eye(3, 4)))
    parts = dict(np.load(path))
    parts["indices"] = np.asarray(indices, dtype=parts["indices"].dtype)
    np.savez(path, **parts)


@pytest.mark.parametrize("indices, message", [([0, 1, 4], r"indices must be < 4"),
                                              ([0, -1, 2], r"indices must be >= 0")])
def test_sparse_index_out_of_range_is_named_in_our_words(tmp_path, indices, message):
    # scipy's own words differ by version ("column index values must be < 4").
    _csr_file(tmp_path / "bad.npz", indices)
    with pytest.raises(InputError, match=rf"bad\.npz: not a valid \.npz file \({message}\)"):
        read_data(tmp_path / "bad.npz")


# ------------------------------------------------------------------ model files


def test_sparse_arrays_and_matrices_keep_their_container(tmp_path):
    # scipy.sparse.sparray exists from scipy 1.11 on; the container is told apart
    # without it, and a csr_array comes back a csr_array, a csr_matrix a csr_matrix.
    est = RandomLandmarks(n_landmarks=2, random_state=0).fit(np.eye(4))
    est.kept_ = [scipy.sparse.csr_array(np.eye(2)), scipy.sparse.csc_matrix(np.eye(3)),
                 scipy.sparse.csc_array(np.eye(2)), scipy.sparse.csr_matrix(np.eye(2))]
    save(est, tmp_path / "m.npz")
    back = load(tmp_path / "m.npz").kept_
    assert [type(v) for v in back] == [type(v) for v in est.kept_]
    with np.load(tmp_path / "m.npz", allow_pickle=False) as content:
        tree = json.loads(content[HEADER].tobytes().decode("utf-8"))
    items = tree["estimator"]["state"]["kept_"]["items"]
    assert [node["container"] for node in items] == ["array", "matrix", "array", "matrix"]
