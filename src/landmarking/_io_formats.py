"""File formats behind :mod:`landmarking.io`: NumPy files, delimited text, images.

Private: :mod:`landmarking.io` is the interface. Every problem raises
:class:`InputError` with a one-line message naming the file, the problem and the fix.
"""

import csv
import math
import os
import re
import struct
import tokenize
import zipfile
import zlib
from contextlib import contextmanager

import numpy as np

#: Image files a data folder may hold.
IMAGE_SUFFIXES = (".png", ".pgm")


class InputError(ValueError):
    """A problem with a user's file or option; the message names the fix."""


#: What NumPy, zipfile, zlib and scipy raise on a damaged or hostile file. Reading
#: such a file must end in an InputError naming it, never in one of these.
DAMAGED = (OSError, ValueError, EOFError, KeyError, IndexError, TypeError, AttributeError,
           struct.error, zlib.error, zipfile.BadZipFile, NotImplementedError, RuntimeError,
           OverflowError,
           # NumPy 1.x parses an .npy header it cannot evaluate with Python's
           # tokenizer, whose errors on damaged bytes are these two.
           SyntaxError, tokenize.TokenError)

#: Entries of a file written by :func:`scipy.sparse.save_npz`.
SPARSE_KEYS = {"format", "shape", "data"}


# ---- NumPy files


def _too_large(path, exc):
    return InputError(
        f"{path}: too large to load into the memory available ({_short(exc)}); use a machine "
        "with more memory, or fewer rows (e.g. a slice saved with np.save)."
    )


def _check_npy_header(fh, path, available, member=None):
    """Read an .npy header and refuse what the bytes cannot hold, before any allocation.

    A header may declare any shape and NumPy allocates it before reading, so a few
    damaged bytes could ask for petabytes. ``available`` is the payload's size;
    ``member`` the array's name inside an .npz.
    """
    where = f"{path}:" if member is None else f"{path}: array {member!r}"
    try:
        version = np.lib.format.read_magic(fh)
        read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                else np.lib.format.read_array_header_2_0)
        shape, _, dtype = read(fh)
    except DAMAGED as exc:
        what = "not a valid .npy file" if member is None else "is not a valid .npy array"
        raise InputError(f"{where} {what} ({_short(exc)}); save it with np.save.") from None
    if dtype.hasobject:
        raise InputError(
            f"{where} holds Python objects (a pickled array), which are never loaded; "
            "save a numeric array with np.save."
        )
    needed = math.prod(shape) * dtype.itemsize
    held = available - fh.tell()
    if needed > held:
        raise InputError(
            f"{where} declares shape {shape} of {dtype} ({needed} bytes) but holds "
            f"{max(held, 0)} bytes of data: the file is truncated or damaged; save it again."
        )


def load_npy(path):
    """The array of an .npy file (no pickles); damaged files raise InputError.

    float32/float64 arrays are memory-mapped read-only: pages are read when a
    block is used, so a file larger than memory works and nothing is loaded twice.
    Other dtypes are loaded (and converted by the caller).
    """
    with _read_errors(path, ".npy", "save it with np.save"):
        with open(path, "rb") as fh:
            _check_npy_header(fh, path, os.fstat(fh.fileno()).st_size)
        X = np.load(path, mmap_mode="r", allow_pickle=False)
        return X if X.dtype in (np.float32, np.float64) else np.array(X)


@contextmanager
def _read_errors(path, kind, fix):
    """Reading ``path``: a damaged file becomes an InputError naming ``fix``, and
    running out of memory one naming the size; our own InputErrors pass as they are."""
    try:
        yield
    except InputError:
        raise
    except MemoryError as exc:
        raise _too_large(path, exc) from None
    except DAMAGED as exc:
        raise InputError(f"{path}: not a valid {kind} file ({_short(exc)}); {fix}.") from None


def check_npz_members(path):
    """Check every member's header against its size before NumPy reads any."""
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if info.filename.endswith(".npy"):
                with archive.open(info) as fh:
                    _check_npy_header(fh, path, info.file_size, member=info.filename[:-4])


def load_npz(path, key=None, allow_sparse=True, result_key=None):
    """One array of an .npz file: ``(array, key)``; a scipy sparse file as a matrix.

    Without ``key``: the array named by the entry ``result_key`` when present, or
    the only array. Damaged files raise InputError.
    """
    with _read_errors(path, ".npz", "save it with np.savez"):
        if not zipfile.is_zipfile(path):
            raise InputError(
                f"{path}: not a valid .npz file (not a zip archive); save it with np.savez."
            )
        check_npz_members(path)
        with np.load(path, allow_pickle=False) as content:
            return _npz_entry(content, path, key, allow_sparse, result_key)


def write_npz(fh, arrays):
    """``np.savez(fh, **arrays)`` into an open binary file, quiet when a write fails.

    NumPy 1.x's ``savez`` leaves its zip archive open when a write fails (a full
    disk, a file-size limit); the garbage collector closes the archive later,
    writing to the file we have closed by then, and Python prints that second
    error's traceback after our one-line message. Through :class:`_DropAfterFailure`
    that late close writes nothing.
    """
    np.savez(_DropAfterFailure(fh), **arrays)


