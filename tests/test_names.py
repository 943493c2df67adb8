"""Module and function names that say what they hold (issue 42), checked on the source.

Read from the files alone (nothing is imported), so that a name that misleads is
caught before anything runs:

- a backend is named for where it runs (``_cpu.py``, ``_torch.py``): no module, and
  no name of a CPU backend, says NumPy for code that runs compiled loops;
- every method package keeps its public function in a module of one name,
  ``fit.py``, so that a reader who knows one package finds it in another;
- a refinement is named for what it refines: no bare ``refine.py``, and no two
  ``refine*`` modules of the same name in different packages;
- no public function of a Python module shares its name with a function that a
  compiled module exports (as ``gp/_tables.kernel_columns`` and the compiled
  ``kernel_columns`` once did): one name, one function.
"""

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "landmarking"

#: Method package -> the public function that its ``fit.py`` defines.
PUBLIC_FUNCTIONS = {
    "gp": "learn_gp_landmarks",
    "lll": "locally_linear_landmarks",
    "sculpting": "manifold_sculpting",
}
#: The one module name of "the module of a method's public function".
PUBLIC_MODULE = "fit.py"


def _python_modules():
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def _relative(path):
    return path.relative_to(PACKAGE).as_posix()


def _top_level_names(path):
    """Functions and classes that a Python module defines at its top level."""
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def compiled_functions(text):
    """The functions a compiled (.pyx) module exports: the names of its ``__all__``
    that it defines with a top-level ``def`` or ``cpdef`` (constants left out)."""
    match = re.search(r"^__all__\s*=\s*\[(.*?)\]", text, flags=re.MULTILINE | re.DOTALL)
    if match is None:
        return set()
    exported = set(re.findall(r"[\"']([A-Za-z_]\w*)[\"']", match.group(1)))
    defined = set(re.findall(r"^(?:c?p?def)\s+(?:[\w\[\], ]+\s+)?([A-Za-z_]\w*)\s*\(", text,
                             flags=re.MULTILINE))
    return exported & defined


def test_no_module_says_numpy():
    said = [_relative(path) for path in PACKAGE.rglob("*")
            if path.suffix in (".py", ".pyx", ".pxd") and "numpy" in path.stem.lower()]
    assert said == []


@pytest.mark.parametrize("backend", sorted(_relative(p) for p in PACKAGE.rglob("_cpu.py")))
def test_the_cpu_backends_names_say_cpu(backend):
    said = sorted(name for name in _top_level_names(PACKAGE / backend) if "numpy" in name.lower())
    assert said == []


def test_each_method_package_has_a_cpu_backend_beside_its_torch_one():
    torch_packages = {p.parent.name for p in PACKAGE.glob("*/_torch.py")}
    assert torch_packages and all((PACKAGE / name / "_cpu.py").exists()
                                  for name in torch_packages)


@pytest.mark.parametrize("package", sorted(PUBLIC_FUNCTIONS))
def test_the_public_function_lives_in_fit_py(package):
    module = PACKAGE / package / PUBLIC_MODULE
    assert module.exists()
    assert PUBLIC_FUNCTIONS[package] in _top_level_names(module)


def test_fit_py_is_only_the_module_of_a_public_function():
    # lll/fit.py, gp/fit.py and sculpting/fit.py; a fit.py elsewhere would give the
    # name a second meaning.
    packages = {path.parent.name for path in PACKAGE.rglob(PUBLIC_MODULE)}
    assert packages == set(PUBLIC_FUNCTIONS)


def test_refinements_are_named_for_what_they_refine():
    by_name = defaultdict(list)
    for path in _python_modules():
        if path.stem.startswith("refine"):
            by_name[path.name].append(_relative(path))
    assert "refine.py" not in by_name
    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}


def test_no_python_function_shares_a_name_with_a_compiled_one():
    compiled = {}
    for path in PACKAGE.rglob("*.pyx"):
        for name in compiled_functions(path.read_text()):
            compiled.setdefault(name, []).append(_relative(path))
    assert compiled, "no compiled module exports a function: the .pyx parsing broke"
    shared = {}
    for path in _python_modules():
        for name in _top_level_names(path):
            if not name.startswith("_") and name in compiled:
                shared[f"{_relative(path)}:{name}"] = compiled[name]
    assert shared == {}


def test_the_compiled_exports_are_read_from_the_pyx_text():
    text = ('__all__ = ["step", "BLOCK",\n           "other"]\nBLOCK = 4\n\n'
            "def step(double[:, ::1] X, int n):\n    pass\n\n"
            "cpdef double other(double x) nogil:\n    return x\n\n"
            "def helper():\n    pass\n")
    assert compiled_functions(text) == {"step", "other"}
