"""Reading data files and writing results for the command line (and for scripts).

Readers turn a file on disk into a 2-D float array (or a scipy sparse matrix):

* ``.npy``: one array (no pickles);
* ``.npz``: the array named by ``key``, or the only array in the file, or the
  result array of a file written by :func:`write_result`; a file written by
  :func:`scipy.sparse.save_npz` is read as a sparse matrix;
* ``.csv`` / ``.tsv``: numeric cells, an optional header row (a first row with no
  numeric cell), ``#`` comment lines skipped;
* a folder of ``.png`` / ``.pgm`` images of one size, one image per row.

Every problem with a file raises :class:`InputError`, whose one-line message names
the file, the problem and the fix. Writers store a result together with the
parameters, the library version and the input checksum that produced it, and
never overwrite an existing file unless asked to.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ._blocks import block_bounds, find_nonfinite_row, reduce_row_blocks, take_rows
from ._io_formats import (
    DAMAGED,
    IMAGE_SUFFIXES,
    InputError,
    _files,
    _read_delimited,
    _read_image_folder,
    _read_label_lines,
    _short,
    check_npz_members,
    load_npy,
    load_npz,
    write_npz,
)
from ._memory import proc_field
from ._typing import ArrayLike, DTypeLike, StrPath

__all__ = [
    "InputError",
    "DataFile",
    "array_writer",
    "read_data",
    "read_labels",
    "read_result",
    "read_corpus",
    "write_result",
    "check_output",
    "output_format",
    "input_sha256",
    "parse_image_shape",
    "IMAGE_SUFFIXES",
    "RESULT_KEY",
]

#: Name of the entry of a result ``.npz`` that names its main array.
RESULT_KEY = "landmarking_result"
_DATA_SUFFIXES = (".npy", ".npz", ".csv", ".tsv", ".zarr")


@dataclass
class DataFile:
    """What :func:`read_data` found in a file.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features) or scipy sparse matrix
        The data, one sample per row, float32 or float64.
    path : Path
        The file or folder it came from.
    image_shape : tuple of int or None
        The shape of one image when the file held images (a folder of images, or
        an array of shape (n, height, width)).
    key : str or None
        The ``.npz`` entry that was read.
    """

    X: object
    path: Path
    image_shape: tuple = None
    key: str = None


# --------------------------------------------------------------------- readers


def read_data(path: StrPath, *, key: str | None = None,
              image_shape: tuple[int, ...] | None = None,
              allow_sparse: bool = True) -> DataFile:
    """Read a data matrix (one sample per row) from a file or a folder of images.

    Parameters
    ----------
    path : str or Path
        A ``.npy`` (memory-mapped, read-only: never loaded whole), ``.npz``,
        ``.csv`` or ``.tsv`` file, a Zarr array store (a folder named ``*.zarr``;
        read chunk by chunk, needs the ``scale`` extra), or a folder of PNG/PGM
        images of equal size.
    key : str, optional
        The array to read from an ``.npz`` file holding several.
    image_shape : tuple of int, optional
        The shape of one image, checked against the number of columns.
    allow_sparse : bool
        Return a scipy sparse matrix for a sparse ``.npz`` (else densify it).

    Returns
    -------
    DataFile
        ``X`` is a finite 2-D array of numbers: float32 kept as float32, other
        in-memory types as float64; a memory map or Zarr array keeps its dtype (the
        library converts it one block at a time).

    Raises
    ------
    InputError
        With a one-line message naming the file, the problem and the fix.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "points.csv"
    >>> _ = file.write_text("x,y\\n0,1\\n2,3\\n")
    >>> read_data(file).X
    array([[0., 1.],
           [2., 3.]])
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder; check the name and the working folder.")
    if path.is_dir() and path.suffix.lower() == ".zarr":
        if key is not None:
            raise InputError(
                f"{path}: --key applies to .npz files, but this is a Zarr store; drop --key."
            )
        data = DataFile(_open_zarr(path), path)
    elif path.is_dir():
        if key is not None:
            raise InputError(
                f"{path}: --key applies to .npz files, but this is a folder; drop --key."
            )
        X, found_shape = _read_image_folder(path)
        data = DataFile(X, path, found_shape)
    else:
        suffix = path.suffix.lower()
        if suffix not in _DATA_SUFFIXES:
            raise InputError(
                f"{path}: cannot read files ending in {suffix or '(no extension)'!r}; "
                "give a .npy, .npz, .csv or .tsv file or a folder of .png/.pgm images."
            )
        if key is not None and suffix != ".npz":
            raise InputError(f"{path}: --key applies to .npz files only; drop --key.")
        if suffix == ".npy":
            data = DataFile(_load_npy(path), path)
        elif suffix == ".npz":
            array, key = _load_npz(path, key, allow_sparse)
            data = DataFile(array, path, key=key)
        else:
            data = DataFile(_read_delimited(path, "\t" if suffix == ".tsv" else ","), path)
    data.X, found_shape = _as_matrix(data.X, path)
    data.image_shape = data.image_shape or found_shape
    if image_shape is not None:
        image_shape = tuple(int(s) for s in image_shape)
        if int(np.prod(image_shape)) != data.X.shape[1]:
            raise InputError(
                f"{path}: image shape {'x'.join(map(str, image_shape))} has "
                f"{int(np.prod(image_shape))} pixels but the data has {data.X.shape[1]} "
                "columns; pass the height x width of one image (e.g. --image-shape 28x28)."
            )
        data.image_shape = image_shape
    return data


