"""Saving fitted estimators to a file that holds no pickles, and loading them back.

:func:`save` writes one ``.npz`` file (the zip archive :func:`numpy.savez` writes)
and :func:`load` reads it with ``np.load(..., allow_pickle=False)``, so opening a
model file never runs code from it and does not depend on the NumPy or
scikit-learn internals that break pickles across versions.

The format
----------
The archive holds one member ``__landmarking_model__``: a uint8 array of UTF-8
JSON with

- ``"format"``: ``"landmarking-model"``, and ``"format_version"``: ``[major, minor]``
  (:data:`FORMAT_VERSION`);
- ``"library_version"``: the ``landmarking.__version__`` that wrote the file (and,
  for information only, the NumPy and scikit-learn versions);
- ``"estimator"``: the estimator as a tree of values (below);
- ``"arrays"``: the names of every other member, so that a missing one is found
  before anything is built.

A value is written as plain JSON when it is ``None``, a bool, an int, a finite
float or a string, and otherwise as an object with a ``"kind"``:

=====================  =====================================================
kind                   holds
=====================  =====================================================
``ndarray``            ``"array"``: the member with the array (dtype, shape and
                       memory order kept)
``scalar``             a NumPy scalar (``np.float64``, ...) as a 0-d array member
``str_object_array``   an object array of strings (``feature_names_in_``),
                       stored as a unicode array
``float``              ``"nan"``, ``"inf"`` or ``"-inf"``
``sparse``             a scipy CSR/CSC matrix or array: members ``data``,
                       ``indices``, ``indptr``, and ``shape``, ``format``,
                       ``container``
``list``, ``tuple``    ``"items"``: the values
``dict``               ``"items"``: [key, value] pairs, string keys in order
                       (e.g. ``timings_``)
``random_state``       a ``numpy.random.RandomState`` by its Mersenne Twister state
``estimator``          ``"class"`` (a name of :data:`ESTIMATORS`, never an import
                       path), ``"params"`` (``get_params(deep=False)``) and
                       ``"state"``
``result``             a result record of the library (``RefineResult``, held in
                       ``refine_result_``): ``"class"`` (a name of
                       :data:`RESULTS`) and ``"fields"`` (format 1.1)
=====================  =====================================================

The state of an estimator is every instance attribute that is not a constructor
parameter: the fitted ``name_`` attributes and the private ones its methods read
(``ManifoldSculpting.add_samples`` needs the training data ``_X_fit``). A value
that none of the kinds above can hold (a callable, a foreign object such as an
approximate-neighbour index) is refused when saving, with the attribute's name;
nothing is silently dropped. A class may list attributes that its methods rebuild
when absent in ``_persistence_transient``; those are left out, and a class that
has a ``_restore_transient()`` method gets it called after loading, to start its
caches empty (e.g. the kept neighbour index of ``LaplacianEigenmaps``). A fitted
scikit-learn ``NearestNeighbors`` is stored as its parameters and training data
and refitted on load (its tree is a compiled object). A parameter added since a
file was written takes, when loading that file, the value the writer used in
effect, listed in the class's ``_persistence_earlier_defaults`` where that is not
the new default (``GPLandmarks``' ``block_size`` is 1 in files written before
blocks existed, not "auto"), so that a loaded model continues as it was fitted.

Compatibility
-------------
A file is read by any landmarking of the same major format version and a library
major version at least the writer's. A newer *minor* format version may add
members, top-level JSON fields, estimator parameters and fitted attributes; an
older reader ignores fields it does not know, and a file from an older writer
loads with the defaults of parameters added since. A new *kind* of value raises
the minor version: an older reader loads every file that does not use it and
refuses, saying to upgrade, one that does (format 1.1 added ``result``). A changed
meaning of an existing field or a removed parameter raises the major version, and
a reader refuses files of a newer major version (format or library) with an error
that says to upgrade. Loading a file whose estimator has a parameter
this version does not know is refused, naming the parameter. Every problem with
a file raises :class:`ModelFileError`, whose message names the file, the problem
and the fix.
"""

import dataclasses
import errno
import json
import math
import os
import re
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import sklearn
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.decomposition import NMF, PCA
from sklearn.exceptions import NotFittedError
from sklearn.manifold import LocallyLinearEmbedding, SpectralEmbedding
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_is_fitted

