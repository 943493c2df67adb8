"""Importing the library is cheap: no numba, no estimator module until asked for."""

import subprocess
import sys

import pytest

import landmarking


def _fresh(code):
    """Run ``code`` in a fresh interpreter and return its stdout."""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, timeout=120)
    return out.stdout.strip()


def test_import_loads_no_numba_and_no_estimator_module():
    loaded = _fresh(
        "import sys, landmarking, landmarking.embedding\n"
        "print(sorted(m for m in sys.modules if m == 'numba' or m.startswith('numba.')"
        " or m.startswith('landmarking.embedding.') or m.startswith('landmarking.landmarks')))"
    )
    assert loaded == "[]"


def test_laplacian_eigenmaps_module_loads_no_numba():
    # Its default path compiles nothing (the compiled graph checks start at 2^20 edges).
    assert _fresh("import sys\nfrom landmarking import LaplacianEigenmaps\n"
                  "print('numba' in sys.modules)") == "False"


@pytest.mark.parametrize("package", ["landmarking", "landmarking.embedding"])
def test_every_public_name_resolves(package):
    module = __import__(package, fromlist=["__all__"])
    for name in module.__all__:
        value = getattr(module, name)
        assert value is not None
        if name != "__version__":
            assert value.__name__ == name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchEstimator'"):
        _ = module.NoSuchEstimator


def test_from_import_works_in_a_fresh_interpreter():
    names = ", ".join(n for n in landmarking.__all__ if n != "__version__")
    assert _fresh(f"from landmarking import {names}\nprint('ok')") == "ok"