def read_labels(path: StrPath, n_samples: int | None = None, *,
                key: str | None = None) -> np.ndarray:
    """Read one label per sample (numbers or names) from a file.

    Parameters
    ----------
    path : str or Path
        ``.npy``, ``.npz`` (with ``key`` or a single array), or a text file
        (``.csv``, ``.tsv``, ``.txt``) with one label per line and an optional
        header line.
    n_samples : int, optional
        The number of data rows; a different number of labels is an error.
    key : str, optional
        The array to read from an ``.npz`` file.

    Returns
    -------
    ndarray of shape (n_samples,)
        Numbers as a float or int array, names as a string array.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "labels.txt"
    >>> _ = file.write_text("label\\ncat\\ndog\\n")
    >>> read_labels(file, 2)
    array(['cat', 'dog'], dtype='<U3')
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such labels file; check the name passed to --labels.")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        labels = _load_npy(path)
    elif suffix == ".npz":
        labels, _ = _load_npz(path, key, allow_sparse=False)
    elif suffix in (".csv", ".tsv", ".txt"):
        labels = _read_label_lines(path, n_samples)
    else:
        raise InputError(
            f"{path}: cannot read labels from {suffix or '(no extension)'!r} files; "
            "give a .npy, .npz, .csv, .tsv or .txt file."
        )
    labels = np.asarray(labels)
    if labels.ndim == 2 and 1 in labels.shape:
        labels = labels.ravel()
    if labels.ndim != 1:
        raise InputError(
            f"{path}: labels must be one value per sample, got an array of shape "
            f"{labels.shape}; save a 1-D array."
        )
    if n_samples is not None and len(labels) != n_samples:
        raise InputError(
            f"{path}: {len(labels)} labels for {n_samples} data rows; give one label per row "
            "of the data, in the same order."
        )
    return labels


def read_result(path: StrPath, required: Sequence[str] = ()) -> dict[str, Any]:
    """Read a result ``.npz`` written by :func:`write_result`.

    Parameters
    ----------
    path : str or Path
    required : sequence of str
        Entries that must be present (e.g. ``("landmarks", "kernel_width")``).

    Returns
    -------
    dict
        The arrays by name; ``"parameters"`` decoded from JSON to a dict, and
        ``"version"``, ``"input_sha256"`` and ``"command"`` as strings.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "r.npz"
    >>> write_result(file, {"landmarks": np.eye(2)}, parameters={"n": 2})
    >>> read_result(file, required=["landmarks"])["parameters"]
    {'n': 2}
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(
            f"{path}: no such file; give the .npz written by an earlier landmarking run."
        )
    if path.suffix.lower() != ".npz":
        raise InputError(
            f"{path}: expected the .npz file written by landmarking (a {path.suffix or 'file'} "
            "does not keep the parameters); rerun that step with -o NAME.npz."
        )
    try:
        if not zipfile.is_zipfile(path):
            raise ValueError("not a zip archive")
        check_npz_members(path)
        with np.load(path, allow_pickle=False) as content:
            out = {name: content[name] for name in content.files}
        for name in ("version", "input_sha256", "command", RESULT_KEY):
            if name in out:
                out[name] = str(out[name])
        if "parameters" in out:
            out["parameters"] = json.loads(str(out["parameters"]))
            if not isinstance(out["parameters"], dict):
                raise ValueError("its parameters are not a JSON object")
    except InputError:
        raise
    except (MemoryError, RecursionError, *DAMAGED) as exc:
        raise InputError(
            f"{path}: not a readable .npz file ({_short(exc)}); pass a file written by landmarking."
        ) from None
    missing = [name for name in required if name not in out]
    if missing:
        raise InputError(
            f"{path}: has no {', '.join(repr(m) for m in missing)} entry (it holds: "
            f"{', '.join(sorted(out)) or 'nothing'}); pass the file written by the matching "
            "landmarking command."
        )
    return out


