"""Build the compiled loops: every ``src/landmarking/**/*.pyx`` is one extension module,
and on x86-64 the dispatched ones one per instruction level (``_compiled.py``).

The compiled loops are built ahead of time (Cython, then the C compiler) when the package
is built or installed (``pip install .``, ``make install``), as scikit-learn, openTSNE
and hdbscan do, so that no fit waits for a compiler at run time
(``docs/benchmarks.md``, "Compiled ahead of time"). Everything else about the package
is declared in ``pyproject.toml``; MANIFEST.in puts the ``.pyx`` and ``.pxd`` sources (not
the C that Cython writes, nor the compiled modules) in the sdist.

Cython runs in the ``build_ext`` step only, when extensions are actually built: an
sdist (``python -m build --sdist``) carries the ``.pyx`` files as they are, and a
wheel built from it compiles them there.
"""

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Bounds and negative indices are the compiled loops' own business (their callers check the
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
# -ffp-contract=off: no a * b + c is fused into one rounding either. So a loop
# gives the rounding of the loop it is written as, whatever instructions the compiler
# picks. (Not the same bits on every processor: the BLAS calls around the loops and
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


# The flags of each instruction level of a dispatched module beyond the baseline's
# (landmarking/_compiled.py: which modules, which levels, and the choice at import).
# x86-64-v3 written out as its features, for compilers older than -march=x86-64-v3.
LEVEL_ARGS = {
    "baseline": [],
    "x86_64_v3": ["-mavx", "-mavx2", "-mfma", "-mf16c", "-mbmi", "-mbmi2", "-mlzcnt",
                  "-mmovbe"],
}
# Where a dispatched module's .pyx is copied once per level (Cython names a module's
# C file after its source, and each level is a module of its own).
DISPATCH_DIR = Path("build") / "dispatch"
# Where ``cimport landmarking.<name>`` finds a .pxd.
SRC_DIR = "src"


def _compiled(root):
    """landmarking/_compiled.py of the tree at ``root``, read without importing the
    package (whose dependencies a build need not have)."""
    path = Path(root) / "src" / "landmarking" / "_compiled.py"
    spec = importlib.util.spec_from_file_location("_landmarking_compiled", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _level_source(root, path, src, level):
    """A copy of the .pyx at ``path`` named for ``level``, under DISPATCH_DIR."""
    relative = path.relative_to(src).with_name(f"{path.stem}_{level}.pyx")
    copy = Path(root) / DISPATCH_DIR / relative
    copy.parent.mkdir(parents=True, exist_ok=True)
    if not copy.exists() or copy.read_bytes() != path.read_bytes():
        shutil.copyfile(path, copy)
    return copy.relative_to(root).as_posix()


def extensions(root="."):
    """The Extensions of the .pyx files under ``root``/src, each named by its path
    under src/: one per file, and one per instruction level for the dispatched
    modules (``<name>_baseline``, ``<name>_x86_64_v3``).

    Raises SystemExit when there is none: a package built so would import, then fail
    at its first fit (an sdist made without its .pyx files, for instance).
    """
    src = Path(root) / "src"
    found = []
    args = compile_args()
    native = "-march=native" in args
    for path in sorted(src.rglob("*.pyx")):
        name = ".".join(path.relative_to(src).with_suffix("").parts)
        if name not in _compiled(root).DISPATCHED:
            found.append(Extension(name, [path.relative_to(root).as_posix()],
                                   extra_compile_args=args))
            continue
        for level in _compiled(root).levels():
            # A native build is the building machine's alone at every level.
            level_args = args if native else args + LEVEL_ARGS[level]
            found.append(Extension(f"{name}_{level}",
                                   [_level_source(root, path, src, level)],
                                   extra_compile_args=level_args))
    if not found:
        raise SystemExit(f"no .pyx file under {src.resolve()}: the compiled loops' "
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

        if self.inplace:
            self._remove_undispatched_builds()

        # The C sources replace the .pyx ones in the Extension objects themselves:
        # setuptools' finalize_options has already annotated those objects.
        # include_path: the loops shared by several modules (``_shared_loops.pxd``)
        # are cimported by their full name, which a dispatched copy under
        # build/dispatch finds there as the sources do.
        built = {ext.name: ext for ext in cythonize(self.extensions,
                                                     compiler_directives=DIRECTIVES,
                                                     include_path=[SRC_DIR])}
        for ext in self.extensions:
            ext.sources = built[ext.name].sources
        super().run()

    def _remove_undispatched_builds(self):
        """Delete an in-place build of a dispatched module under its plain name (from
        before the dispatch): it would shadow the module that chooses the build."""
        for name in _compiled(".").DISPATCHED:
            folder = Path("src", *name.split(".")[:-1])
            for stale in folder.glob(name.rsplit(".", 1)[1] + ".*.so"):
                stale.unlink()


if __name__ == "__main__":
    if os.environ.get(RETIRED):
        print(f"setup.py: {RETIRED} is no longer read: the build runs on any processor "
              f"of the platform unless {NATIVE}=1", file=sys.stderr)
    setup(ext_modules=extensions(), cmdclass={"build_ext": CythonBuildExt})
