"""Writes the arrays the structure refactor (issue 22) must reproduce bit for bit.

Run once, on the commit before the move (fa0239d), from the repository root:
``python tests/data/before_structure/make_golden.py``. The fits are small, seeded and
cover every estimator and both GP backends (NumPy, and torch on the CPU). A model
file written by that commit's ``landmarking.save`` is kept beside them, so that a
file saved before the move is proven to load after it.

Every array is the one from before the move. ``lll`` and ``lll_map`` have since
changed on purpose, by rounding only: issue 25 moved LLL's reconstruction weights
for K_Z <= 5 from NumPy's stacked LAPACK solve to the compiled Cholesky (measured:
4.1e-14 and 5.6e-14 of the arrays' scale); ``tests/test_structure_golden.py`` holds
those two to 1e-12 of their scale and every other array bit for bit (on the
processor that wrote them: see ``processor()``).
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def fits():
    """(name, callable returning the array to keep) for every seeded fixture."""
    from landmarking import (
        ActiveLearningLandmarks,
        GPLandmarks,
        KMeansLandmarks,
        LaplacianEigenmaps,
        LocallyLinearLandmarks,
        ManifoldSculpting,
        NMFLandmarks,
        RandomLandmarks,
        RPCholeskyLandmarks,
    )
    from landmarking.datasets import make_concentric_circles, make_noisy_swiss_roll

    circles, _ = make_concentric_circles(600, random_state=0)
    roll, _ = make_noisy_swiss_roll(800, random_state=0)
    roll32 = roll.astype(np.float32)
    positive = np.abs(roll) + 0.1
    out = {
        "gp_circles": lambda: GPLandmarks(n_landmarks=6, n_steps=150, batch_size=100,
                                          random_state=0).fit(circles).landmarks_,
        "gp_roll_f32": lambda: GPLandmarks(n_landmarks=5, n_steps=120, batch_size=64,
                                           random_state=1).fit(roll32).landmarks_,
        "gp_roll_chunks": lambda: GPLandmarks(n_landmarks=4, n_steps=100, batch_size=50,
                                              chunk_size=300, random_state=2
                                              ).fit(roll).landmarks_,
        "gp_roll_sphere": lambda: GPLandmarks(n_landmarks=4, n_steps=80, batch_size=64,
                                              space="sphere", random_state=3
                                              ).fit(positive).landmarks_,
        "gp_roll_auto_steps": lambda: GPLandmarks(n_landmarks=3, n_steps="auto",
                                                  batch_size=64, random_state=4
                                                  ).fit(roll).landmarks_,
        "gp_roll_refine": lambda: GPLandmarks(n_landmarks=4, n_steps=60, batch_size=64,
                                              refine=1, random_state=5
                                              ).fit(roll).landmarks_,
        "random": lambda: RandomLandmarks(n_landmarks=7, random_state=0).fit(roll).landmarks_,
        "active": lambda: ActiveLearningLandmarks(n_landmarks=7, random_state=0
                                                  ).fit(roll).landmarks_,
        "rpcholesky": lambda: RPCholeskyLandmarks(n_landmarks=7, random_state=0
                                                  ).fit(roll).landmarks_,
        "kmeans": lambda: KMeansLandmarks(n_landmarks=7, random_state=0).fit(roll).landmarks_,
        "nmf": lambda: NMFLandmarks(n_landmarks=4, random_state=0).fit(positive).landmarks_,
        "laplacian": lambda: LaplacianEigenmaps(n_components=2, n_neighbors=10,
                                                random_state=0).fit_transform(roll),
        "lll": lambda: LocallyLinearLandmarks(n_components=2, n_landmarks=60,
                                              random_state=0).fit_transform(roll),
        "lll_map": lambda: LocallyLinearLandmarks(n_components=2, n_landmarks=60,
                                                  random_state=0).fit(roll[:600]
                                                                      ).transform(roll[600:]),
        "sculpting": lambda: ManifoldSculpting(n_components=2, n_neighbors=10, max_iter=60,
                                               random_state=0).fit_transform(roll[:300]),
    }
    try:
        import torch

        cpu = torch.device("cpu")
        out["gp_circles_torch"] = lambda: GPLandmarks(
            n_landmarks=6, n_steps=150, batch_size=100, random_state=0, device=cpu
        ).fit(circles).landmarks_
        out["lll_torch"] = lambda: LocallyLinearLandmarks(
            n_components=2, n_landmarks=60, random_state=0, device=cpu).fit_transform(roll)
    except ImportError:
        pass
    return out


def versions():
    """The numerical libraries the arrays were computed with, as 'name==version'."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("numpy", "scipy", "scikit-learn", "numba", "torch"):
        try:
            found.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            found.append(f"{name}==absent")
    return found


def processor():
    """The processor the compiled code was built for: numba compiles for the host
    (vector width, fused multiply-adds) and BLAS picks its kernels by it, so
    another processor may round differently with the same libraries."""
    import llvmlite.binding

    return llvmlite.binding.get_host_cpu_name()


def saved_model(path):
    """A fitted GP model saved by this commit's ``landmarking.save``."""
    from landmarking import GPLandmarks, save
    from landmarking.datasets import make_concentric_circles

    circles, _ = make_concentric_circles(300, random_state=0)
    model = GPLandmarks(n_landmarks=4, n_steps=50, batch_size=50, random_state=0).fit(circles)
    save(model, path)


if __name__ == "__main__":
    arrays = {name: np.asarray(make()) for name, make in fits().items()}
    np.savez_compressed(HERE / "golden.npz", versions=np.asarray(versions()),
                        processor=np.asarray(processor()), **arrays)
    saved_model(HERE / "gp_model_v0.2.0.dev0.npz")
    print(sorted(arrays))
