"""Public names of a package resolved on first use (PEP 562).

``import landmarking`` must load no estimator module, so
the packages ``landmarking`` and ``landmarking.embedding`` list their public
names with the module that defines each, and import that module only when a
name is first looked up.
"""

from importlib import import_module

__all__ = ["lazy_exports"]


def lazy_exports(package, exports):
    """The ``__getattr__`` and ``__dir__`` of a package with lazy public names.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict of str to str
        Public name -> module defining it, relative to ``package``.

    Returns
    -------
    getattr, dir : functions
        To be bound as the package's ``__getattr__`` and ``__dir__``.
    """
    namespace = import_module(package).__dict__

    def __getattr__(name):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value  # later look-ups skip this function
        return value

    def __dir__():
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
