"""Readers and writers of landmarking.io: every format, and every bad input's message."""

import hashlib
import json
import pickle

import numpy as np
import pytest
import scipy.sparse
from PIL import Image

from landmarking import __version__
from landmarking.io import (
    InputError,
    check_output,
    input_sha256,
    output_format,
    parse_image_shape,
    read_corpus,
    read_data,
    read_labels,
    read_result,
    write_result,
)


def _write(path, text):
    path.write_text(text)
    return path


# ------------------------------------------------------------------ numpy files


def test_npy_keeps_float32_and_converts_integers(tmp_path):
    rng = np.random.default_rng(0)
    X32 = rng.normal(size=(7, 3)).astype(np.float32)
    np.save(tmp_path / "a.npy", X32)
    data = read_data(tmp_path / "a.npy")
    assert data.X.dtype == np.float32
    np.testing.assert_array_equal(data.X, X32)

    np.save(tmp_path / "b.npy", np.arange(6).reshape(3, 2))
    X = read_data(tmp_path / "b.npy").X
    assert X.dtype == np.float64
    np.testing.assert_array_equal(X, [[0, 1], [2, 3], [4, 5]])


def test_npz_key_only_array_and_errors(tmp_path):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(5, 2)), np.arange(5)
    np.savez(tmp_path / "one.npz", data=X)
    np.testing.assert_array_equal(read_data(tmp_path / "one.npz").X, X)
    np.savez(tmp_path / "two.npz", X=X, y=y)
    data = read_data(tmp_path / "two.npz", key="X")
    np.testing.assert_array_equal(data.X, X)
    assert data.key == "X"
    with pytest.raises(InputError,
                       match=r"two\.npz: holds several arrays \(X, y\); choose one with --key"):
        read_data(tmp_path / "two.npz")
    with pytest.raises(InputError,
                       match=r"two\.npz: has no array named 'Z' \(it holds: X, y\); pass --key"):
        read_data(tmp_path / "two.npz", key="Z")
    with pytest.raises(InputError, match="--key applies to .npz files only"):
        read_data(_write(tmp_path / "a.csv", "1,2\n"), key="X")


def test_sparse_npz_is_read_as_csr(tmp_path):
    rng = np.random.default_rng(2)
    dense = rng.random((6, 5)) * (rng.random((6, 5)) < 0.4)
    scipy.sparse.save_npz(tmp_path / "s.npz", scipy.sparse.csc_matrix(dense))
    X = read_data(tmp_path / "s.npz").X
    assert scipy.sparse.issparse(X) and X.format == "csr"
    np.testing.assert_array_equal(X.toarray(), dense)
    np.testing.assert_array_equal(read_data(tmp_path / "s.npz", allow_sparse=False).X, dense)


def test_image_stack_is_flattened_with_its_shape(tmp_path):
    images = np.random.default_rng(3).random((4, 6, 5))
    np.save(tmp_path / "stack.npy", images)
    data = read_data(tmp_path / "stack.npy")
    assert data.image_shape == (6, 5)
    np.testing.assert_array_equal(data.X, images.reshape(4, 30))


@pytest.mark.parametrize("array, message", [
    (np.arange(5.0), r"the data must be a 2-D array .* got 1-D shape \(5,\)"),
    (np.array([["a", "b"]]), r"holds <U1 values, not real numbers"),
    (np.zeros((0, 3)), r"the data is empty"),
    (np.array([[1.0, 2.0], [3.0, np.inf]]), r"infinite value in row 2, column 2"),
    (np.array([[1.0, 2.0, 3.0], [3.0, 4.0, np.nan]]),
     r"NaN value in row 2, column 3 \(1 rows affected\)"),
])
def test_bad_arrays_name_the_problem(tmp_path, array, message):
    np.save(tmp_path / "bad.npy", array)
    with pytest.raises(InputError, match=r"bad\.npy: " + message):
        read_data(tmp_path / "bad.npy")


def test_pickled_arrays_are_refused(tmp_path):
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="Python objects .* never loaded"):
        read_data(tmp_path / "obj.npy")
    (tmp_path / "fake.npy").write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(InputError,
                       match=r"fake\.npy: (holds Python objects|not a valid \.npy file)"):
        read_data(tmp_path / "fake.npy")