class _DropAfterFailure:
    """A binary file that, once an operation has failed, drops all later writes.

    It keeps counting positions as if they had been written, so that the zip
    archive's late close finds the offsets it expects and ends without an error.
    """

    def __init__(self, fh):
        self._fh = fh
        self._failed = False
        self._position = fh.tell()

    def _call(self, name, *args):
        try:
            return getattr(self._fh, name)(*args)
        except OSError:
            self._failed = True
            raise

    def write(self, data):
        size = memoryview(data).nbytes
        if not self._failed:
            self._call("write", data)
        self._position += size
        return size

    def read(self, *args):  # numpy takes an object without `read` for a path
        return b"" if self._failed else self._call("read", *args)

    def tell(self):
        if not self._failed:
            self._position = self._call("tell")
        return self._position

    def seek(self, offset, whence=os.SEEK_SET):
        if not self._failed:
            self._position = self._call("seek", offset, whence)
        elif whence == os.SEEK_SET:
            self._position = offset
        elif whence == os.SEEK_CUR:
            self._position += offset
        return self._position

    def flush(self):
        if not self._failed:
            self._call("flush")


def _npz_entry(content, path, key, allow_sparse, result_key):
    names = list(content.files)
    if SPARSE_KEYS <= set(names) and key is None:
        return _load_sparse(path, allow_sparse), None
    if key is None:
        if result_key in names:
            key = str(content[result_key])
        elif len(names) == 1:
            key = names[0]
        else:
            raise InputError(
                f"{path}: holds several arrays ({', '.join(names) or 'none'}); choose one with "
                f"--key, e.g. --key {names[0] if names else 'X'}."
            )
    if key not in names:
        raise InputError(
            f"{path}: has no array named {key!r} (it holds: {', '.join(names) or 'nothing'}); "
            "pass --key with one of those names."
        )
    try:
        return content[key], key
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise InputError(
                f"{path}: array {key!r} holds Python objects, which are never loaded; "
                "save a numeric array."
            ) from None
        raise


def _load_sparse(path, allow_sparse):
    import scipy.sparse

    matrix = scipy.sparse.load_npz(path)
    if hasattr(matrix, "check_format"):
        # load_npz trusts the file; indices out of range would crash tocsr().
        # Checked here first, in words of our own: scipy's differ across versions
        # ("row index values must be < 3" before 1.11, "indices must be < 3" after).
        _check_sparse_indices(matrix)
        matrix.check_format(full_check=True)
    if allow_sparse:
        return matrix.tocsr()
    try:
        return matrix.toarray()
    except (MemoryError, ValueError) as exc:  # ValueError: "array is too big"
        raise _too_large(path, exc) from None


def _check_sparse_indices(matrix):
    """Raise ValueError when a CSR/CSC matrix has a column (row) index out of range."""
    if matrix.format not in ("csr", "csc") or not matrix.indices.size:
        return
    bound = matrix.shape[1] if matrix.format == "csr" else matrix.shape[0]
    if matrix.indices.min() < 0:
        raise ValueError("indices must be >= 0")
    if matrix.indices.max() >= bound:
        raise ValueError(f"indices must be < {bound}")


# ---- delimited text


def _is_number(cell):
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _data_lines(path, delimiter):
    """Yield (line number, cells) for every non-blank, non-comment row."""
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=True)
        for cells in reader:
            stripped = [c.strip() for c in cells]
            if not any(stripped) or stripped[0].startswith("#"):
                continue
            yield reader.line_num, stripped


def _read_delimited(path, delimiter):
    name = "TSV" if delimiter == "\t" else "CSV"
    rows = _data_lines(path, delimiter)
    first = next(rows, None)
    if first is None:
        raise InputError(
            f"{path}: the {name} file has no data rows; "
            "give at least one row of numbers."
        )
    header_line = first[0] if not any(_is_number(c) for c in first[1]) else 0
    if header_line and next(rows, None) is None:
        raise InputError(
            f"{path}: the {name} file has a header but no data rows; "
            "add rows of numbers."
        )
    try:
        # Fast C parser for the common, well-formed case.
        X = np.loadtxt(path, delimiter=delimiter, comments="#", skiprows=header_line,
                       ndmin=2, quotechar='"', encoding="utf-8")
    except ValueError:
        X = None
    if X is None or not np.all(np.isfinite(X)):
        # Either malformed or with missing values: find the first bad cell by line.
        _diagnose_delimited(path, delimiter, header_line, name)
        if X is None:  # pragma: no cover - loadtxt failed on a file we could not fault
            raise InputError(
                f"{path}: could not parse the {name} file; "
                "save plain numbers, one row per line."
            )
    return X


