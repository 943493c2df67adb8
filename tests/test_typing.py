"""Type hints: every public function and estimator method is annotated, and the
annotations resolve (``typing.get_type_hints``), so that ``py.typed`` is honest."""

import importlib
import inspect
import pkgutil
import typing
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator

import landmarking

ESTIMATOR_METHODS = ("__init__", "fit", "transform", "fit_transform")


def _public_modules():
    names = ["landmarking"]
    for info in pkgutil.walk_packages(landmarking.__path__, "landmarking."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return names


def _ours(obj):
    return str(getattr(obj, "__module__", "")).startswith("landmarking")


def _public_callables():
    """(label, function) for every public function and method of the library."""
    found = {}  # label -> function (a mixin's method appears under each class)
    for name in _public_modules():
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if not _ours(obj):
                continue
            if inspect.isfunction(obj):
                found[f"{obj.__module__}.{attr}"] = obj
            elif inspect.isclass(obj) and not issubclass(obj, BaseException):
                for meth in dir(obj):
                    if meth.startswith("_") and meth != "__init__":
                        continue
                    f = inspect.getattr_static(obj, meth)
                    if isinstance(f, (staticmethod, classmethod)):
                        f = f.__func__
                    # Methods inherited from scikit-learn (TransformerMixin.fit_transform
                    # of the landmark estimators) carry scikit-learn's own hints.
                    if inspect.isfunction(f) and _ours(f):
                        found[f"{obj.__module__}.{attr}.{meth}"] = f
    return sorted(found.items())


CALLABLES = _public_callables()


def _hints(func):
    """get_type_hints, with the names that modules import for type checkers only
    (plotting imports matplotlib when it draws, not when it is imported)."""
    from matplotlib.figure import Figure
    from scipy import sparse

    return typing.get_type_hints(func, localns={"Figure": Figure, "sparse": sparse})


def _estimators():
    out = []
    for name in landmarking.__all__:
        obj = getattr(landmarking, name)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
            out.append(obj)
    return out


def test_the_walk_finds_the_public_api():
    labels = {label for label, _ in CALLABLES}
    # A sample from every corner, so that a broken walk cannot pass vacuously.
    for label in ["landmarking.gp.estimator.GPLandmarks.fit",
                  "landmarking.gp.fit.learn_gp_landmarks",
                  "landmarking.baselines.random.RandomLandmarks.transform",
                  "landmarking.spectral.laplacian.LaplacianEigenmaps.__init__",
                  "landmarking.neighbors.query_neighbors",
                  "landmarking.neighbors.NeighborIndex.query",
                  "landmarking.persistence.save", "landmarking.io.read_data",
                  "landmarking.kernels.gaussian_features", "landmarking.metrics.span_error",
                  "landmarking.datasets.real.load_mnist"]:
        assert label in labels, label
    assert len(CALLABLES) > 100


@pytest.mark.parametrize("label, func", CALLABLES, ids=[label for label, _ in CALLABLES])
def test_public_signature_is_fully_annotated(label, func):
    sig = inspect.signature(func)
    missing = [name for name, p in sig.parameters.items()
               if p.annotation is inspect.Parameter.empty and name not in ("self", "cls")]
    assert not missing, f"{label}: parameters without a type hint: {missing}"
    assert sig.return_annotation is not inspect.Signature.empty, f"{label}: no return hint"
    # The hints resolve: every name they use exists at run time.
    hints = _hints(func)
    assert set(sig.parameters) - {"self", "cls"} <= set(hints)
    assert "return" in hints


@pytest.mark.parametrize("cls", _estimators(), ids=lambda c: c.__name__)
def test_estimator_signatures_are_annotated(cls):
    """__init__, fit, transform and fit_transform of every public estimator, where
    the library defines them (an inherited scikit-learn fit_transform is not ours)."""
    checked = 0
    for meth in ESTIMATOR_METHODS:
        f = getattr(cls, meth, None)
        if f is None or not _ours(f):
            continue
        hints = _hints(f)
        params = [p for p in inspect.signature(f).parameters if p != "self"]
        assert set(params) <= set(hints) and "return" in hints, f"{cls.__name__}.{meth}"
        checked += 1
    assert checked >= 2  # at least __init__ and fit
    # fit returns the estimator itself.
    assert _hints(cls.fit)["return"] is typing.Self


def _literal_choices(hint):
    """The strings a hint allows by Literal, or None when it allows any string."""
    allowed = set()
    for arg in [hint, *typing.get_args(hint)]:
        if arg is str:
            return None
        if typing.get_origin(arg) is typing.Literal:
            allowed |= set(typing.get_args(arg))
    return allowed


def test_literal_choices_of_a_hint():
    hint = typing.get_type_hints(landmarking.GPLandmarks.__init__)["space"]
    assert _literal_choices(hint) == {"euclidean", "nonnegative", "sphere"}
    assert _literal_choices(str | None) is None


def test_hints_list_the_string_defaults():
    """A Literal hint includes the default it annotates (e.g. space="euclidean")."""
    checked = 0
    for label, func in CALLABLES:
        hints = _hints(func)
        for name, p in inspect.signature(func).parameters.items():
            if isinstance(p.default, str) and name in hints:
                allowed = _literal_choices(hints[name])
                if allowed:
                    assert p.default in allowed, f"{label}: {name}={p.default!r} not in {allowed}"
                    checked += 1
    assert checked >= 25


def test_package_ships_py_typed():
    assert (Path(landmarking.__file__).parent / "py.typed").is_file()