def test_wrong_extension_and_missing_file(tmp_path):
    with pytest.raises(InputError,
                       match=r"cannot read files ending in '\.txt'; give a \.npy, \.npz"):
        read_data(_write(tmp_path / "data.txt", "1 2\n"))
    with pytest.raises(InputError, match="no such file or folder"):
        read_data(tmp_path / "absent.npy")


# ------------------------------------------------------------------ csv / tsv


def test_csv_header_is_detected_and_comments_skipped(tmp_path):
    text = "# made by hand\nx, y ,z\n1,2,3\n\n4.5,-6e1,\"7\"\n"
    X = read_data(_write(tmp_path / "h.csv", text)).X
    np.testing.assert_array_equal(X, [[1, 2, 3], [4.5, -60, 7]])
    X = read_data(_write(tmp_path / "n.csv", "1,2\n3,4\n")).X
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    X = read_data(_write(tmp_path / "t.tsv", "a\tb\n1\t2\n3\t4\n")).X
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])


def test_csv_single_column_stays_2d(tmp_path):
    X = read_data(_write(tmp_path / "c.csv", "v\n1\n2\n3\n")).X
    assert X.shape == (3, 1)


@pytest.mark.parametrize("text, message", [
    ("a,b\n1,2\n\n3,4\n5\n",
     r"line 5 has 1 fields but earlier rows have 2 \(ragged CSV\); give every row"),
    ("1,2\n3,4,5\n", r"line 2 has 3 fields but earlier rows have 2"),
    ("a,b\n1,2\n3,abc\n", r"line 3, column 2 holds 'abc', which is not a number"),
    ("1,2\n3,x\n", r"line 2, column 2 holds 'x', which is not a number"),
    ("a,b\n1,\n", r"line 2, column 2 is empty; fill in the missing value"),
    ("a,b\n1,2\nnan,4\n", r"line 3, column 1 is 'nan' \(NaN or infinite\); remove or impute"),
    ("# only a comment\n", r"the CSV file has no data rows"),
    ("a,b\n", r"the CSV file has a header but no data rows"),
])
def test_bad_csv_names_line_and_fix(tmp_path, text, message):
    with pytest.raises(InputError, match=r"bad\.csv: " + message):
        read_data(_write(tmp_path / "bad.csv", text))


def test_bad_tsv_says_tsv(tmp_path):
    with pytest.raises(InputError, match=r"line 3 has 1 fields .*\(ragged TSV\)"):
        read_data(_write(tmp_path / "bad.tsv", "1\t2\n3\t4\n5\n"))


# ------------------------------------------------------------------ image folders


def _save_image(path, pixels, mode="L"):
    Image.fromarray(pixels, mode=mode).save(path)


def test_image_folder_in_natural_order_scaled_to_unit(tmp_path):
    rng = np.random.default_rng(4)
    images = rng.integers(0, 256, size=(11, 6, 4), dtype=np.uint8)
    folder = tmp_path / "imgs"
    folder.mkdir()
    for i, pixels in enumerate(images):
        _save_image(folder / f"img{i}.{'pgm' if i % 2 else 'png'}", pixels)
    (folder / "notes.md").write_text("not an image")
    data = read_data(folder)
    assert data.image_shape == (6, 4)
    assert data.X.shape == (11, 24)
    # img10 comes after img9 (natural order), not after img1.
    np.testing.assert_allclose(data.X, images.reshape(11, -1) / 255, atol=1e-7)


def test_colour_and_16_bit_images(tmp_path):
    folder = tmp_path / "rgb"
    folder.mkdir()
    rgb = np.random.default_rng(5).integers(0, 256, size=(2, 3, 5, 3), dtype=np.uint8)
    for i, pixels in enumerate(rgb):
        _save_image(folder / f"{i}.png", pixels, mode="RGB")
    data = read_data(folder)
    assert data.image_shape == (3, 5, 3)
    np.testing.assert_allclose(data.X, rgb.reshape(2, -1) / 255, atol=1e-7)

    folder16 = tmp_path / "deep"
    folder16.mkdir()
    deep = np.array([[0, 65535], [1000, 30000]], dtype=np.uint16)
    Image.fromarray(deep).save(folder16 / "a.png")
    np.testing.assert_allclose(read_data(folder16).X, deep.reshape(1, -1) / 65535, atol=1e-7)