from ._io_formats import write_npz
from ._typing import StrPath
from .baselines.active_learning import ActiveLearningLandmarks
from .baselines.kmeans import KMeansLandmarks
from .baselines.nmf import NMFLandmarks
from .baselines.random import RandomLandmarks
from .baselines.rp_cholesky import RPCholeskyLandmarks
from .gp.estimator import GPLandmarks
from .io import InputError, current_umask
from .lll.estimator import LocallyLinearLandmarks
from .sculpting.estimator import ManifoldSculpting
from .spectral.laplacian import LaplacianEigenmaps
from .spectral.refine_eigenvectors import RefineResult

__all__ = ["save", "load", "ModelFileError", "FORMAT_NAME", "FORMAT_VERSION", "ESTIMATORS",
           "RESULTS"]

#: The ``"format"`` field of every model file.
FORMAT_NAME = "landmarking-model"
#: (major, minor) of the format this module writes; see the module docstring.
FORMAT_VERSION = (1, 1)
#: The member that holds the JSON document.
HEADER = "__landmarking_model__"

#: The classes a model file may name, by the name written in the file. Only these
#: are ever instantiated on load: a file cannot make us import anything.
ESTIMATORS = {cls.__name__: cls for cls in (
    GPLandmarks, RandomLandmarks, ActiveLearningLandmarks, RPCholeskyLandmarks,
    KMeansLandmarks, NMFLandmarks, LocallyLinearLandmarks, LaplacianEigenmaps,
    ManifoldSculpting)}
# scikit-learn estimators that the library's estimators hold or take as parameters
# (NMFLandmarks.nmf_; ManifoldSculpting(preprocess=...); landmark choices).
# Named by their public import path, which outlives scikit-learn's private modules.
ESTIMATORS.update({
    "sklearn.decomposition.NMF": NMF, "sklearn.decomposition.PCA": PCA,
    "sklearn.cluster.KMeans": KMeans, "sklearn.cluster.MiniBatchKMeans": MiniBatchKMeans,
    "sklearn.neighbors.NearestNeighbors": NearestNeighbors,
    "sklearn.manifold.LocallyLinearEmbedding": LocallyLinearEmbedding,
    "sklearn.manifold.SpectralEmbedding": SpectralEmbedding,
})
_NAME_OF = {cls: name for name, cls in ESTIMATORS.items()}
#: The library's result records (dataclasses) an estimator may hold, by name
#: (``refine_result_``); like the estimators, only these are ever built on load.
RESULTS = {cls.__name__: cls for cls in (RefineResult,)}
# Estimators whose fitted state includes a compiled object: stored as parameters
# and training data, refitted on load (the refit is deterministic).
_REFIT_FROM = {NearestNeighbors: "_fit_X"}

_MEMBER_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


class ModelFileError(InputError):
    """A file that is not a readable landmarking model; the message names the fix."""


# --------------------------------------------------------------------- encoding


