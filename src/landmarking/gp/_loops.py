"""The compiled loops of the GP steps (``_loops.pyx``), in the build this
processor runs: setup.py compiles ``_loops.pyx`` for each instruction level of
the platform (``_loops_baseline``, and on x86-64 ``_loops_x86_64_v3``), and
importing this module gives the fastest that the processor supports
(:func:`landmarking._compiled.load_dispatched`).
"""

from .._compiled import load_dispatched

load_dispatched(__name__)
