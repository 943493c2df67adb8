"""Packaging: the floors `make test-min` installs, the version, the typing marker,
the sdist's sources, the build's flags and the check of the compiled modules."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

import landmarking
from landmarking import _compiled

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
    # The loops are compiled when the package is built: numba is no dependency.
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



# ----------------------------------------------------------------- sdist and build

def _setup():
    """setup.py as a module (run under another name, it builds nothing)."""
    spec = importlib.util.spec_from_file_location("landmarking_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pyx_modules(root):
    """Module name of every .pyx file under root/src."""
    return sorted(".".join(p.relative_to(root / "src").with_suffix("").parts)
                  for p in (root / "src").rglob("*.pyx"))


def _compiled_modules(root):
    """The compiled modules of the .pyx files under root/src on this platform: one
    per file, one per instruction level for the dispatched ones."""
    return sorted(f"{name}_{level}" if name in _compiled.DISPATCHED else name
                  for name in _pyx_modules(root)
                  for level in (_compiled.levels() if name in _compiled.DISPATCHED
                                else ("",)))


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    """The member names of the sdist built from this checkout, without the top folder.

    setuptools' own sdist hook (what ``python -m build --sdist --no-isolation``
    calls), in a child where Cython cannot be imported: an sdist must not run it.
    """
    out = tmp_path_factory.mktemp("sdist")
    code = ("import sys\nsys.modules['Cython'] = None\n"
            "from setuptools import build_meta\n"
            "print(build_meta.build_sdist(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-c", code, str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    name = done.stdout.strip().splitlines()[-1]
    with tarfile.open(out / name) as archive:
        return {member.split("/", 1)[1] for member in archive.getnames() if "/" in member}


def test_sdist_carries_every_kernel_source_and_nothing_built(sdist):
    pyx = {p.relative_to(ROOT).as_posix() for p in (ROOT / "src").rglob("*.pyx")}
    pxd = {p.relative_to(ROOT).as_posix() for p in (ROOT / "src").rglob("*.pxd")}
    assert len(pyx) == len(_compiled.SOURCES)
    assert pyx | pxd <= sdist
    assert {"setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in",
            "src/landmarking/py.typed", "src/landmarking/__init__.py"} <= sdist
    # Cython's C and compiled modules of an in-place build are this machine's.
    assert [m for m in sdist if m.endswith((".c", ".so", ".pyd", ".o"))] == []


def test_every_pyx_is_one_extension_and_the_import_check_lists_them():
    names = [ext.name for ext in _setup().extensions(ROOT)]
    assert names == _compiled_modules(ROOT) == sorted(_compiled.EXTENSIONS)
    assert _pyx_modules(ROOT) == sorted(_compiled.SOURCES)
    assert len(names) >= 6


@pytest.mark.parametrize("machine, levels", [
    ("x86_64", ("baseline", "x86_64_v3")), ("AMD64", ("baseline", "x86_64_v3")),
    ("aarch64", ("baseline",)), ("arm64", ("baseline",)),
])
def test_dispatched_modules_are_built_per_level_of_the_platform(machine, levels):
    assert _compiled.levels(machine) == levels
    names = _compiled.extension_modules(machine)
    for name in _compiled.DISPATCHED:
        assert name not in names
        assert [n for n in names if n.startswith(name)] == [f"{name}_{lv}" for lv in levels]


def test_the_x86_64_v3_build_has_its_flags_and_the_baseline_none(monkeypatch):
    monkeypatch.delenv("LANDMARKING_NATIVE", raising=False)
    setup = _setup()
    by_name = {ext.name: ext for ext in setup.extensions(ROOT)}
    for name in _compiled.DISPATCHED:
        assert not any(a.startswith("-m") for a in by_name[f"{name}_baseline"]
                       .extra_compile_args)
        if "x86_64_v3" in _compiled.levels():
            assert "-mavx2" in by_name[f"{name}_x86_64_v3"].extra_compile_args


@pytest.mark.parametrize("flags, level", [
    ("fpu sse sse2", "baseline"),
    ("sse2 avx avx2 fma f16c bmi1 bmi2 abm movbe xsave", "x86_64_v3"),
    ("sse2 avx avx2 f16c bmi1 bmi2 abm movbe xsave", "baseline"),  # no FMA
])
def test_the_level_follows_the_processor_and_the_variable(monkeypatch, flags, level):
    if _compiled.levels() == ("baseline",):
        pytest.skip("one level on this platform")
    monkeypatch.setattr(_compiled, "_cpu_flags", lambda: frozenset(flags.split()))
    assert _compiled.kernel_level({}) == level
    assert _compiled.kernel_level({"LANDMARKING_KERNELS": "baseline"}) == "baseline"
    with pytest.raises(ImportError, match="LANDMARKING_KERNELS='avx9'.*unset it"):
        _compiled.kernel_level({"LANDMARKING_KERNELS": "avx9"})


def test_both_builds_of_a_dispatched_module_give_the_same_bits():
    """Neither build fuses a multiply-add nor reorders a sum, so the level changes the
    speed only: a GP fit (one at a time and in blocks) and an LLL fit, in a child per
    level, hash to the same bytes."""
    if _compiled.levels() == ("baseline",):
        pytest.skip("one level on this platform")
    code = (
        "import hashlib, numpy as np, landmarking as L\n"
        "from landmarking.datasets import make_sculpting_swiss_roll\n"
        "X = make_sculpting_swiss_roll(3000, random_state=0)[0]\n"
        "X = np.hstack([X, np.random.default_rng(0).normal(size=(3000, 40))])\n"
        "h = hashlib.sha1()\n"
        "for fitted in (L.GPLandmarks(n_landmarks=12, random_state=0).fit(X).landmarks_,\n"
        "               L.GPLandmarks(n_landmarks=12, block_size=6, n_jobs=2,\n"
        "                             random_state=0).fit(X).landmarks_,\n"
        "               L.LocallyLinearLandmarks(n_landmarks=200, random_state=0)\n"
        "               .fit(X).embedding_):\n"
        "    h.update(np.ascontiguousarray(fitted).tobytes())\n"
        "import landmarking.gp._loops as K\n"
        "print(K.__name__, h.hexdigest())\n")
    digests = {}
    for level in _compiled.levels():
        if level != "baseline" and _compiled.kernel_level({}) != level:
            continue  # this processor cannot run that build
        done = _import_in_child(code, dict(os.environ, LANDMARKING_KERNELS=level))
        assert done.returncode == 0, done.stderr[-3000:]
        module, digest = done.stdout.split()
        assert module == f"landmarking.gp._loops_{level}"
        digests[level] = digest
    assert len(digests) >= 1 and len(set(digests.values())) == 1, digests


def test_setup_refuses_a_tree_without_pyx(tmp_path):
    (tmp_path / "src" / "landmarking").mkdir(parents=True)
    (tmp_path / "src" / "landmarking" / "__init__.py").write_text("")
    with pytest.raises(SystemExit, match=r"no \.pyx file under .*the compiled loops' "
                                         r"sources are missing"):
        _setup().extensions(tmp_path)


@pytest.mark.parametrize("environ, native", [
    ({}, False),
    ({"LANDMARKING_NATIVE": "0"}, False),
    ({"LANDMARKING_NATIVE": ""}, False),
    ({"LANDMARKING_PORTABLE_BUILD": "0"}, False),  # the old switch is no longer read
    ({"LANDMARKING_NATIVE": "1"}, True),
])
def test_native_instructions_only_on_request(environ, native):
    args = _setup().compile_args(environ)
    assert ("-march=native" in args) is native
    # No fp contraction and no fast-math, native or not: a kernel's own rounding.
    assert args[:2] == ["-O3", "-ffp-contract=off"]
    assert not any("fast-math" in a or a.startswith("-Ofast") for a in args)


def test_extensions_take_the_flags_of_the_environment(monkeypatch):
    setup = _setup()
    monkeypatch.delenv("LANDMARKING_NATIVE", raising=False)
    assert all("-march=native" not in ext.extra_compile_args
               for ext in setup.extensions(ROOT))
    monkeypatch.setenv("LANDMARKING_NATIVE", "1")
    assert all("-march=native" in ext.extra_compile_args for ext in setup.extensions(ROOT))
    monkeypatch.setenv("LANDMARKING_NATIVE", "yes")
    with pytest.raises(SystemExit, match="LANDMARKING_NATIVE='yes': set LANDMARKING_NATIVE=1"):
        setup.extensions(ROOT)


# ----------------------------------------------------------------- the import check

FIX = [r"pip install --force-reinstall landmarking",
       r"pip install --no-binary landmarking landmarking", r"pip install -e \. in a checkout"]


def _import_in_child(code, env=None):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT / "tests")


def test_import_is_cheap_and_runs_no_loop_module():
    # The check finds and links each file; the modules themselves and their own
    # imports (the thread pool of landmarking._parallel, joblib) wait for the first fit.
    done = _import_in_child(
        "import sys, landmarking\n"
        "print(sorted(m for m in sys.modules if m in ('landmarking._parallel', 'joblib')"
        " or m.endswith('_loops')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name", _compiled.EXTENSIONS)
def test_missing_compiled_module_fails_at_import_naming_the_fix(name):
    done = _import_in_child(f"import sys\nsys.modules[{name!r}] = None\nimport landmarking")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert re.match(rf"ImportError: landmarking's compiled module {re.escape(name)} is "
                    rf"missing or cannot be loaded", last), done.stderr
    for fix in FIX:
        assert re.search(fix, last)


def _copy_package(tmp_path):
    """The installed package, its compiled modules included, copied under tmp_path
    (wherever an editable or wheel install keeps the modules)."""
    package = Path(landmarking.__file__).parent
    target = tmp_path / "landmarking"
    shutil.copytree(package, target, ignore=shutil.ignore_patterns(
        "__pycache__", "*.c", "*.so", "*.pyd", "*.html"))
    modules = {}
    for name in _compiled.EXTENSIONS:
        origin = Path(importlib.util.find_spec(name).origin)
        copy = tmp_path.joinpath(*name.split(".")[:-1], origin.name)
        shutil.copy2(origin, copy)
        modules[name] = copy
    return modules


def test_broken_or_deleted_compiled_module_fails_at_import(tmp_path):
    modules = _copy_package(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    code = "import landmarking\nprint(landmarking.__file__)"
    done = _import_in_child(code, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / "landmarking" / "__init__.py")

    broken = _compiled.EXTENSIONS[-1]
    modules[broken].write_bytes(b"not a shared object")
    done = _import_in_child(code, env)
    assert f"{broken} is missing or cannot be loaded" in done.stderr
    assert "pip install --force-reinstall landmarking" in done.stderr

    modules[broken].unlink()
    done = _import_in_child(code, env)
    assert re.search(rf"ImportError: landmarking's compiled module {re.escape(broken)} "
                     r"is missing or cannot be loaded \(No module named", done.stderr)


def test_ci_checks_a_wheel_built_from_the_sdist():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\nwheel-check:" in makefile and "tools/check_wheel.sh" in makefile
    steps = re.findall(r"^make (\S+)$", (ROOT / ".ci" / "run").read_text(encoding="utf-8"),
                       re.M)
    assert steps.index("wheel-check") == steps.index("test") + 1
    assert os.access(ROOT / "tools" / "check_wheel.sh", os.X_OK)


def test_the_doctest_collection_skips_every_dispatching_module():
    # Each hands over a compiled build on import; pytest's doctest collection would
    # take the handed-over module's file for a clash of names (pyproject's addopts).
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["addopts"]
    for name in _compiled.DISPATCHED:
        shim = Path("src", *name.split(".")).with_suffix(".py").as_posix()
        assert f"--ignore={shim}" in addopts.split()
        assert (ROOT / shim).is_file()