class _Writer:
    """Turns values into JSON nodes and collects the arrays they refer to."""

    def __init__(self):
        self.arrays = {}

    def member(self, path, array):
        name = "/".join(_MEMBER_CHARS.sub("_", str(part)) or "_" for part in path)
        unique, k = name, 1
        while unique in self.arrays or unique == HEADER:
            k += 1
            unique = f"{name}~{k}"
        self.arrays[unique] = array
        return unique

    def value(self, value, path, where):
        # NumPy scalars first: np.float64 and np.str_ are also float and str.
        if isinstance(value, np.generic):
            if value.dtype.hasobject:
                raise _unsupported(where, value)
            return {"kind": "scalar", "array": self.member(path, np.asarray(value))}
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            if math.isfinite(value):
                return float(value)
            return {"kind": "float", "value": repr(float(value))}
        if type(value) is np.ndarray or isinstance(value, np.memmap):
            return self.ndarray(value, path, where)
        if sparse.issparse(value):
            return self.sparse(value, path, where)
        if isinstance(value, (list, tuple)):
            items = [self.value(v, (*path, i), f"{where}[{i}]") for i, v in enumerate(value)]
            return {"kind": type(value).__name__, "items": items}
        if isinstance(value, dict):
            bad = [k for k in value if not isinstance(k, str)]
            if bad:
                raise TypeError(
                    f"{where} is a dict with a key {bad[0]!r} that is not a string; a model "
                    "file stores dicts with string keys only. Convert the keys to strings."
                )
            # Pairs, not a JSON object: the order of the keys is kept (timings_).
            return {"kind": "dict", "items": [[k, self.value(v, (*path, k), f"{where}[{k!r}]")]
                                              for k, v in value.items()]}
        if type(value) is np.random.RandomState:
            name, keys, pos, has_gauss, cached = value.get_state()
            return {"kind": "random_state", "bit_generator": name,
                    "keys": self.member(path, keys), "pos": int(pos),
                    "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}
        if isinstance(value, BaseEstimator):
            return self.estimator(value, path, where)
        if type(value).__name__ in RESULTS and type(value) is RESULTS[type(value).__name__]:
            return {"kind": "result", "class": type(value).__name__,
                    "fields": {f.name: self.value(getattr(value, f.name), (*path, f.name),
                                                  f"{where}.{f.name}")
                               for f in dataclasses.fields(value)}}
        raise _unsupported(where, value)

    def ndarray(self, value, path, where):
        if not value.dtype.hasobject:
            return {"kind": "ndarray", "array": self.member(path, value)}
        if all(isinstance(v, str) for v in value.flat):
            return {"kind": "str_object_array", "array": self.member(path, value.astype(str))}
        raise TypeError(
            f"{where} is an object array (dtype=object) of other things than strings, "
            "which a model file cannot store without pickle; store a numeric or string "
            "array there."
        )

    def sparse(self, value, path, where):
        fmt = value.format
        if fmt not in ("csr", "csc"):
            raise TypeError(
                f"{where} is a sparse matrix in {fmt.upper()} format; a model file stores "
                "CSR and CSC only. Convert it with .tocsr()."
            )
        return {"kind": "sparse", "format": fmt,
                "container": "array" if _is_sparse_array(value) else "matrix",
                "shape": [int(n) for n in value.shape],
                "data": self.member((*path, "data"), value.data),
                "indices": self.member((*path, "indices"), value.indices),
                "indptr": self.member((*path, "indptr"), value.indptr)}

    def estimator(self, est, path, where):
        cls = type(est)
        name = _NAME_OF.get(cls)
        if name is None:
            known = ", ".join(n for n in ESTIMATORS if "." not in n)
            raise TypeError(
                f"{where} is a {cls.__module__}.{cls.__qualname__}, which a model file cannot "
                f"name: it stores landmarking's estimators ({known}) and the scikit-learn "
                f"estimators they use ({', '.join(n for n in ESTIMATORS if '.' in n)}). Use one "
                "of those, or save the arrays you need with numpy."
            )
        params = est.get_params(deep=False)
        node = {"kind": "estimator", "class": name,
                "params": {k: self.value(v, (*path, "params", k), f"{where}.{k}")
                           for k, v in params.items()}}
        state = {k: v for k, v in vars(est).items()
                 if k not in params and k not in getattr(cls, "_persistence_transient", ())}
        refit_from = _REFIT_FROM.get(cls)
        if refit_from is not None and refit_from in state:
            node["refit"] = self.value(state[refit_from], (*path, "refit"), f"{where}.{refit_from}")
            return node
        node["state"] = {k: self.value(v, (*path, "state", k), f"{where}.{k}")
                         for k, v in state.items()}
        return node


def _is_sparse_array(value):
    """Whether a CSR/CSC value is a scipy sparse *array* (csr_array), not a matrix.

    Tested against the two array classes rather than ``scipy.sparse.sparray``,
    which scipy exports only from 1.11 on (before it, ``csr_array`` derives from
    ``csr_matrix``, so ``not isinstance(value, spmatrix)`` cannot tell them apart).
    """
    return isinstance(value, (sparse.csr_array, sparse.csc_array))


def _unsupported(where, value):
    kind = type(value)
    what = "a function" if callable(value) and not isinstance(value, type) else (
        f"a {kind.__module__}.{kind.__qualname__}")
    hint = ("pass it by name (a string) instead" if callable(value) else
            "delete that attribute before saving if the model does not need it, or report "
            "the class so that landmarking.save learns to store it")
    return TypeError(
        f"{where} is {what}, which a model file cannot store without pickle (it stores "
        "arrays, CSR/CSC matrices, numbers, strings, None, lists, tuples, dicts with string "
        f"keys, RandomState and the library's estimators); {hint}."
    )


# --------------------------------------------------------------------- decoding


class _Reader:
    """Builds values back from JSON nodes and the archive's arrays."""

    def __init__(self, path, archive, version, listed):
        self.path = path
        self.archive = archive
        self.version = version
        self.listed = set(listed) - {HEADER}

    def error(self, message):
        return ModelFileError(f"{self.path}: {message}")

    def array(self, name):
        if not isinstance(name, str) or name not in self.listed:
            raise self.error(f"an entry refers to the array {name!r}, which the file does not "
                             "list among its arrays; the file is damaged: save the model again.")
        if name not in self.archive.files:
            raise self.error(f"the array {name!r} is missing from the file (it was edited or "
                             "only partly copied); save the model again.")
        try:
            array = self.archive[name]
        except ValueError as exc:
            if "pickle" in str(exc).lower():
                raise self.error(
                    f"the array {name!r} holds pickled Python objects, which landmarking "
                    "never writes and will not load (loading a pickle can run any code); "
                    "re-create the model with landmarking.save from a trusted source."
                ) from None
            raise self.error(f"the array {name!r} cannot be read ({exc}); the file is "
                             "damaged: save the model again.") from None
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise self.error(f"the array {name!r} is damaged ({exc}); save the model "
                             "again.") from None
        if not isinstance(array, np.ndarray):  # a member that is not a .npy file
            raise self.error(f"the member {name!r} is not an array; the file is damaged: save "
                             "the model again.")
        return array

    def value(self, node, where):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or "kind" not in node:
            raise self.error(f"{where}: malformed entry {node!r}; the file is damaged: save "
                             "the model again.")
        kind = node["kind"]
        decode = self._DECODERS.get(kind) if isinstance(kind, str) else None
        if decode is None:
            raise self.error(
                f"{where} is a value of kind {kind!r}, which this landmarking cannot read "
                f"(the file was written by landmarking {self.version}); upgrade landmarking."
            )
        try:
            return decode(self, node, where)
        except ModelFileError:
            raise
        except KeyError as exc:
            raise self.error(f"{where}: the {kind} entry lacks its {exc} field; the file is "
                             "damaged: save the model again.") from None
        except (TypeError, ValueError, AttributeError, IndexError) as exc:
            raise self.error(f"{where}: the {kind} entry cannot be rebuilt ({exc}); the file "
                             "is damaged: save the model again.") from None

    def _ndarray(self, node, where):
        return self.array(node["array"])

    def _scalar(self, node, where):
        return self.array(node["array"])[()]

    def _str_object_array(self, node, where):
        return self.array(node["array"]).astype(object)

    def _float(self, node, where):
        return float(node["value"])

    def _sparse(self, node, where):
        matrix = (sparse.csr_matrix if node["format"] == "csr" else sparse.csc_matrix)
        if node["container"] == "array":
            matrix = sparse.csr_array if node["format"] == "csr" else sparse.csc_array
        parts = (self.array(node["data"]), self.array(node["indices"]), self.array(node["indptr"]))
        return matrix(parts, shape=tuple(node["shape"]), copy=False)

    def _list(self, node, where):
        return [self.value(v, f"{where}[{i}]") for i, v in enumerate(node["items"])]

    def _tuple(self, node, where):
        return tuple(self._list(node, where))

    def _dict(self, node, where):
        return {k: self.value(v, f"{where}[{k!r}]") for k, v in node["items"]}

    def _random_state(self, node, where):
        rng = np.random.RandomState()
        rng.set_state((node["bit_generator"], self.array(node["keys"]), node["pos"],
                       node["has_gauss"], node["cached_gaussian"]))
        return rng

    def _known_class(self, node, where, classes, kind):
        """The class a node names, from ``classes`` (the ``kind`` of class this
        landmarking loads); a class it does not know is an error naming the fix."""
        name = node["class"]
        if name not in classes:
            raise self.error(
                f"{where} names the {kind} class {name!r}, which this landmarking does not "
                f"know (it loads {', '.join(classes)}); the file was written by landmarking "
                f"{self.version}: upgrade landmarking, or refit the model."
            )
        return name, classes[name]

    def _estimator(self, node, where):
        name, cls = self._known_class(node, where, ESTIMATORS, "estimator")
        params = {k: self.value(v, f"{where}.{k}") for k, v in node["params"].items()}
        unknown = sorted(set(params) - set(cls().get_params(deep=False)))
        if unknown:
            raise self.error(
                f"{where}: {name} of this landmarking has no parameter "
                f"{', '.join(map(repr, unknown))} (the file was written by landmarking "
                f"{self.version}); upgrade landmarking to load it."
            )
        params = {**getattr(cls, "_persistence_earlier_defaults", {}), **params}
        est = cls(**params)
        if "refit" in node:
            return est.fit(self.value(node["refit"], f"{where}.refit"))
        for key, value in node.get("state", {}).items():
            setattr(est, key, self.value(value, f"{where}.{key}"))
        if node.get("state") and hasattr(est, "_restore_transient"):
            est._restore_transient()  # empty caches in place of those left out
        return est

    def _result(self, node, where):
        _, cls = self._known_class(node, where, RESULTS, "result")
        return cls(**{k: self.value(v, f"{where}.{k}") for k, v in node["fields"].items()})

    # Kind -> decoder; only these kinds are read (a file cannot pick another method).
    _DECODERS = {"ndarray": _ndarray, "scalar": _scalar, "str_object_array": _str_object_array,
                 "float": _float, "sparse": _sparse, "list": _list, "tuple": _tuple,
                 "dict": _dict, "random_state": _random_state, "estimator": _estimator,
                 "result": _result}


# --------------------------------------------------------------------- files


def _major(version):
    match = re.match(r"\s*(\d+)", str(version))
    return int(match.group(1)) if match else None


def save(estimator: BaseEstimator, path: StrPath) -> None:
    """Save a fitted estimator to a model file that holds no pickles.

    Parameters
    ----------
    estimator : estimator of :data:`ESTIMATORS`
        A fitted landmarking estimator (``GPLandmarks``, ``LocallyLinearLandmarks``,
        ...), not a subclass.
    path : str or Path
        The file to write (conventionally ``.npz``; the name is used as given). An
        existing file is replaced atomically: a reader sees the old file or the
        new one, never a part. The file gets the mode ``0o666`` less the umask.

    Raises
    ------
    NotFittedError
        When the estimator is not fitted.
    TypeError
        When it is not a class of :data:`ESTIMATORS`, or holds a value that the
        format cannot store (the message names the attribute).

    See Also
    --------
    load : Read the estimator back.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from landmarking import RandomLandmarks, load, save
    >>> X = np.random.RandomState(0).normal(size=(50, 3))
    >>> model = RandomLandmarks(n_landmarks=4, random_state=0).fit(X)
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "model.npz"
    >>> save(model, file)
    >>> bool(np.array_equal(load(file).transform(X), model.transform(X)))
    True
    """
    from . import __version__

    name = type(estimator).__name__
    if type(estimator) not in _NAME_OF or "." in _NAME_OF[type(estimator)]:
        raise TypeError(
            f"landmarking.save stores the library's estimators "
            f"({', '.join(n for n in ESTIMATORS if '.' not in n)}), not a "
            f"{type(estimator).__module__}.{type(estimator).__qualname__}; save one of those "
            "(subclasses are not stored, since load would return the parent class)."
        )
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        raise NotFittedError(
            f"This {name} is not fitted yet, so there is nothing to save; call fit before "
            "landmarking.save."
        ) from None
    writer = _Writer()
    tree = writer.estimator(estimator, ("estimator",), name)
    header = {
        "format": FORMAT_NAME,
        "format_version": list(FORMAT_VERSION),
        "library_version": __version__,
        "numpy_version": np.__version__,
        "sklearn_version": sklearn.__version__,
        "estimator": tree,
        "arrays": sorted(writer.arrays),
    }
    text = json.dumps(header, allow_nan=False)
    members = {HEADER: np.frombuffer(text.encode("utf-8"), dtype=np.uint8)}
    members.update(writer.arrays)
    _write_atomic(Path(path), members)


def _write_atomic(path, members):
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"{path} is a folder; give a file name to save to",
                                str(path))
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(errno.ENOENT, f"the folder {folder} does not exist; create it "
                                "first", str(path))
    # A temporary file in the same folder, renamed over the target: never a
    # truncated model where a good one was.
    handle, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as fh:
            write_npz(fh, members)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates the file 0600; give it the mode any new file would get.
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: StrPath) -> BaseEstimator:
    """Load an estimator saved by :func:`save`.

    Nothing in the file is unpickled or imported: the class is looked up by name
    in :data:`ESTIMATORS` and every array is read with ``allow_pickle=False``.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    estimator
        A fitted estimator of the saved class, with the saved parameters and
        fitted attributes; its ``transform`` gives bit-for-bit the saved one's.

    Raises
    ------
    ModelFileError
        When the file is not a landmarking model, is truncated or damaged, holds a
        pickled array, misses arrays, or comes from a newer major version (of the
        format or of the library) or names an unknown class or parameter. The
        message names the file, the problem and the fix.
    FileNotFoundError
        When there is no such file.

    Examples
    --------
    See :func:`save`.
    """
    from . import __version__

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, "no such model file; give the file written by "
                                "landmarking.save or `landmarking embed --model`", str(path))
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as fh:
            start = fh.read(4)
        if start.startswith(b"PK"):
            raise ModelFileError(f"{path}: truncated or damaged archive (its end is missing); "
                                 "save the model again.")
        raise ModelFileError(f"{path}: not a landmarking model file (not an .npz archive); "
                             "give the file written by landmarking.save.")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if HEADER not in archive.files:
                raise ModelFileError(f"{path}: {_not_a_model(archive.files)}")
            header = _read_header(path, archive)
            version = header.get("library_version", "unknown")
            _check_compatible(path, header, version, __version__)
            listed = header.get("arrays", [])
            if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
                raise ModelFileError(f"{path}: its list of arrays is malformed; the file is "
                                     "damaged: save the model again.")
            missing = sorted(set(listed) - set(archive.files))
            if missing:
                raise ModelFileError(
                    f"{path}: the model's arrays {', '.join(map(repr, missing))} are missing "
                    "from the file (it was edited or only partly copied); save the model again."
                )
            reader = _Reader(path, archive, version, listed)
            estimator = reader.value(header.get("estimator"), "estimator")
    except (zipfile.BadZipFile, EOFError) as exc:
        raise ModelFileError(f"{path}: truncated or damaged archive ({exc}); save the model "
                             "again.") from None
    if not isinstance(estimator, BaseEstimator):
        raise ModelFileError(f"{path}: holds no estimator; the file is damaged: save the "
                             "model again.")
    return estimator


