"""Property-based tests of every reader: random bytes, truncations, wrong dtypes, huge shapes.

The property: whatever the bytes, a reader returns a valid result or raises
:class:`landmarking.io.InputError` whose message names the file. Any other
exception (``MemoryError`` from a header declaring petabytes, ``BadZipFile``,
``struct.error``, a PIL ``SyntaxError``) fails the test. Each reader gets at least
1,000 random examples; the truncation tests try every prefix of a valid file.
"""

import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PIL import Image

from landmarking.io import InputError, read_corpus, read_data, read_labels, read_result

#: The 1,000 random examples each reader gets; further properties of a reader get fewer.
FUZZ = settings(max_examples=1000, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MORE = settings(FUZZ, max_examples=300)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def outcome(read, path):
    """Run a reader: its result, or None after an InputError that names the file."""
    try:
        return read(path)
    except InputError as exc:
        assert str(path) in str(exc) or Path(path).name in str(exc), str(exc)
        assert "\n" not in str(exc).strip(), "an error message is one line"
        return None


def check_data(path):
    data = outcome(read_data, path)
    if data is not None:
        X = data.X
        assert X.ndim == 2 and min(X.shape) >= 1
        assert X.dtype in (np.float32, np.float64)
        values = X.data if sp.issparse(X) else X
        assert np.all(np.isfinite(values))
    return data


def _npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _npz_bytes(compressed=False, **arrays):
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


def _sparse_bytes(matrix):
    buffer = io.BytesIO()
    sp.save_npz(buffer, matrix)
    return buffer.getvalue()


def _png_bytes(pixels):
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


GOOD = np.arange(12, dtype=np.float64).reshape(4, 3) / 7
DTYPES = st.sampled_from(["<f8", ">f8", "<f4", "<f2", "<i4", ">i8", "<u1", "|b1", "<c16",
                          "<U3", "|S2", "<M8[s]", "<m8[s]"])


def _array(draw_dtype, shape):
    dtype = np.dtype(draw_dtype)
    n = int(np.prod(shape))
    raw = np.frombuffer(np.random.default_rng(n).bytes(n * dtype.itemsize), dtype=dtype)
    return raw.reshape(shape)


SHAPES = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


# ------------------------------------------------------------------ delimited text


@FUZZ
@given(content=st.binary(max_size=300))
def test_csv_random_bytes(folder, content):
    path = folder / "random.csv"
    path.write_bytes(content)
    check_data(path)


@MORE
@given(rows=st.lists(st.lists(st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers().map(str),
    st.sampled_from(["", " ", "nan", "inf", "-", "1e999", "0x10", '"1"', "#", "a,b", "\t"]),
    st.text(max_size=5)), max_size=5), max_size=6), tab=st.booleans())
def test_csv_and_tsv_random_cells(folder, rows, tab):
    path = folder / ("cells.tsv" if tab else "cells.csv")
    separator = "\t" if tab else ","
    path.write_text("\n".join(separator.join(row) for row in rows), encoding="utf-8",
                    errors="surrogatepass")
    check_data(path)


def test_csv_truncated_at_every_length(folder):
    text = "x,y\n# comment\n1.5,2\n3,4e-3\n-5,6\n".encode()
    for stop in range(len(text) + 1):
        path = folder / "cut.csv"
        path.write_bytes(text[:stop])
        check_data(path)


# ------------------------------------------------------------------ .npy


@FUZZ
@given(content=st.one_of(st.binary(max_size=300),
                         st.binary(max_size=200).map(lambda b: b"\x93NUMPY\x01\x00" + b)))
# Found by this test under NumPy 1.25 (make test-min): a header NumPy hands to
# Python's tokenizer, which raised tokenize.TokenError past our InputError.
@example(content=b"\x93NUMPY\x01\x00\x06\x00\x00\x00\x00\x00\x00{")
def test_npy_random_bytes(folder, content):
    path = folder / "random.npy"
    path.write_bytes(content)
    check_data(path)


@MORE
@given(dtype=DTYPES, shape=SHAPES, fortran=st.booleans())
def test_npy_every_dtype_and_shape(folder, dtype, shape, fortran):
    array = _array(dtype, shape)
    path = folder / "typed.npy"
    np.save(path, np.asfortranarray(array) if fortran else array)
    check_data(path)
    outcome(lambda p: read_labels(p), path)