def test_image_folder_errors(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"empty: the folder holds no \.png or \.pgm images"):
        read_data(empty)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    _save_image(mixed / "a.png", np.zeros((4, 4), np.uint8))
    _save_image(mixed / "b.png", np.zeros((5, 4), np.uint8))
    with pytest.raises(InputError,
                       match=r"b\.png: image of size 5x4 but a\.png is 4x4; all images"):
        read_data(mixed)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "a.png").write_bytes(b"not a png")
    with pytest.raises(InputError, match=r"a\.png: not a readable image"):
        read_data(broken)


def test_image_shape_is_checked(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((3, 784)))
    assert read_data(tmp_path / "x.npy", image_shape=(28, 28)).image_shape == (28, 28)
    with pytest.raises(InputError,
                       match=r"image shape 20x20 has 400 pixels but the data has 784 columns"):
        read_data(tmp_path / "x.npy", image_shape=(20, 20))
    assert parse_image_shape("28x28") == (28, 28)
    assert parse_image_shape("32X32x3") == (32, 32, 3)
    for bad in ("28", "axb", "0x5", "1x2x3x4"):
        with pytest.raises(InputError, match="is not HEIGHTxWIDTH"):
            parse_image_shape(bad)


# ------------------------------------------------------------------ labels, corpus


def test_labels_numbers_names_and_headers(tmp_path):
    np.testing.assert_array_equal(read_labels(_write(tmp_path / "a.txt", "y\n1\n0\n2\n"), 3),
                                  [1, 0, 2])
    assert read_labels(tmp_path / "a.txt").dtype == np.int64
    names = read_labels(_write(tmp_path / "b.csv", "kind\ncat\ndog\ncat\n"), 3)
    assert names.tolist() == ["cat", "dog", "cat"]
    assert read_labels(tmp_path / "b.csv").tolist() == ["kind", "cat", "dog", "cat"]
    np.save(tmp_path / "c.npy", np.array([[0.5], [1.5]]))
    np.testing.assert_array_equal(read_labels(tmp_path / "c.npy", 2), [0.5, 1.5])
    with pytest.raises(InputError, match=r"3 labels for 4 data rows; give one label per row"):
        read_labels(tmp_path / "a.txt", 4)
    with pytest.raises(InputError,
                       match=r"line 2 has 2 fields; a labels file holds one label per line"):
        read_labels(_write(tmp_path / "d.csv", "1\n2,3\n"))