def read_corpus(path: StrPath, *, field: str = "text") -> tuple[list[str], list[str]]:
    """Read documents: a folder of ``.txt`` files, or a ``.jsonl`` file.

    Parameters
    ----------
    path : str or Path
        A folder (every ``*.txt`` in it, in natural name order, is one document)
        or a ``.jsonl`` file (one JSON object per line).
    field : str
        The text field of each JSON object.

    Returns
    -------
    documents : list of str
    names : list of str
        File names, or ``"line N"`` for a ``.jsonl`` file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "docs.jsonl"
    >>> _ = file.write_text('{"text": "one fish"}\\n{"text": "two fish"}\\n')
    >>> read_corpus(file)[0]
    ['one fish', 'two fish']
    """
    path = Path(path)
    if path.is_dir():
        files = _files(path, (".txt",))
        if not files:
            raise InputError(
                f"{path}: the folder holds no .txt files; put one document per .txt file in it."
            )
        texts = [f.read_text(encoding="utf-8", errors="replace") for f in files]
        return texts, [f.name for f in files]
    if not path.is_file():
        raise InputError(
            f"{path}: no such file or folder; give a folder of .txt files or a .jsonl file."
        )
    if path.suffix.lower() != ".jsonl":
        raise InputError(
            f"{path}: a corpus is a folder of .txt files or a .jsonl file, not a "
            f"{path.suffix or 'file without extension'}; convert it to one of those."
        )
    documents, names = [], []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line_number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
                raise InputError(
                    f"{path}: line {line_number} is not valid JSON ({reason}); write one JSON "
                    "object per line."
                ) from None
            if not isinstance(record, dict) or not isinstance(record.get(field), str):
                keys = ", ".join(record) if isinstance(record, dict) else type(record).__name__
                raise InputError(
                    f"{path}: line {line_number} has no text field {field!r} (found: {keys}); "
                    "name the field with --field."
                )
            documents.append(record[field])
            names.append(f"line {line_number}")
    if not documents:
        raise InputError(f"{path}: no documents found; write one JSON object per line.")
    return documents, names


def parse_image_shape(text: str) -> tuple[int, ...]:
    """Parse ``"28x28"`` (or ``"32x32x3"``) into a tuple of positive ints.

    Examples
    --------
    >>> parse_image_shape("28x28")
    (28, 28)
    """
    parts = re.split(r"[x,X*]", str(text).strip())
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        shape = ()
    if len(shape) not in (2, 3) or min(shape) < 1:
        raise InputError(
            f"--image-shape {text!r} is not HEIGHTxWIDTH; "
            "write it like 28x28 (or 32x32x3 for colour)."
        )
    return shape


