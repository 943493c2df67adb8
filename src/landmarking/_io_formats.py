"""File formats behind :mod:`landmarking.io`: delimited text and folders of images.

Private: :mod:`landmarking.io` is the interface. Every problem raises
:class:`InputError` with a one-line message naming the file, the problem and the fix.
"""

import csv
import re

import numpy as np

#: Image files a data folder may hold.
IMAGE_SUFFIXES = (".png", ".pgm")


class InputError(ValueError):
    """A problem with a user's file or option; the message names the fix."""


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
                images.append(_image_to_array(image))
        except (OSError, UnidentifiedImageError) as exc:
            raise InputError(
                f"{file}: not a readable image ({_short(exc)}); "
                "replace or remove it."
            ) from None
        if images[-1].shape != images[0].shape:
            raise InputError(
                f"{file}: image of size {'x'.join(map(str, images[-1].shape))} but "
                f"{files[0].name} is {'x'.join(map(str, images[0].shape))}; all images in "
                "the folder must have the same size."
            )
    stack = np.stack(images)
    return stack.reshape(len(stack), -1), stack.shape[1:]


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