def _diagnose_delimited(path, delimiter, header_line, name):
    n_columns = None
    for line, cells in _data_lines(path, delimiter):
        if line <= header_line:
            continue
        if n_columns is None:
            n_columns = len(cells)
        if len(cells) != n_columns:
            raise InputError(
                f"{path}: line {line} has {len(cells)} fields but earlier rows have {n_columns} "
                f"(ragged {name}); give every row the same number of values."
            )
        for col, cell in enumerate(cells, start=1):
            if cell == "":
                raise InputError(
                    f"{path}: line {line}, column {col} is empty; fill in the missing value "
                    "or drop the row."
                )
            if not _is_number(cell):
                raise InputError(
                    f"{path}: line {line}, column {col} holds {cell[:30]!r}, which is not a "
                    f"number; the {name} must be numeric (only an optional header row may hold "
                    "names)."
                )
            if not np.isfinite(float(cell)):
                raise InputError(
                    f"{path}: line {line}, column {col} is {cell!r} (NaN or infinite); "
                    "remove or impute the missing values first."
                )


def _read_label_lines(path, n_samples=None):
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    values = []
    for line, cells in _data_lines(path, delimiter):
        if len(cells) != 1:
            raise InputError(
                f"{path}: line {line} has {len(cells)} fields; a labels file holds one label "
                "per line."
            )
        values.append(cells[0])
    if not values:
        raise InputError(f"{path}: no labels found; write one label per line.")
    numeric = [_is_number(v) for v in values]
    header = (not numeric[0] and len(values) > 1 and all(numeric[1:])) or (
        n_samples is not None and len(values) == n_samples + 1)
    if header:  # a header line above the labels
        values, numeric = values[1:], numeric[1:]
    if all(numeric):
        numbers = np.array([float(v) for v in values])
        return numbers.astype(np.int64) if np.all(numbers == np.round(numbers)) else numbers
    return np.array(values)


# ---- images


def _natural_key(path):
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", path.name)]


def _files(folder, suffixes):
    return sorted((p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes),
                  key=_natural_key)


def _image_files(folder):
    return _files(folder, IMAGE_SUFFIXES)


def _read_image_folder(folder):
    from PIL import Image, UnidentifiedImageError

    files = _image_files(folder)
    if not files:
        raise InputError(
            f"{folder}: the folder holds no .png or .pgm images; put one image per sample "
            "in it, or pass a .npy/.npz/.csv file."
        )
    images = []
    for file in files:
        try:
            with Image.open(file) as image:
                _check_raw_size(image, file)
                images.append(_image_to_array(image))
        except MemoryError as exc:
            raise _too_large(file, exc) from None
        except (UnidentifiedImageError, Image.DecompressionBombError, SyntaxError, *DAMAGED) as exc:
            # PIL's decoders raise many kinds of errors on damaged files.
            raise InputError(
                f"{file}: not a readable image ({_short(exc)}); replace or remove it."
            ) from None
        if images[-1].shape != images[0].shape:
            raise InputError(
                f"{file}: image of size {'x'.join(map(str, images[-1].shape))} but "
                f"{files[0].name} is {'x'.join(map(str, images[0].shape))}; all images in "
                "the folder must have the same size."
            )
    stack = np.stack(images)
    return stack.reshape(len(stack), -1), stack.shape[1:]


def _check_raw_size(image, file):
    """Refuse an uncompressed image (PGM/PPM) whose header declares more pixels than
    the file holds, before decoding allocates them all."""
    if image.format != "PPM" or not image.tile or image.tile[0][0] != "raw":
        return
    raw_mode = image.tile[0][3]
    raw_mode = raw_mode[0] if isinstance(raw_mode, tuple) else raw_mode
    bytes_per_pixel = {"1": 1 / 8, "L": 1, "I;16B": 2, "I;16": 2, "RGB": 3}.get(raw_mode)
    if bytes_per_pixel is None:
        return
    held = file.stat().st_size - image.tile[0][2]
    if image.width * image.height * bytes_per_pixel > held:
        raise InputError(
            f"{file}: declares {image.width} x {image.height} pixels but holds only {max(held, 0)} "
            "bytes of them: the image is truncated or damaged; replace or remove it."
        )


def _image_to_array(image):
    """Pixels scaled to [0, 1]: grey images as (h, w), colour as (h, w, 3)."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        pixels = np.asarray(image, dtype=np.float64)
        top = 65535.0 if image.mode.startswith("I;16") else max(float(pixels.max()), 1.0)
        return (pixels / top).astype(np.float32)
    if image.mode in ("1", "L", "LA") or (image.mode == "P" and _palette_is_grey(image)):
        return np.asarray(image.convert("L"), dtype=np.float32) / 255
    return np.asarray(image.convert("RGB"), dtype=np.float32) / 255


def _palette_is_grey(image):
    palette = np.asarray(image.convert("RGB"))
    return bool(np.all(palette[..., 0] == palette[..., 1])
                and np.all(palette[..., 1] == palette[..., 2]))


def _short(exc):
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