def test_corpus_folder_and_jsonl(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in (10, 2, 1):
        (folder / f"doc{i}.txt").write_text(f"text {i}")
    documents, names = read_corpus(folder)
    assert names == ["doc1.txt", "doc2.txt", "doc10.txt"]
    assert documents == ["text 1", "text 2", "text 10"]
    jsonl = _write(tmp_path / "c.jsonl", '{"body": "a b"}\n\n{"body": "c"}\n')
    assert read_corpus(jsonl, field="body") == (["a b", "c"], ["line 1", "line 3"])
    with pytest.raises(InputError, match=r"line 1 has no text field 'text' \(found: body\); "
                                         r"name the field with --field"):
        read_corpus(jsonl)
    with pytest.raises(InputError, match=r"line 2 is not valid JSON"):
        read_corpus(_write(tmp_path / "b.jsonl", '{"text": "a"}\n{text: b}\n'))
    with pytest.raises(InputError, match=r"a corpus is a folder of \.txt files or a \.jsonl file"):
        read_corpus(_write(tmp_path / "c.csv", "a\n"))


# ------------------------------------------------------------------ writers


def test_write_and_read_result_with_provenance(tmp_path):
    source = _write(tmp_path / "in.csv", "1,2\n3,4\n")
    out = tmp_path / "r.npz"
    L = np.array([[0.5, 1.5]])
    write_result(out, {"landmarks": L, "objective": np.array([0.25])},
                 parameters={"n_landmarks": 1, "seed": np.int64(3), "shape": (2, 2)},
                 source=source, command="landmarking landmarks in.csv -n 1", force=False)
    saved = read_result(out, required=["landmarks", "objective"])
    np.testing.assert_array_equal(saved["landmarks"], L)
    assert saved["parameters"] == {"n_landmarks": 1, "seed": 3, "shape": [2, 2]}
    assert saved["version"] == __version__
    assert saved["input_sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert saved["command"] == "landmarking landmarks in.csv -n 1"
    # The file loads without pickles, and read_data finds its main array.
    with np.load(out, allow_pickle=False) as raw:
        assert json.loads(str(raw["parameters"]))["n_landmarks"] == 1
    np.testing.assert_array_equal(read_data(out).X, L)
    assert {p.name for p in tmp_path.iterdir()} == {"in.csv", "r.npz"}
    with pytest.raises(InputError,
                       match=r"r\.npz: has no 'kernel_width' entry \(it holds: .*landmarks"):
        read_result(out, required=["landmarks", "kernel_width"])


def test_refuses_to_overwrite_without_force(tmp_path):
    out = tmp_path / "r.npz"
    write_result(out, {"a": np.zeros(2)}, force=False)
    with pytest.raises(InputError, match=r"r\.npz: already exists; pass --force to overwrite it"):
        write_result(out, {"a": np.ones(2)}, force=False)
    np.testing.assert_array_equal(read_result(out)["a"], np.zeros(2))
    write_result(out, {"a": np.ones(2)}, force=True)
    np.testing.assert_array_equal(read_result(out)["a"], np.ones(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.npz"]  # no temporary left behind


def test_csv_output_round_trips_with_metadata(tmp_path):
    source = _write(tmp_path / "in.csv", "1,2\n")
    values = np.random.default_rng(6).normal(size=(4, 3))
    out = tmp_path / "f.csv"
    write_result(out, {"features": values}, parameters={"k": 3}, source=source, fmt="csv")
    text = out.read_text()
    assert text.startswith(f"# landmarking {__version__}: features")
    assert hashlib.sha256(source.read_bytes()).hexdigest() in text
    np.testing.assert_allclose(read_data(out).X, values, rtol=1e-8)


def test_output_names_are_checked(tmp_path):
    assert output_format("a.npz") == "npz" and output_format("a.CSV") == "csv"
    with pytest.raises(InputError,
                       match=r"cannot write files ending in '\.txt'; name the output \.npz"):
        output_format(tmp_path / "out.txt")
    with pytest.raises(InputError, match=r"--format csv needs a file name ending in \.csv"):
        output_format(tmp_path / "out.npz", "csv")
    with pytest.raises(InputError, match=r"the folder .*missing does not exist; create it first"):
        check_output(tmp_path / "missing" / "out.npz")
    with pytest.raises(InputError, match=r"--plot writes a PNG image; name the file \*\.png"):
        check_output(tmp_path / "p.jpg", fmt="png", option="--plot")
    (tmp_path / "dir.npz").mkdir()
    with pytest.raises(InputError, match=r"is a folder; give -o a file name"):
        check_output(tmp_path / "dir.npz")


def test_input_checksum_of_files_and_folders(tmp_path):
    file = _write(tmp_path / "a.csv", "1,2\n")
    assert input_sha256(file) == hashlib.sha256(b"1,2\n").hexdigest()
    folder = tmp_path / "imgs"
    folder.mkdir()
    _save_image(folder / "a.png", np.zeros((2, 2), np.uint8))
    before = input_sha256(folder)
    _save_image(folder / "a.png", np.ones((2, 2), np.uint8))
    changed = input_sha256(folder)
    assert changed != before
    (folder / "notes.txt").write_text("not an image")
    assert input_sha256(folder) == changed  # only the images count
    assert input_sha256(folder, suffixes=(".txt",)) == hashlib.sha256(
        b"notes.txt\0not an image").hexdigest()


def test_a_failed_write_names_the_output_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    import errno

    def full_disk(*args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")  # as a write past RLIMIT_FSIZE fails

    (tmp_path / "r.npz").write_bytes(b"earlier result")
    monkeypatch.setattr(np, "savez", full_disk)
    with pytest.raises(OSError, match="File too large") as info:
        write_result(tmp_path / "r.npz", {"x": np.zeros(2)})
    assert info.value.filename == str(tmp_path / "r.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.npz"]
    assert (tmp_path / "r.npz").read_bytes() == b"earlier result"


def test_npy_header_declaring_more_than_the_file_holds_is_refused_before_loading(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((1000, 4)))
    content = (tmp_path / "x.npy").read_bytes()
    header = content[:128].replace(b"(1000, 4)", b"(10**15, 4)".replace(b"10**15", b"9" * 15))
    (tmp_path / "huge.npy").write_bytes(header + content[128:])
    with pytest.raises(InputError, match=r"huge\.npy: declares shape \(999999999999999, 4\) "
                                         r"of float64 .* but holds 320[0-9]+ bytes of data: "
                                         r"the file is truncated or damaged"):
        read_data(tmp_path / "huge.npy")


def test_sparse_npz_with_indices_out_of_range_is_refused(tmp_path):
    matrix = scipy.sparse.csc_matrix(np.eye(3))
    scipy.sparse.save_npz(tmp_path / "s.npz", matrix)
    parts = dict(np.load(tmp_path / "s.npz"))
    parts["indices"] = parts["indices"] + 50  # would crash tocsr() without the check
    np.savez(tmp_path / "bad.npz", **parts)
    with pytest.raises(InputError,
                       match=r"bad\.npz: not a valid \.npz file \(indices must be < 3\)"):
        read_data(tmp_path / "bad.npz")
    scipy.sparse.save_npz(tmp_path / "empty.npz", scipy.sparse.csr_matrix((3, 0)))
    with pytest.raises(InputError, match=r"empty\.npz: the data is empty \(shape \(3, 0\)\)"):
        read_data(tmp_path / "empty.npz")


def test_result_with_damaged_parameters_is_refused(tmp_path):
    np.savez(tmp_path / "r.npz", landmarks=np.zeros((2, 2)), parameters=np.asarray("{not json"))
    with pytest.raises(InputError, match=r"r\.npz: not a readable \.npz file"):
        read_result(tmp_path / "r.npz")


def test_throttle_writes_at_most_once_per_interval_and_the_last_state_on_close():
    from landmarking._checkpoint import Throttle

    now = [0.0]
    written = []
    throttle = Throttle(lambda *state: written.append(state), interval=1.0, clock=lambda: now[0])
    for step in range(1, 8):
        now[0] = 0.4 * step
        throttle(step)
    # t=0.4 writes (the first), 0.8/1.2 held, 1.6 writes, 2.0/2.4 held, 2.8 writes
    assert written == [(1,), (4,), (7,)]
    throttle(8)
    throttle.close()
    throttle.close()  # nothing held back: no second write
    assert written == [(1,), (4,), (7,), (8,)]


def test_gp_checkpoint_file_and_callback_hold_the_run_so_far(tmp_path):
    from landmarking import GPLandmarks

    X = np.random.default_rng(0).normal(size=(300, 2))
    seen = []
    full = GPLandmarks(n_landmarks=5, n_steps=30, random_state=0).fit(
        X, checkpoint=lambda *state: seen.append(state))
    assert [len(landmarks) for landmarks, _, _ in seen] == [1, 2, 3, 4, 5]
    for landmarks, objective, seconds in seen:
        np.testing.assert_array_equal(landmarks, full.landmarks_[:len(landmarks)])
        assert len(objective) == len(seconds) == len(landmarks)
    # The objectives come from one pass over the data after the last landmark: NaN
    # until then, and the fitted values in the last call.
    assert all(np.isnan(objective).all() for _, objective, _ in seen[:-1])
    np.testing.assert_array_equal(seen[-1][1], full.objective_)
    GPLandmarks(n_landmarks=5, n_steps=30, random_state=0).fit(X, checkpoint=tmp_path / "run.npz")
    saved = read_result(tmp_path / "run.npz")
    assert bool(saved["complete"]) and int(saved["n_requested"]) == 5
    np.testing.assert_array_equal(saved["landmarks"], full.landmarks_)
    np.testing.assert_array_equal(saved["objective"], full.objective_)
    # A run resumed from the first three saved landmarks ends where the full one did.
    resumed = GPLandmarks(n_landmarks=5, n_steps=30, random_state=0).fit(
        X, previous_landmarks=saved["landmarks"][:3], checkpoint=tmp_path / "run.npz")
    np.testing.assert_array_equal(resumed.landmarks_, full.landmarks_)
    assert bool(read_result(tmp_path / "run.npz")["complete"])