def _not_a_model(files):
    held = ", ".join(sorted(files)[:8]) or "nothing"
    if "landmark_embedding" in files and "n_landmark_neighbors" in files:
        return ("an LLL model of landmarking 0.1's `embed --model` (arrays only), not a "
                "model saved by landmarking.save; `landmarking transform --model` still reads "
                "it, and rerunning `landmarking embed ... --model FILE` writes the new format.")
    return (f"not a landmarking model file (it holds: {held}); give the file written by "
            "landmarking.save or `landmarking embed --model`.")


def _read_header(path, archive):
    try:
        raw = archive[HEADER]
        if not isinstance(raw, np.ndarray) or raw.dtype != np.uint8 or raw.ndim != 1:
            raise ValueError("the header is not a byte array")
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path}: its model description cannot be read ({exc}); the "
                             "file is damaged: save the model again.") from None
    found = header.get("format") if isinstance(header, dict) else None
    if found != FORMAT_NAME:
        raise ModelFileError(f"{path}: not a landmarking model file (format {found!r}); give "
                             "the file written by landmarking.save.")
    return header


def _check_compatible(path, header, version, ours):
    fmt = header.get("format_version")
    if (not isinstance(fmt, list) or len(fmt) < 1 or not isinstance(fmt[0], int)):
        raise ModelFileError(f"{path}: has no valid format version ({fmt!r}); the file is "
                             "damaged: save the model again.")
    if fmt[0] > FORMAT_VERSION[0]:
        raise ModelFileError(
            f"{path}: written by landmarking {version} in model format "
            f"{'.'.join(map(str, fmt))}, newer than the format {FORMAT_VERSION[0]}.x this "
            f"landmarking {ours} reads; upgrade landmarking to load it."
        )
    theirs = _major(version)
    if theirs is not None and theirs > _major(ours):
        raise ModelFileError(
            f"{path}: written by landmarking {version}, a newer major version than this "
            f"landmarking {ours}; upgrade landmarking to load it."
        )
