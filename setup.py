"""Build the compiled kernels: every ``src/landmarking/**/*.pyx`` is one extension module.

The kernels are compiled ahead of time (Cython, then the C compiler) when the package
is built or installed (``pip install .``, ``make install``), as scikit-learn, openTSNE
and hdbscan do, so that no fit waits for a compiler at run time
(``docs/benchmarks.md``, "Compiled ahead of time"). Everything else about the package
is declared in ``pyproject.toml``; MANIFEST.in puts the ``.pyx`` sources (not the C
that Cython writes, nor the compiled modules) in the sdist.

Cython runs in the ``build_ext`` step only, when extensions are actually built: an
sdist (``python -m build --sdist``) carries the ``.pyx`` files as they are, and a
wheel built from it compiles them there.
"""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

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
# -ffp-contract=off: no a * b + c is fused into one rounding either. So a kernel
# gives the rounding of the loop it is written as, whatever instructions the compiler
# picks. (Not the same bits on every processor: the BLAS calls around the kernels and
# the C library's exp and sqrt choose code by processor.)
BASE_ARGS = ["-O3", "-ffp-contract=off"]
# The default build targets the platform's baseline (x86-64: SSE2), so that a wheel
# runs on any processor of its platform. LANDMARKING_NATIVE=1 adds the building
# processor's own vector instructions (AVX2, AVX-512): a build for this machine only,
# which dies with SIGILL on a processor without them (benchmarks/native_build.py
# measures what it buys).
NATIVE_ARGS = ["-march=native"]
NATIVE = "LANDMARKING_NATIVE"
# Before 0.2.0 -march=native was the default and this variable turned it off.
RETIRED = "LANDMARKING_PORTABLE_BUILD"


def compile_args(environ=os.environ):
    """The C compiler's flags: the baseline's, plus -march=native when
    ``LANDMARKING_NATIVE=1``."""
    native = environ.get(NATIVE, "0").strip()
    if native not in ("", "0", "1"):
        raise SystemExit(f"{NATIVE}={native!r}: set {NATIVE}=1 to build for this "
                         f"processor only (-march=native), or leave it unset (or 0) for a "
                         f"build that runs on any processor of the platform")
    return BASE_ARGS + (NATIVE_ARGS if native == "1" else [])


def extensions(root="."):
    """One Extension per .pyx file under ``root``/src, named by its path under src/.

    Raises SystemExit when there is none: a package built so would import, then fail
    at its first fit (an sdist made without its .pyx files, for instance).
    """
    src = Path(root) / "src"
    found = []
    args = compile_args()
    for path in sorted(src.rglob("*.pyx")):
        name = ".".join(path.relative_to(src).with_suffix("").parts)
        found.append(Extension(name, [path.relative_to(root).as_posix()],
                               extra_compile_args=args))
    if not found:
        raise SystemExit(f"no .pyx file under {src.resolve()}: the compiled kernels' "
                         f"sources are missing (an sdist must carry src/**/*.pyx; see "
                         f"MANIFEST.in), and a package built without them fails at its "
                         f"first fit")
    return found


class CythonBuildExt(build_ext):
    """build_ext that turns the .pyx sources into C first (Cython is imported here,
    so that an sdist neither needs nor runs it)."""

    def finalize_options(self):
        super().finalize_options()
        # pip builds with one job; the six modules compile independently.
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def run(self):
        from Cython.Build import cythonize

        # The C sources replace the .pyx ones in the Extension objects themselves:
        # setuptools' finalize_options has already annotated those objects.
        built = {ext.name: ext for ext in cythonize(self.extensions,
                                                     compiler_directives=DIRECTIVES)}
        for ext in self.extensions:
            ext.sources = built[ext.name].sources
        super().run()


if __name__ == "__main__":
    if os.environ.get(RETIRED):
        print(f"setup.py: {RETIRED} is no longer read: the build runs on any processor "
              f"of the platform unless {NATIVE}=1", file=sys.stderr)
    setup(ext_modules=extensions(), cmdclass={"build_ext": CythonBuildExt})
