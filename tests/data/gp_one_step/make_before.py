"""Writes the GP landmarks the one-step refactor (issue 33) is held to.

Run once, on the commit before it (5bd74c0, numba's sequential and block steps),
from the repository root: ``python tests/data/gp_one_step/make_before.py``. The
fits are small and seeded: the sequential fit (``block_size=1``, which became the
block fit with one landmark per block) and fits in blocks, in float64 and float32,
every space, chunks, ``n_steps="auto"``, refinement and CSR input.
``tests/test_gp_blocks.py`` holds today's fits to them within stated round-off.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def fits():
    """(name, callable returning the landmarks) for every fixture."""
    from scipy import sparse

    from landmarking import GPLandmarks
    from landmarking.datasets import (
        make_concentric_circles,
        make_noisy_swiss_roll,
        make_sphere_orthant,
    )

    circles, _ = make_concentric_circles(600, random_state=0)
    roll, _ = make_noisy_swiss_roll(900, random_state=3)
    roll32 = roll.astype(np.float32)
    sphere, _ = make_sphere_orthant(700, n_features=5, n_clusters=3, random_state=2)
    rng = np.random.default_rng(12)
    sparse_X = np.abs(rng.normal(size=(500, 6))) * (rng.random((500, 6)) < 0.5)
    angle = rng.uniform(0, 2 * np.pi, 1000)
    circle = np.c_[np.cos(angle), np.sin(angle)] + 0.02 * rng.normal(size=(1000, 2))

    def gp(X, **params):
        return lambda: GPLandmarks(**params).fit(X).landmarks_

    return {
        "seq_circles": gp(circles, n_landmarks=8, n_steps=150, batch_size=100,
                          block_size=1, random_state=0),
        "seq_roll_f32": gp(roll32, n_landmarks=6, n_steps=150, batch_size=128, block_size=1,
                           random_state=1),
        "seq_sphere_chunks": gp(sphere, n_landmarks=5, n_steps=120, batch_size=90,
                                chunk_size=300, space="sphere", kernel_width=0.3,
                                block_size=1, random_state=4),
        "seq_roll_auto": gp(roll, n_landmarks=4, n_steps="auto", batch_size=100,
                            block_size=1, random_state=2),
        "seq_roll_refine": gp(roll[:600], n_landmarks=4, n_steps=100, batch_size=150,
                              refine=1, kernel_width=4.0, block_size=1, random_state=0),
        "seq_csr": gp(sparse.csr_matrix(sparse_X), n_landmarks=4, n_steps=120, batch_size=100,
                      chunk_size=200, kernel_width=1.0, block_size=1, random_state=0),
        "blocks_circles": gp(circles, n_landmarks=7, n_steps=80, batch_size=100,
                             block_size=3, random_state=0),
        "blocks_default_60": gp(circle, n_landmarks=60, n_steps=150, random_state=0),
        "blocks_roll_f32": gp(roll32, n_landmarks=7, n_steps=120, batch_size=250,
                              chunk_size=400, block_size=3, random_state=1),
        "blocks_roll_auto": gp(roll, n_landmarks=6, n_steps="auto", batch_size=200,
                               block_size=3, random_state=1),
        "blocks_sphere": gp(sphere, n_landmarks=6, n_steps=80, batch_size=150, space="sphere",
                            kernel_width=0.3, block_size=3, random_state=0),
    }


if __name__ == "__main__":
    arrays = {name: np.asarray(make()) for name, make in fits().items()}
    np.savez_compressed(HERE / "before.npz", **arrays)
    print(sorted(arrays))
