"""Build the compiled kernels: every ``src/landmarking/**/*.pyx`` is one extension module.

The kernels are compiled ahead of time (Cython, then the C compiler) when the package
is built or installed (``pip install .``, ``make install``), as scikit-learn, openTSNE
and hdbscan do, so that no fit waits for a compiler at run time
(``docs/benchmarks.md``, "Compiled ahead of time"). Everything else about the package
is declared in ``pyproject.toml``.
"""

import os
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

# Bounds and negative indices are the kernels' own business (their callers check the
# arrays); division by zero is C's. ``cpow``: an integer power stays an integer.
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "initializedcheck": False,
    "cdivision": True,
    "cpow": True,
    "embedsignature": True,
    "binding": True,
}
# -O3 without -ffast-math: loops vectorise, and no floating-point sum is reassociated;
# -ffp-contract=off: no a * b + c is fused either. So a kernel gives the same bits as
# the loop it is written as, on any processor. -march=native: the processor's own
# vector instructions, as numba's run-time compile used (the column moments ran 1.7x
# slower with the x86-64 baseline's SSE2). A wheel for other machines must not carry
# them: LANDMARKING_PORTABLE_BUILD=1 builds for the baseline instead.
COMPILE_ARGS = ["-O3", "-ffp-contract=off"]
if os.environ.get("LANDMARKING_PORTABLE_BUILD", "0") in ("", "0"):
    COMPILE_ARGS.append("-march=native")


def extensions():
    """One Extension per .pyx file, named by its path under src/."""
    found = []
    for path in sorted(Path("src").rglob("*.pyx")):
        name = ".".join(path.relative_to("src").with_suffix("").parts)
        found.append(Extension(name, [str(path)], extra_compile_args=COMPILE_ARGS))
    return found


setup(ext_modules=cythonize(extensions(), compiler_directives=DIRECTIVES))
