"""Loaders for the real datasets of the papers' experiments.

Nothing is downloaded: every loader reads files from a folder, by default the one
named by the environment variable ``LANDMARKING_DATA`` (else ``../shared/data``
relative to the working directory). The files and their layout are described in
that folder's README.
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
from pathlib import Path

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["data_dir", "data_available", "load_mnist", "load_newsgroups",
           "load_faces", "load_coil20", "load_gtzan", "FACE_SETS"]

#: Face collections available to :func:`load_faces`, with their file names.
FACE_SETS = {
    "olivetti": "faces_olivetti_64x64.npz",
    "orl": "faces_orl_92x112.npz",
    "yale": "faces_yale_32x32.npz",
    "yaleB": "faces_yaleB_32x32.npz",
}


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """The data folder: ``path``, else ``$LANDMARKING_DATA``, else ``../shared/data``."""
    if path is not None:
        return Path(path)
    return Path(os.environ.get("LANDMARKING_DATA", Path("..") / "shared" / "data"))


def data_available(relative: str | os.PathLike, path: str | os.PathLike | None = None) -> bool:
    """Whether the file ``relative`` exists in the data folder."""
    return (data_dir(path) / relative).exists()


def _require(relative, path):
    file = data_dir(path) / relative
    if not file.exists():
        raise FileNotFoundError(
            f"{file} not found; set LANDMARKING_DATA to the folder that holds the "
            "datasets (see ../shared/data/README.md) or pass path=."
        )
    return file


def _read_idx(file):
    raw = gzip.open(file).read()
    n_dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(n_dims)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * n_dims).reshape(shape)


def load_mnist(
    path: str | os.PathLike | None = None,
    *,
    split: str = "train",
    flatten: bool = True,
    scale: bool = True,
    dtype: DTypeLike = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """MNIST digits from the four original IDX files.

    Parameters
    ----------
    path : str or Path, optional
        Data folder (holding ``mnist/``); default from :func:`data_dir`.
    split : {"train", "test"}
        60,000 training or 10,000 test images.
    flatten : bool
        Return images as rows of 784 pixels instead of 28 x 28 arrays.
    scale : bool
        Divide pixels by 255 (values in [0, 1]); else keep 0-255.
    dtype : numpy dtype
        Output dtype of the images.

    Returns
    -------
    images : ndarray (n, 784) or (n, 28, 28)
    labels : ndarray of shape (n,), int64

    Examples
    --------
    >>> X, y = load_mnist(split="test")  # doctest: +SKIP
    >>> X.shape, X.dtype  # doctest: +SKIP
    ((10000, 784), dtype('float32'))
    """
    prefix = {"train": "train", "test": "t10k"}.get(split)
    if prefix is None:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}.")
    images = _read_idx(_require(f"mnist/{prefix}-images-idx3-ubyte.gz", path))
    labels = _read_idx(_require(f"mnist/{prefix}-labels-idx1-ubyte.gz", path))
    images = images.astype(dtype)
    if scale:
        images /= 255
    if flatten:
        images = images.reshape(len(images), -1)
    return images, labels.astype(np.int64)


def load_newsgroups(
    path: str | os.PathLike | None = None, *, subset: str = "train"
) -> tuple[list[str], np.ndarray, list[str]]:
    """20 Newsgroups "bydate" posts (raw text with headers).

    Returns
    -------
    documents : list of str
    labels : ndarray of shape (n,), int64
    target_names : list of str
    """
    if subset not in ("train", "test"):
        raise ValueError(f"subset must be 'train' or 'test', got {subset!r}.")
    with lzma.open(_require("20newsgroups_bydate.json.xz", path)) as fh:
        content = json.loads(fh.read())
    part = content[subset]
    return part["data"], np.asarray(part["target"], dtype=np.int64), content["target_names"]


def load_faces(
    name: str = "olivetti", path: str | os.PathLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A face collection: ``images`` (n, h, w) uint8 and ``target`` subject ids.

    ``name`` is one of :data:`FACE_SETS`: "olivetti" (400, 64x64), "orl" (400,
    112x92), "yale" (165, 32x32), "yaleB" (2414, 32x32).
    """
    if name not in FACE_SETS:
        raise ValueError(f"name must be one of {sorted(FACE_SETS)}, got {name!r}.")
    with np.load(_require(FACE_SETS[name], path)) as data:
        return data["images"], data["target"].astype(np.int64)


def load_coil20(path: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """COIL-20: ``images`` (1440, 32, 32) float32, ``target`` object, ``pose``."""
    with np.load(_require("coil20_32x32.npz", path)) as data:
        return data["images"], data["target"].astype(np.int64), data["pose"].astype(np.int64)


def load_gtzan(path: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """GTZAN clip features: ``X`` (1000, 57), ``target`` genre, ``label_names``."""
    with np.load(_require("gtzan_features_30sec.npz", path)) as data:
        return data["X"], data["target"].astype(np.int64), list(data["label_names"])
