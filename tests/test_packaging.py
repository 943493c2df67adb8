"""Packaging: the floors `make test-min` installs, the version, the typing marker."""

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

import landmarking

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"


def _make_extras():
    """The extras `make install` and `make test-min` install (EXTRAS in the Makefile)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return re.search(r"^EXTRAS := (\S+)$", makefile, re.M).group(1).split(",")


def _tool():
    spec = importlib.util.spec_from_file_location("min_requirements",
                                                  ROOT / "tools" / "min_requirements.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("requirement, pin", [
    ("numpy>=1.25", "numpy==1.25"),
    ("dask[array,distributed]>=2025.1.0", "dask[array,distributed]==2025.1.0"),
    ("scipy >= 1.10, <2", "scipy==1.10"),
    ('zarr>=3.0.8; python_version >= "3.11"', 'zarr==3.0.8; python_version >= "3.11"'),
    ("ruff==0.17.6", "ruff==0.17.6"),
])
def test_exact_pin_turns_the_floor_into_a_pin(requirement, pin):
    assert _tool().exact_pin(requirement) == pin


@pytest.mark.parametrize("requirement, message", [
    ("torch", "has no version floor"),
    ("numpy>1.25", "exactly one '>=' floor"),
    ("numpy>=1.25,>=1.26", "exactly one '>=' floor"),
])
def test_exact_pin_refuses_what_it_cannot_test(requirement, message):
    with pytest.raises(ValueError, match=message):
        _tool().exact_pin(requirement)


def test_minimum_pins_cover_every_dependency_of_the_tested_extras():
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    extras = _make_extras()
    pins = _tool().minimum_pins(PYPROJECT, extras)
    declared = project["dependencies"] + sum((project["optional-dependencies"][e]
                                              for e in extras), [])
    assert len(pins) == len(declared)
    names = [re.split(r"[\[=]", pin)[0].lower() for pin in pins]
    for needed in ["numpy", "scipy", "scikit-learn", "pillow", "usearch",
                   "dask", "zarr", "pytest", "hypothesis", "torch", "pyamg"]:
        assert needed in names
    assert all("==" in pin and ">" not in pin for pin in pins)
    # The kernels are compiled when the package is built: numba is no dependency.
    assert "numba" not in names


def test_minimum_pins_name_an_unknown_extra():
    with pytest.raises(ValueError, match=r"extras \['nope'\] are not declared"):
        _tool().minimum_pins(PYPROJECT, ["nope"])


def test_one_version_string():
    # The metadata version is read from landmarking.__version__ (setuptools dynamic).
    pyproject = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"]
    assert pyproject["project"]["dynamic"] == ["version"]
    attr = pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "landmarking.__version__"
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+)?", landmarking.__version__)


def test_typing_marker_and_licence_ship():
    assert (Path(landmarking.__file__).parent / "py.typed").is_file()
    pyproject = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["package-data"]["landmarking"] == ["py.typed"]
    assert pyproject["project"]["license-files"] == ["LICENSE"]
    assert "BSD 3-Clause" in (ROOT / "LICENSE").read_text(encoding="utf-8")


def _floor_table():
    """{package: version} from the table of docs/getting_started.rst."""
    text = (ROOT / "docs" / "getting_started.rst").read_text(encoding="utf-8")
    section = text.split("Supported versions\n")[1].split("\n\n")
    table = next(block for block in section if block.startswith("====="))
    rows = [line.split() for line in table.splitlines()
            if line and not line.startswith("=") and not line.startswith(" ")]
    return {row[0]: row[1] for row in rows[1:]}  # rows[0]: the header


def test_documented_floors_are_the_pins_test_min_installs():
    # The page that tells users what they can install must say what is tested.
    pins = _tool().minimum_pins(PYPROJECT, _make_extras())
    tested = dict(pin.split("==") for pin in pins)
    assert _floor_table() == tested


def test_make_test_runs_the_array_api_checks_and_leaves_the_site_to_docs_check():
    # scikit-learn skips its array-API check of each estimator unless SciPy was
    # imported with SCIPY_ARRAY_API set; the browser tests need the built site.
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntest: install\n")[1].split("\n\n")[0]
    assert re.fullmatch(r"\tSCIPY_ARRAY_API=1 \$\(PY\) -m pytest \$\(PYTEST_ARGS\)", recipe)
    assert "--ignore=tests/test_docs_site.py" in makefile
    assert "pytest -q tests/test_docs_site.py" in makefile.split("\ndocs-check: docs\n")[1]

