"""The compiled loops: which modules there are, the check at ``import landmarking``,
and the build of a dispatched module that this processor runs.

Every ``.pyx`` file of the package is compiled by setup.py, and the fits import the
modules on first use. A package installed without them (an sdist built where no
compiler ran, a checkout never built, a build for another Python) would import and
then fail inside the first fit; :func:`check` makes that an ``ImportError`` at
import, naming the fix, as scikit-learn's ``__check_build`` does.

The check costs a few milliseconds (most of it importing ctypes): each module's file
is found (the import system's own search, so a build for another interpreter does
not count) and loaded by the dynamic linker, which refuses a truncated or foreign
file. It does not run the modules, nor their own imports (NumPy, joblib): those
wait for the first fit, as before.

Run-time dispatch. A wheel runs on any processor of its platform, so the loops
are compiled for the platform's baseline (x86-64: SSE2). The GP steps, LLL's
weights and the column moments are written for 256-bit vectors, and the baseline
build took 1.8-2.0x the native build's time on the default GP fit and 1.3x on
LLL's weights (``benchmarks/native_build.py``), so on x86-64 their ``.pyx`` is
compiled twice (:data:`DISPATCHED`): once for the baseline and once for x86-64-v3 (AVX2, FMA, BMI2;
every x86-64 processor since 2013-2015), as ``<name>_baseline`` and
``<name>_x86_64_v3``. The module ``<name>`` itself is a few lines of Python that
hand over the build this processor runs (:func:`load_dispatched`). Both builds
compute the same bits: neither fuses a multiply-add nor reorders a sum (setup.py's
flags), and the vector loops are written out with a fixed number of partial sums.
"""

import importlib
import importlib.util
import os
import sys

__all__ = ["EXTENSIONS", "SOURCES", "DISPATCHED", "check", "kernel_level", "load_dispatched"]

#: The compiled loops' sources, one module per ``src/landmarking/**/*.pyx`` (tests check
#: the list).
SOURCES = (
    "landmarking._graph_loops",
    "landmarking._moments_loops",
    "landmarking._neighbors_loops",
    "landmarking.gp._loops",
    "landmarking.lll._loops",
    "landmarking.sculpting._loops",
)
#: Sources compiled once per instruction level and chosen at import.
DISPATCHED = ("landmarking._moments_loops", "landmarking.gp._loops",
              "landmarking.lll._loops")
#: The instruction levels of a dispatched module on x86-64, and the processor
#: features (as Linux's /proc/cpuinfo names them) that each needs beyond the
#: baseline; setup.py's flags for each level are in its LEVEL_ARGS.
X86_64_LEVELS = {
    "baseline": (),
    "x86_64_v3": ("avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "abm", "movbe", "xsave"),
}
#: Forces a level (``baseline`` or ``x86_64_v3``), for tests and comparisons.
LEVEL_VARIABLE = "LANDMARKING_KERNELS"


def levels(machine=None):
    """The instruction levels a dispatched module is compiled for on ``machine``
    (by default this one's, as ``os.uname`` names it)."""
    if machine is None:
        if hasattr(os, "uname"):
            machine = os.uname().machine
        else:  # Windows
            import platform

            machine = platform.machine()
    machine = machine.lower()
    return tuple(X86_64_LEVELS) if machine in ("x86_64", "amd64") else ("baseline",)


def extension_modules(machine=None):
    """Every compiled module's name on ``machine``: one per source, and one per
    level for the :data:`DISPATCHED` ones."""
    return tuple(sorted(
        f"{name}_{level}" if name in DISPATCHED else name
        for name in SOURCES
        for level in (levels(machine) if name in DISPATCHED else ("",))))


#: The compiled modules of this platform (what :func:`check` checks).
EXTENSIONS = extension_modules()

FIX = ("Reinstall from a wheel: pip install --force-reinstall landmarking; or build "
       "from source with a C compiler: pip install --no-binary landmarking landmarking, "
       "or pip install -e . in a checkout.")


def _load(name):
    """Find the extension module ``name`` and load its file, without running it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.has_location:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    import ctypes  # 2 ms, and only here

    # The linker's own check (format, machine, undefined symbols). The import
    # later loads the same file again, and the linker hands back this copy.
    ctypes.CDLL(spec.origin)


def check(extensions=EXTENSIONS):
    """Raise ImportError, naming the fix, unless every compiled module can be loaded.

    Parameters
    ----------
    extensions : sequence of str
        Full names of the extension modules.

    Raises
    ------
    ImportError
        From the first module that is missing or cannot be loaded.
    """
    for name in extensions:
        try:
            _load(name)
        except (ImportError, OSError) as error:
            raise ImportError(
                f"landmarking's compiled module {name} is missing or cannot be loaded "
                f"({error}): this installation of landmarking was built without its "
                f"compiled loops, or for another Python or platform. {FIX}",
                name=name) from error


# ---------------------------------------------------------------- run-time dispatch

def _cpu_flags():
    """The processor's feature flags as Linux reports them (empty elsewhere: then
    the baseline runs). Linux lists AVX only where the kernel saves its registers."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def kernel_level(environ=os.environ):
    """The instruction level whose build of the :data:`DISPATCHED` modules runs here:
    the highest of :func:`levels` that the processor supports, or the one
    ``LANDMARKING_KERNELS`` names."""
    available = levels()
    forced = environ.get(LEVEL_VARIABLE, "").strip()
    if forced:
        if forced not in available:
            raise ImportError(f"{LEVEL_VARIABLE}={forced!r}: this platform's compiled loops are "
                              f"built for {', '.join(available)}; unset it to choose by "
                              f"processor")
        return forced
    flags = _cpu_flags()
    supported = [level for level in available
                 if all(flag in flags for flag in X86_64_LEVELS.get(level, ()))]
    return supported[-1]


def load_dispatched(name):
    """Make the module ``name`` (one of :data:`DISPATCHED`) the build of
    :func:`kernel_level`: importing ``name`` then gives that compiled module."""
    sys.modules[name] = importlib.import_module(f"{name}_{kernel_level()}")