def input_sha256(path: StrPath, suffixes: Sequence[str] = IMAGE_SUFFIXES) -> str:
    """SHA-256 of a file's bytes, or of a folder's files (names and bytes).

    Parameters
    ----------
    path : str or Path
    suffixes : tuple of str
        In a folder, the files that count (default: the images); others are ignored.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "a.csv"
    >>> _ = file.write_text("1\\n")
    >>> input_sha256(file)[:12]
    '4355a46b19d3'
    """
    path = Path(path)
    digest = hashlib.sha256()
    files = _files(path, suffixes) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(file.name.encode() + b"\0")
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _open_zarr(path):
    try:
        import zarr
    except ImportError:
        raise InputError(
            f"{path}: reading Zarr stores needs the zarr package; install the scale extra "
            "(pip install 'landmarking[scale]')."
        ) from None
    try:
        return zarr.open_array(str(path), mode="r")
    except Exception as exc:  # zarr raises several kinds for a folder that is no array
        raise InputError(
            f"{path}: not a readable Zarr array ({_short(exc)}); write one with "
            "zarr.create_array or dask.array.to_zarr."
        ) from None


def _load_npy(path):
    return load_npy(path)


def _load_npz(path, key, allow_sparse):
    return load_npz(path, key, allow_sparse, result_key=RESULT_KEY)


def _as_matrix(X, path):
    """Check dtype, dimensions and finiteness; return (2-D float data, image shape)."""
    if hasattr(X, "tocsr"):
        if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
            raise InputError(
                f"{path}: sparse matrix of dtype {X.dtype} is not real-valued; save real numbers."
            )
        if min(X.shape) == 0:
            raise InputError(
                f"{path}: the data is empty (shape {X.shape}); "
                "give at least one row and one column."
            )
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        if not np.all(np.isfinite(X.data)):
            row = int(X.tocoo().row[~np.isfinite(X.tocoo().data)][0])
            raise InputError(
                f"{path}: contains NaN or infinite values (first in row {row + 1}); "
                "remove or impute those entries first."
            )
        return X, None
    out_of_core = not isinstance(X, np.ndarray) or isinstance(X, np.memmap)
    if not out_of_core:
        X = np.asarray(X)
    if X.dtype == bool and not out_of_core:
        X = X.astype(np.float64)
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise InputError(
            f"{path}: holds {X.dtype} values, not real numbers; save a numeric array "
            "(text labels belong in a separate --labels file)."
        )
    image_shape = None
    if X.ndim in (3, 4) and isinstance(X, np.ndarray):
        # (n, height, width[, channels]): a stack of images, one per row.
        image_shape = X.shape[1:]
        X = X.reshape(X.shape[0], int(np.prod(X.shape[1:])))
    if X.ndim != 2:
        raise InputError(
            f"{path}: the data must be a 2-D array (one sample per row), got "
            f"{X.ndim}-D shape {X.shape}; reshape it, e.g. X.reshape(-1, 1) for one feature."
        )
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise InputError(
            f"{path}: the data is empty (shape {X.shape}); give at least one row and one column."
        )
    if out_of_core:
        # Checked block by block; the library converts each block when it reads it.
        if find_nonfinite_row(X) >= 0:
            bounds = block_bounds(X)
            parts = reduce_row_blocks(_nonfinite_cells, X, bounds=bounds)
            # bounds has one entry more than parts (the end of the last block): unpaired.
            cells = np.concatenate(
                [part + [start, 0] for start, part in zip(bounds, parts, strict=False)]
            )
            _raise_nonfinite(path, cells, take_rows(X, cells[:1, 0]))
        return X, image_shape
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    bad = ~np.isfinite(X)
    if bad.any():
        _raise_nonfinite(path, np.argwhere(bad), X[np.argwhere(bad)[0, 0]:])
    return X, image_shape


