"""Writes the sphere fixtures that issue 35 changed on purpose.

On the sphere, landmarks learned one at a time under a kernel at least 0.5 wide
now start at the centre of the sphere-orthant (``init="auto"``, the authors'
start) instead of Gaussian draws. Of the earlier refactors' fixtures one is such
a fit: ``gp_roll_sphere`` (``tests/data/before_structure``; its width is 8.2);
``seq_sphere_chunks`` (width 0.3) and ``blocks_sphere`` (blocks) keep their
arrays. The old array stays in its file; this is the same fit from the new start,
written once on the commit that made it, from the repository root:
``python tests/data/gp_sphere_step/make_after.py``. The tests hold today's fit to
it within the round-off they state.
"""

import importlib.util
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
#: Fixture name -> the folder of the generator (``make_golden.py`` or
#: ``make_before.py``) that defines its fit.
CHANGED = {"gp_roll_sphere": ("before_structure", "make_golden.py")}


def _fits(folder, script):
    spec = importlib.util.spec_from_file_location(script[:-3], HERE.parent / folder / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fits()


def fits():
    """(name, callable returning the landmarks) for the changed fixtures."""
    return {name: _fits(folder, script)[name] for name, (folder, script) in CHANGED.items()}


if __name__ == "__main__":
    arrays = {name: np.asarray(make()) for name, make in fits().items()}
    np.savez_compressed(HERE / "after.npz", **arrays)
    print(sorted(arrays))