def _npy_with_header(header, payload=b"\0" * 64):
    text = repr(header).encode("latin1")
    length = 64 * ((len(text) + 11) // 64 + 1) - 10
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", length) + text.ljust(length - 1) + b"\n"
            + payload)


@MORE
@given(shape=st.lists(st.integers(0, 2**62), min_size=1, max_size=3).map(tuple),
       dtype=st.sampled_from(["<f8", "<f4", "|u1", "<U100000", "|V100000"]),
       payload=st.binary(max_size=64))
def test_npy_huge_declared_shape(folder, shape, dtype, payload):
    """A header may declare petabytes over a few bytes: refuse, never allocate."""
    path = folder / "huge.npy"
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    path.write_bytes(_npy_with_header(header, payload))
    check_data(path)


def test_npy_truncated_at_every_length(folder):
    content = _npy_bytes(GOOD)
    for stop in range(len(content) + 1):
        path = folder / "cut.npy"
        path.write_bytes(content[:stop])
        data = check_data(path)
        assert (data is not None) == (stop == len(content))


# ------------------------------------------------------------------ .npz


@FUZZ
@given(content=st.one_of(st.binary(max_size=400),
                         st.binary(max_size=300).map(lambda b: b"PK\x03\x04" + b)))
def test_npz_random_bytes(folder, content):
    path = folder / "random.npz"
    path.write_bytes(content)
    check_data(path)
    outcome(read_result, path)


@MORE
@given(arrays=st.dictionaries(st.sampled_from(["X", "y", "data", "format", "shape", "indices",
                                               "indptr", "landmarking_result"]),
                              st.tuples(DTYPES, SHAPES), min_size=1, max_size=4),
       compressed=st.booleans(), key=st.sampled_from([None, "X", "missing"]))
def test_npz_any_members(folder, arrays, compressed, key):
    path = folder / "members.npz"
    members = {name: _array(*spec) for name, spec in arrays.items()}
    path.write_bytes(_npz_bytes(compressed, **members))
    check = check_data if key is None else (lambda p: outcome(lambda q: read_data(q, key=key), p))
    check(path)
    outcome(read_result, path)


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_truncated_at_every_length(folder, compressed):
    content = _npz_bytes(compressed, X=GOOD)
    for stop in range(len(content) + 1):
        path = folder / "cut.npz"
        path.write_bytes(content[:stop])
        data = check_data(path)
        assert (data is not None) == (stop == len(content))


def test_npz_member_declaring_a_huge_shape(folder):
    path = folder / "huge.npz"
    with zipfile.ZipFile(path, "w") as archive:
        header = {"descr": "<f8", "fortran_order": False, "shape": (2**40, 2**20)}
        archive.writestr("X.npy", _npy_with_header(header))
    check_data(path)
    outcome(read_result, path)


# ------------------------------------------------------------------ sparse .npz


@FUZZ
@given(n_rows=st.integers(0, 6), n_cols=st.integers(0, 6), density=st.floats(0, 1),
       corrupt=st.sampled_from(["none", "indices", "indptr", "shape", "format", "data dtype",
                                "data length", "nan"]),
       fmt=st.sampled_from(["csr", "csc", "coo"]))
def test_sparse_npz_any_components(folder, n_rows, n_cols, density, corrupt, fmt):
    matrix = sp.random(n_rows, n_cols, density=density, format=fmt,
                       random_state=n_rows * 7 + n_cols)
    content = dict(np.load(io.BytesIO(_sparse_bytes(matrix))))
    rng = np.random.default_rng(n_rows)
    if corrupt == "indices" and "indices" in content:
        content["indices"] = content["indices"] + rng.integers(-9, 9, content["indices"].shape)
    elif corrupt == "indices" and "row" in content:
        content["row"] = content["row"] - 20
    elif corrupt == "indptr" and "indptr" in content:
        content["indptr"] = content["indptr"][::-1].copy()
    elif corrupt == "shape":
        content["shape"] = np.array([2**62, -3])
    elif corrupt == "format":
        content["format"] = np.array(b"xyz")
    elif corrupt == "data dtype":
        content["data"] = content["data"].astype("<U3")
    elif corrupt == "data length":
        content["data"] = np.concatenate([content["data"], [1.0, 2.0]])
    elif corrupt == "nan" and content["data"].size:
        content["data"][0] = np.nan
    path = folder / "sparse.npz"
    path.write_bytes(_npz_bytes(**content))
    data = check_data(path)
    if data is not None and sp.issparse(data.X):
        data.X.check_format(full_check=True)