def _nonfinite_cells(block):
    return np.argwhere(~np.isfinite(block))


def _raise_nonfinite(path, cells, rows):
    """InputError for the first non-finite cell.

    ``cells`` are the (row, column) pairs of all non-finite values, ``rows`` the
    data's rows from the first of them on.
    """
    row, col = (int(i) for i in cells[0])
    kind = "NaN" if np.isnan(rows[0, col]) else "infinite"
    raise InputError(
        f"{path}: {kind} value in row {row + 1}, column {col + 1} "
        f"({len(np.unique(cells[:, 0]))} rows affected); remove or impute those rows first "
        "(e.g. sklearn.impute.SimpleImputer)."
    )


# --------------------------------------------------------------------- writers


@contextmanager
def array_writer(path: StrPath, shape: tuple[int, int], dtype: DTypeLike, *,
                 force: bool = False, chunk_rows: int = 100_000) -> Iterator[Any]:
    """An array to fill block by block, that becomes ``path`` only when complete.

    ``path`` ends in ``.npy`` (a memory-mapped file) or ``.zarr`` (a Zarr store with
    ``chunk_rows``-row chunks, written by Dask workers in parallel). The array is
    written under a temporary name in the same folder and renamed at the end, so
    an interrupted run leaves no partial output.
    """
    path = Path(path)
    if path.exists() and not force:
        raise InputError(
            f"{path}: already exists; pass --force to overwrite it, or choose another -o name."
        )
    if not path.parent.exists():
        raise InputError(f"{path}: the folder {path.parent} does not exist; create it first.")
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial{path.suffix}")
    try:
        if path.suffix.lower() == ".zarr":
            import zarr

            out = zarr.create_array(store=str(temporary), shape=shape, dtype=dtype,
                                    chunks=(min(chunk_rows, max(1, shape[0])), shape[1]),
                                    overwrite=True)
        else:
            out = np.lib.format.open_memmap(temporary, mode="w+", dtype=dtype, shape=shape)
        yield out
        if isinstance(out, np.memmap):
            out.flush()
            del out
        if path.is_dir():
            shutil.rmtree(path)
        os.replace(temporary, path)
    finally:
        if temporary.is_dir():
            shutil.rmtree(temporary)
        elif temporary.exists():
            temporary.unlink()


def output_format(path: StrPath, fmt: str | None = None) -> str:
    """The output format for ``path``: ``fmt`` if given, else from the extension.

    Examples
    --------
    >>> output_format("out.csv")
    'csv'
    """
    suffix = Path(path).suffix.lower()
    by_suffix = {".npz": "npz", ".csv": "csv", ".tsv": "tsv"}.get(suffix)
    if fmt is None:
        if by_suffix is None:
            raise InputError(
                f"{path}: cannot write files ending in {suffix or '(no extension)'!r}; "
                "name the output .npz (or .csv with --format csv)."
            )
        return by_suffix
    if by_suffix != fmt:
        raise InputError(
            f"{path}: --format {fmt} needs a file name ending in .{fmt}; rename the output."
        )
    return fmt


def check_output(path: StrPath, *, force: bool = False, fmt: str | None = None,
                 option: str = "-o") -> str:
    """Fail early if ``path`` cannot be written: it exists (without ``force``),
    its folder is missing, it is a folder, or its extension does not match ``fmt``.

    Returns the format (``"npz"``, ``"csv"``, ``"tsv"`` or ``"png"``).
    """
    path = Path(path)
    if fmt == "png":
        if path.suffix.lower() != ".png":
            raise InputError(f"{path}: {option} writes a PNG image; name the file *.png.")
    else:
        fmt = output_format(path, fmt)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give {option} a file name.")
    if path.exists() and not force:
        raise InputError(
            f"{path}: already exists; "
            f"pass --force to overwrite it, or choose another {option} name."
        )
    if not path.parent.exists():
        raise InputError(f"{path}: the folder {path.parent} does not exist; create it first.")
    return fmt


