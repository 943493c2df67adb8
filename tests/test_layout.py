"""The package's structure rules (issue 22), checked on the source itself.

- Imports only run downward: the module graph of ``landmarking`` (imports inside
  functions included, ``if TYPE_CHECKING:`` blocks excluded) has no circle.
- torch is named only in the backend bindings (one module per method) and the
  shared device module.
"""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "landmarking"


def _modules():
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _type_checking_nodes(tree):
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    return skipped


def _imported(module, node):
    """The package modules an import statement of ``module`` loads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in MODULES]
    package = module.split(".")
    if MODULES[module].name != "__init__.py":
        package = package[:-1]
    if node.level:
        base = package[:len(package) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    names = []
    for alias in node.names:
        child = f"{target}.{alias.name}"
        names.append(child if child in MODULES else target)
    return [name for name in names if name in MODULES and name != module]


def import_graph():
    """Module -> the package modules it imports."""
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        skipped = _type_checking_nodes(tree)
        graph[module] = {
            target for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped
            for target in _imported(module, node)}
    return graph


def circles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_imports_only_run_downward():
    assert circles(import_graph()) == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# The shared device module, the landmark features' torch kernels, and one backend
# module per method (GP, LLL).
TORCH_MODULES = {"landmarking._torch", "landmarking._torch_kernels", "landmarking.gp._torch",
                 "landmarking.lll._torch"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_torch_is_named_only_in_the_bindings(module):
    source = MODULES[module].read_text()
    if re.search(r"^\s*(import torch|from torch)|\bimport_torch\(|\bto_tensor\(", source,
                 flags=re.MULTILINE):
        assert module in TORCH_MODULES


# The same role has the same file name in every method package, so that a reader
# who knows one package finds the parts of another: the estimator, the CPU
# backend beside its compiled loops, the torch backend, the backend binding, the
# public function (``fit.py``) and the diagnostics. (The Laplacian's estimator and
# function share ``spectral/laplacian.py``; Manifold Sculpting's loop is
# ``sculpting/_loop.py``; a refinement is named for what it refines, see
# tests/test_names.py.)
ROLES = {
    "estimator.py": ("gp", "lll", "sculpting"),
    "_cpu.py": ("gp", "lll"),
    "_loops.pyx": ("gp", "lll", "sculpting"),
    "_torch.py": ("gp", "lll"),
    "backend.py": ("gp", "lll"),
    "fit.py": ("gp", "lll", "sculpting"),
    "diagnostics.py": ("gp", "lll"),
}
# Names the same roles had before, which must not come back.
RETIRED = ("lll/lll.py", "lll/refined.py", "gp/_numpy.py", "lll/_numpy.py", "gp/learn.py",
           "sculpting/sculpt.py", "gp/refine.py", "lll/refine.py", "spectral/refine.py")


@pytest.mark.parametrize("role", sorted(ROLES))
def test_method_packages_name_each_role_alike(role):
    missing = [package for package in ROLES[role] if not (PACKAGE / package / role).exists()]
    assert missing == []


def test_retired_module_names_are_gone():
    assert [name for name in RETIRED if (PACKAGE / name).exists()] == []


# Every method's parameter rules are one module constant, PARAMETER_RULES, in the
# module of its public function; the estimator checks the same table.
RULES = [("landmarking.gp.fit", "landmarking.gp.estimator", "GPLandmarks"),
         ("landmarking.lll.fit", "landmarking.lll.estimator", "LocallyLinearLandmarks"),
         ("landmarking.sculpting.fit", "landmarking.sculpting.estimator",
          "ManifoldSculpting"),
         ("landmarking.spectral.laplacian", "landmarking.spectral.laplacian",
          "LaplacianEigenmaps")]


@pytest.mark.parametrize(("rules", "module", "estimator"), RULES)
def test_parameter_rules_live_beside_the_public_function(rules, module, estimator):
    from importlib import import_module

    table = import_module(rules).PARAMETER_RULES
    assert getattr(import_module(module), estimator)._parameter_rules is table
    assert "PARAMETER_RULES" in import_module(rules).__all__