def test_sparse_npz_truncated_at_every_length(folder):
    content = _sparse_bytes(sp.csr_matrix(GOOD))
    for stop in range(0, len(content) + 1, 3):
        path = folder / "cut_sparse.npz"
        path.write_bytes(content[:stop])
        data = check_data(path)
        assert (data is not None) == (stop == len(content))


# ------------------------------------------------------------------ image folders


@FUZZ
@given(content=st.one_of(st.binary(max_size=300),
                         st.binary(max_size=200).map(lambda b: b"\x89PNG\r\n\x1a\n" + b),
                         st.binary(max_size=200).map(lambda b: b"P5\n4 4\n255\n" + b)),
       suffix=st.sampled_from([".png", ".pgm"]))
def test_image_folder_random_bytes(folder, content, suffix):
    images = folder / "images_random"
    images.mkdir(exist_ok=True)
    for old in images.iterdir():
        old.unlink()
    _png = _png_bytes(np.zeros((4, 4), np.uint8))
    (images / "a.png").write_bytes(_png)
    (images / f"b{suffix}").write_bytes(content)
    check_data(images)


@MORE
@given(width=st.integers(0, 2**31 - 1), height=st.integers(0, 2**31 - 1),
       maxval=st.integers(0, 2**16 + 1), payload=st.binary(max_size=32))
def test_pgm_huge_declared_size(folder, width, height, maxval, payload):
    images = folder / "images_huge"
    images.mkdir(exist_ok=True)
    (images / "a.pgm").write_bytes(f"P5\n{width} {height}\n{maxval}\n".encode() + payload)
    check_data(images)


def test_png_truncated_at_every_length(folder):
    pixels = (np.arange(64, dtype=np.uint8) * 3).reshape(8, 8)
    content = _png_bytes(pixels)
    images = folder / "images_cut"
    images.mkdir(exist_ok=True)
    (images / "a.png").write_bytes(content)
    for stop in range(len(content) + 1):
        (images / "b.png").write_bytes(content[:stop])
        check_data(images)


# ------------------------------------------------------------------ JSONL corpora


@FUZZ
@given(content=st.one_of(
    st.binary(max_size=300),
    st.lists(st.one_of(st.text(max_size=20),
                       st.recursive(st.none() | st.booleans() | st.floats() | st.text(max_size=5),
                                    lambda inner: st.lists(inner, max_size=3)
                                    | st.dictionaries(st.sampled_from(["text", "body"]), inner,
                                                      max_size=2)).map(json.dumps),
                       st.integers(1, 1200).map(lambda depth: "[" * depth + "]" * depth)),
             max_size=5).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass"))))
def test_jsonl_random_content(folder, content):
    path = folder / "corpus.jsonl"
    path.write_bytes(content)
    result = outcome(read_corpus, path)
    if result is not None:
        documents, names = result
        assert len(documents) == len(names) >= 1
        assert all(isinstance(doc, str) for doc in documents)


def test_jsonl_truncated_at_every_length(folder):
    content = "\n".join(json.dumps({"text": f"document number {i}"}) for i in range(4)).encode()
    for stop in range(len(content) + 1):
        path = folder / "cut.jsonl"
        path.write_bytes(content[:stop])
        outcome(read_corpus, path)


@MORE
@given(content=st.binary(max_size=200))
def test_text_folder_random_bytes(folder, content):
    texts = folder / "texts"
    texts.mkdir(exist_ok=True)
    (texts / "a.txt").write_bytes(content)
    documents, _ = outcome(read_corpus, texts)
    assert len(documents) == 1


# ------------------------------------------------------------------ labels


@FUZZ
@given(content=st.binary(max_size=200), suffix=st.sampled_from([".txt", ".csv", ".tsv"]),
       n=st.one_of(st.none(), st.integers(0, 5)))
def test_label_files_random_bytes(folder, content, suffix, n):
    path = folder / f"labels{suffix}"
    path.write_bytes(content)
    labels = outcome(lambda p: read_labels(p, n), path)
    if labels is not None:
        assert labels.ndim == 1 and (n is None or len(labels) == n)
