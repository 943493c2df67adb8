"""The compiled code stays readable: short parameter lists, short functions, one
meaning for "kernel", and each shared loop written once (issue 42).

These tests read the Cython sources as text (the package need not be built): every
function of a ``.pyx`` or ``.pxd`` file (``def``, ``cdef``, ``cpdef``) takes at
most :data:`MAX_PARAMETERS` parameters and has a body of at most :data:`MAX_LINES`
lines, no compiled module's name contains "kernel" (the Gaussian kernel's word), and
the heap and lane loops live in ``_shared_loops.pxd``, cimported by the modules that
use them, not written again in a ``.pyx``.
"""

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "landmarking"
#: A parameter list longer than this is a struct or a typed object's business.
MAX_PARAMETERS = 10
#: A body longer than this is split into named helpers.
MAX_LINES = 80
SHARED = "_shared_loops"

# A function's header: optional qualifiers and a return type, the name, "(".
_HEADER = re.compile(r"^(?P<indent>[ \t]*)(?:def|cpdef|cdef)\s+(?!class\b|struct\b|enum\b|"
                     r"extern\b|union\b|packed\b|fused\b|public\b(?=\s+(?:class|struct)))"
                     r"(?P<before>[^=:(]*?)\b(?P<name>\w+)\s*\(")


def _sources():
    return sorted(SRC.rglob("*.pyx")) + sorted(SRC.rglob("*.pxd"))


def _split_parameters(text):
    """The top-level comma-separated items of a parameter list."""
    items, depth, current = [], 0, ""
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    return [item.strip() for item in items if item.strip() not in ("", "*", "/")]


def functions(path):
    """(name, number of parameters, body lines, first line) of each function in the
    Cython source at ``path``. The body runs from the line after the signature to
    its last non-blank line indented deeper than the header (docstring included)."""
    lines = Path(path).read_text().splitlines()
    found = []
    i = 0
    while i < len(lines):
        match = _HEADER.match(lines[i])
        if not match or lines[i].lstrip().startswith("#"):
            i += 1
            continue
        # The signature: from "(" to its matching ")", across lines.
        start = i
        text = lines[i][match.end():]
        depth = 1
        params = ""
        while True:
            for pos, char in enumerate(text):
                if char == "(":
                    depth += 1
                elif char == ")":
                    depth -= 1
                    if depth == 0:
                        params += text[:pos]
                        break
            if depth == 0:
                break
            params += text + " "
            i += 1
            text = lines[i]
        indent = len(match.group("indent").expandtabs())
        end = i
        j = i + 1
        while j < len(lines):
            line = lines[j]
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            if line.strip():
                end = j
            j += 1
        found.append((match.group("name"), len(_split_parameters(params)), end - i,
                      start + 1))
        i = j
    return found


def _every_function():
    return [(path.relative_to(SRC).as_posix(), *entry)
            for path in _sources() for entry in functions(path)]


def test_the_reader_finds_every_function():
    # The parser against a source written here: a cdef with a return type over
    # two lines, a nested function, a def with defaults and a *, and a struct.
    text = ("cdef struct S:\n    int a\n\n"
            "cdef inline double f(const double* x, Py_ssize_t n,\n"
            "                     double y=(1, 2)[0]) noexcept nogil:\n"
            '    """Doc."""\n    return x[0]\n\n'
            "def g(a, *, b=2):\n    def h(c):\n        return c\n\n    return h(a)\n")
    path = Path(__file__).parent / "_reader_probe.pyx"
    try:
        path.write_text(text)
        assert functions(path) == [("f", 3, 2, 4), ("g", 2, 4, 9)]
    finally:
        path.unlink()
    assert len(_every_function()) > 50


@pytest.mark.parametrize("limit, column, what", [(MAX_PARAMETERS, 2, "parameters"),
                                                 (MAX_LINES, 3, "body lines")])
def test_compiled_functions_are_short(limit, column, what):
    over = [f"{row[0]}:{row[4]} {row[1]} has {row[column]} {what}"
            for row in _every_function() if row[column] > limit]
    assert not over, f"over {limit} {what}: " + "; ".join(over)


def test_no_compiled_module_is_named_kernel():
    # "Kernel" is the Gaussian kernel (landmarking.kernels, _torch_kernels.py);
    # compiled code is named for loops.
    named = [path.relative_to(SRC).as_posix() for path in _sources()
             if "kernel" in path.stem.lower()]
    assert not named


def test_shared_loops_are_written_once():
    # A helper defined in two compiled files is a copy that can drift; the shared
    # .pxd holds it, and every file that uses one of its loops cimports it.
    defined = {}
    for path in _sources():
        for name, *_ in functions(path):
            if not name.startswith("__"):  # methods such as __init__ are the class's own
                defined.setdefault(name.lstrip("_"), set()).add(
                    path.relative_to(SRC).as_posix())
    twice = {name: sorted(files) for name, files in defined.items() if len(files) > 1}
    assert not twice, f"defined in more than one compiled file: {twice}"
    pxd = SRC / f"{SHARED}.pxd"
    assert pxd.exists()
    shared = {name for name, *_ in functions(pxd)}
    assert {"pair_sift_down", "value_sift_down", "lane_dot", "lane_sq_distance"} <= shared
    for user in ("gp/_loops.pyx", "lll/_loops.pyx", "_neighbors_loops.pyx"):
        text = (SRC / user).read_text()
        assert re.search(rf"^from landmarking\.{SHARED} cimport", text, re.M), user
        for loop in ("sift_down", "sq_distance", "dot"):
            assert not re.search(rf"^cdef[^\n(]*\b_?{loop}\s*\(", text, re.M), (user, loop)