def write_result(path: StrPath, arrays: Mapping[str, ArrayLike], *,
                 parameters: Mapping[str, Any] | None = None, source: StrPath | None = None,
                 command: str | None = None,
                 fmt: Literal["npz", "csv", "tsv"] | None = None, force: bool = True,
                 result: str | None = None, source_sha256: str | None = None) -> None:
    """Save arrays with the parameters, library version and input checksum.

    Parameters
    ----------
    path : str or Path
        Output file, ``.npz`` (all arrays) or ``.csv``/``.tsv`` (the main array
        only, with the metadata in ``#`` comment lines).
    arrays : dict of str to array-like
        What to save; the first entry (or ``result``) is the main array.
    parameters : dict, optional
        JSON-serialisable parameters that produced the result.
    source : str or Path, optional
        The input file or folder; its SHA-256 is stored.
    source_sha256 : str, optional
        The input's SHA-256 when already known (e.g. of a folder of text files).
    command : str, optional
        The command line that produced the result.
    fmt : {"npz", "csv", "tsv"}, optional
        Default from the extension.
    force : bool
        Overwrite an existing file.
    result : str, optional
        The name of the main array; default the first key of ``arrays``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "emb.npz"
    >>> write_result(file, {"embedding": np.zeros((3, 2))}, parameters={"d": 2})
    >>> sorted(read_result(file))[:3]
    ['command', 'embedding', 'input']
    """
    from . import __version__

    path = Path(path)
    fmt = check_output(path, force=force, fmt=fmt)
    result = result or next(iter(arrays))
    meta = {
        RESULT_KEY: result,
        "parameters": json.dumps(_jsonable(parameters or {}), sort_keys=True),
        "version": __version__,
        "input": "" if source is None else str(source),
        "input_sha256": source_sha256 or ("" if source is None else input_sha256(source)),
        "command": command or "",
    }
    # Write to a temporary file and rename, so that an interrupted write never
    # leaves a truncated result where a good one was.
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates the file 0600 and os.replace keeps that mode; give it the
        # mode any new file gets (0644 under umask 022) so results can be shared.
        if hasattr(os, "fchmod"):
            os.fchmod(handle, 0o666 & ~current_umask())
        with os.fdopen(handle, "wb") as fh:
            if fmt == "npz":
                entries = {name: _plain_array(value) for name, value in arrays.items()
                           if value is not None}
                entries.update({name: np.asarray(value) for name, value in meta.items()})
                write_npz(fh, entries)
            else:
                header = "\n".join([
                    f"landmarking {meta['version']}: {result}",
                    f"command: {meta['command']}",
                    f"input: {meta['input']} sha256 {meta['input_sha256']}",
                    f"parameters: {meta['parameters']}",
                ])
                values = np.asarray(arrays[result])
                values = values.reshape(len(values), -1) if values.ndim != 2 else values
                np.savetxt(fh, values, delimiter="," if fmt == "csv" else "\t", header=header,
                           fmt="%.9g")
            # On disk before the rename, so that a crash right after it cannot leave
            # an empty file under the result's name.
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:
            # A failed write (file-size limit, full disk) names no file; name the output.
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def current_umask():
    """The process's umask, read without changing it where the system allows.

    Files written through a temporary name get ``0o666 & ~current_umask()``, the
    mode a plain ``open`` would have given them (``mkstemp`` makes them 0600).
    """
    mask = proc_field("/proc/self/status", "Umask", base=8)
    if mask is not None:
        return mask
    # Elsewhere the only way to read it is to set it and set it back.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _plain_array(value):
    """An array that loads without pickles: object arrays (e.g. words) become strings."""
    array = np.asarray(value)
    if array.dtype == object:
        array = array.astype(str)
    return array


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Path):
        return str(value)
    return repr(value)
