"""The compiled kernels are there: checked once, at ``import landmarking``.

Every ``.pyx`` file of the package is one extension module (setup.py builds them),
and the fits import them on first use. A package installed without them (an sdist
built where no compiler ran, a checkout never built, a build for another Python)
would import and then fail inside the first fit; :func:`check` makes that an
``ImportError`` at import, naming the fix, as scikit-learn's ``__check_build`` does.

The check costs a few milliseconds (most of it importing ctypes): each module's file
is found (the import system's own search, so a build for another interpreter does
not count) and loaded by the dynamic linker, which refuses a truncated or foreign
file. It does not run the modules, nor their own imports (NumPy, joblib): those
wait for the first fit, as before.
"""

import importlib.util

__all__ = ["EXTENSIONS", "check"]

#: The extension modules, one per ``src/landmarking/**/*.pyx`` (tests check the list).
EXTENSIONS = (
    "landmarking._graph_kernels",
    "landmarking._moments_kernels",
    "landmarking._neighbors_kernels",
    "landmarking.gp._kernels",
    "landmarking.lll._kernels",
    "landmarking.sculpting._kernels",
)

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
                f"compiled kernels, or for another Python or platform. {FIX}",
                name=name) from error
