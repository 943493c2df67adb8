"""Datasets: generated manifolds (no files needed) and loaders for real data.

Real data is read from a folder (``LANDMARKING_DATA``, default ``../shared/data``);
nothing is ever downloaded. :func:`make_deformed_digits` makes as many elastically
deformed MNIST digits as wanted from the digits in that folder.
"""

from .deformed import make_deformed_digits
from .manifolds import (
                   make_entwined_spirals,
                   make_sculpting_s_curve,
                   make_sculpting_swiss_roll,
                   make_translated_image,
)
from .real import (
                   FACE_SETS,
                   data_available,
                   data_dir,
                   load_coil20,
                   load_faces,
                   load_gtzan,
                   load_mnist,
                   load_newsgroups,
)
from .toy import make_concentric_circles, make_noisy_swiss_roll, make_sphere_orthant

__all__ = [
    "FACE_SETS", "data_available", "data_dir", "load_coil20", "load_faces",
    "load_gtzan", "load_mnist", "load_newsgroups",
    "make_concentric_circles", "make_noisy_swiss_roll", "make_sphere_orthant",
    "make_sculpting_swiss_roll", "make_sculpting_s_curve", "make_entwined_spirals",
    "make_translated_image", "make_deformed_digits",
]
