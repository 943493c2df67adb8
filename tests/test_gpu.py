"""The torch path (``device=...``): the GP fit and landmark features on a torch device.

CI has no GPU: the torch path runs on ``torch.device("cpu")`` (the CPU build of
PyTorch) and is compared with the NumPy path for the same seed. The CUDA tests run
only where ``torch.cuda.is_available()``.
"""

import pickle
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import sparse
from sklearn.utils.estimator_checks import parametrize_with_checks

from landmarking import GPLandmarks, cli, load, save
from landmarking import _torch as torch_module
from landmarking._blocks import check_rows
from landmarking._torch import check_device, device_memory, tensor_to_host
from landmarking._torch_kernels import gaussian_features_torch
from landmarking.datasets import make_noisy_swiss_roll, make_sphere_orthant
from landmarking.gp import _torch as _gp_torch
from landmarking.gp import objective
from landmarking.gp.fit import learn_gp_landmarks
from landmarking.gp.objective import greedy_order
from landmarking.io import read_result
from landmarking.kernels import gaussian_features

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (the gpu extra: pip install 'landmarking[gpu]')")

TORCH_CPU = torch.device("cpu")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA GPU (torch.cuda.is_available() is False)")


def _roll(n=900, dtype=np.float64):
    X, _ = make_noisy_swiss_roll(n, random_state=3)
    return X.astype(dtype)


# Tolerances per input dtype, 10-100x above the worst differences measured between
# the torch path on the CPU and the NumPy path in the tests below (issue 26), and far
# below a real divergence (one step more moves a landmark by 4e-3 of the scale).
# Fits: (landmarks, as a fraction of the data's scale; objectives, relative);
# measured float64 8e-15 and 2e-13, float32 9e-7 and 3e-6.
SAME_FIT_TOL = {np.dtype(np.float64): (1e-12, 1e-11), np.dtype(np.float32): (3e-5, 1e-4)}
# Features of two fits: (rtol, atol); measured float64 4e-14 relative and 1.1e-14
# absolute, float32 1.2e-5 and 2.3e-6.
FEATURE_TOL = {np.dtype(np.float64): (1e-11, 1e-13), np.dtype(np.float32): (1e-4, 1e-6)}


def _assert_same_fit(numpy_fit, torch_fit, dtype, slack=1):
    """Landmarks and objectives to ``slack`` times the tolerance of ``dtype``, the
    same steps."""
    landmark_tol, objective_tol = (slack * tol for tol in SAME_FIT_TOL[np.dtype(dtype)])
    scale = np.abs(numpy_fit.landmarks_).max()
    np.testing.assert_allclose(torch_fit.landmarks_, numpy_fit.landmarks_, rtol=0,
                               atol=landmark_tol * scale)
    np.testing.assert_allclose(torch_fit.objective_, numpy_fit.objective_, rtol=objective_tol)
    np.testing.assert_array_equal(torch_fit.n_steps_, numpy_fit.n_steps_)
    assert isinstance(torch_fit.landmarks_, np.ndarray)
    assert torch_fit.landmarks_.dtype == np.float64


# --- the GP fit: torch on the CPU against the NumPy path ----------------------------

SETTINGS = {
    "chunks": dict(n_landmarks=5, n_steps=120, batch_size=250, chunk_size=400),
    "auto-steps": dict(n_landmarks=5, n_steps="auto", batch_size=200),
    "one-batch": dict(n_landmarks=4, n_steps=60, batch_size=2000),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_torch_cpu_landmarks_equal_the_numpy_path(dtype, setting):
    X = _roll(dtype=dtype)
    params = dict(random_state=1, **SETTINGS[setting])
    numpy_fit = GPLandmarks(**params).fit(X)
    torch_fit = GPLandmarks(device=TORCH_CPU, **params).fit(X)
    _assert_same_fit(numpy_fit, torch_fit, dtype)
    assert numpy_fit.device_ == "cpu" and torch_fit.device_ == "cpu"
    if setting == "auto-steps":
        # The stopping rule, computed on the device, stopped the landmarks early.
        assert torch_fit.n_steps_.max() < 1000


@pytest.mark.parametrize("space", ["nonnegative", "sphere"])
def test_torch_cpu_projects_like_the_numpy_path(space):
    X, _ = make_sphere_orthant(600, random_state=0)
    params = dict(n_landmarks=4, n_steps=80, batch_size=150, space=space, random_state=0)
    numpy_fit = GPLandmarks(**params).fit(X)
    torch_fit = GPLandmarks(device=TORCH_CPU, **params).fit(X)
    _assert_same_fit(numpy_fit, torch_fit, X.dtype)
    assert np.all(torch_fit.landmarks_ >= 0)
    if space == "sphere":
        np.testing.assert_allclose(np.linalg.norm(torch_fit.landmarks_, axis=1), 1.0)


@pytest.mark.parametrize("space", ["nonnegative", "sphere"])
def test_torch_projection_is_the_numpy_projection(space):
    from landmarking.spaces import project

    rng = np.random.default_rng(3)
    points = [rng.normal(size=7), rng.uniform(0, 2, 7), -rng.uniform(0.1, 1, 7)]
    for t in points:
        moved = _gp_torch._project(torch, torch.as_tensor(t), space).numpy()
        np.testing.assert_allclose(moved, project(t, space), rtol=1e-15, atol=0)


def test_patched_auto_rule_reaches_the_torch_path(monkeypatch):
    # The driver and both backends read the rule's constants from objective when
    # they run: a patched maximum (and a rule that never stops) holds on the device.
    monkeypatch.setattr(objective, "AUTO_MAX_STEPS", 160)
    monkeypatch.setattr(objective, "AUTO_TOL", -np.inf)
    X = _roll(400)
    params = dict(n_landmarks=2, n_steps="auto", batch_size=100, random_state=0)
    torch_fit = GPLandmarks(device=TORCH_CPU, **params).fit(X)
    np.testing.assert_array_equal(torch_fit.n_steps_, [160, 160])
    _assert_same_fit(GPLandmarks(**params).fit(X), torch_fit, X.dtype)


def test_torch_cpu_sparse_input_equals_the_numpy_path():
    rng = np.random.default_rng(12)
    X = np.abs(rng.normal(size=(500, 6))) * (rng.random((500, 6)) < 0.5)
    params = dict(n_landmarks=4, n_steps=100, batch_size=100, chunk_size=200,
                  kernel_width=1.0, random_state=0)
    numpy_fit = GPLandmarks(**params).fit(sparse.csr_matrix(X))
    torch_fit = GPLandmarks(device=TORCH_CPU, **params).fit(sparse.csr_matrix(X))
    _assert_same_fit(numpy_fit, torch_fit, X.dtype)
    np.testing.assert_allclose(torch_fit.transform(sparse.csr_matrix(X)),
                               numpy_fit.transform(X), rtol=1e-6, atol=1e-12)


def test_torch_cpu_continues_a_run_like_one_longer_run():
    X = _roll(600)
    params = dict(n_steps=80, batch_size=150, random_state=4)
    whole = GPLandmarks(n_landmarks=6, **params).fit(X)
    first = GPLandmarks(n_landmarks=4, device=TORCH_CPU, **params).fit(X)
    continued = GPLandmarks(n_landmarks=6, device=TORCH_CPU, **params).fit(
        X, previous_landmarks=first.landmarks_)
    extended = GPLandmarks(n_landmarks=4, device=TORCH_CPU, **params).fit(X).extend(X, 2)
    landmark_tol, objective_tol = SAME_FIT_TOL[np.dtype(np.float64)]
    for fit in (continued, extended):
        np.testing.assert_allclose(fit.landmarks_, whole.landmarks_, rtol=0,
                                   atol=landmark_tol * np.abs(whole.landmarks_).max())
        np.testing.assert_allclose(fit.objective_, whole.objective_, rtol=objective_tol)


def test_torch_cpu_coincident_starts_stay_finite():
    X = _roll(300)
    init = np.repeat(X[:1], 4, axis=0)
    params = dict(n_landmarks=4, n_steps=50, batch_size=100, init=init, random_state=0)
    numpy_fit = GPLandmarks(**params).fit(X)
    torch_fit = GPLandmarks(device=TORCH_CPU, **params).fit(X)
    assert np.all(np.isfinite(torch_fit.landmarks_))
    _assert_same_fit(numpy_fit, torch_fit, X.dtype)


def test_inverse_factors_on_the_device_invert_the_numpy_factors():
    from landmarking.gp._tables import BatchFactors, KernelTables
    from landmarking.gp.objective import RIDGE
    from landmarking.gp.sampling import draw_sample

    X = _roll(700)
    landmarks = np.vstack([X[:4] + 0.05, X[:1]])  # the last one duplicates the first
    eta = 3.0
    sample = draw_sample(X, batch_size=120, steps=10, seed=0, chunk_size=300)
    layout, tables = sample.layout, KernelTables(sample, landmarks, eta, 2**30)
    fit = _gp_torch._DeviceFit(torch, TORCH_CPU, X, layout, len(landmarks), eta,
                               "euclidean", 10, 10.0, 0.51, False)
    for k, t in enumerate(landmarks):
        fit.add_column(k, t)
    numpy_factors = BatchFactors(layout.n_batches, len(landmarks), layout.batch_sizes(), 2**30)
    for c in range(layout.n_chunks):
        _, _, Phi_c = tables.visit(c, len(landmarks))
        for j in range(layout.batches_per_chunk[c]):
            g = layout.batch_id(c, j)
            L = numpy_factors.factor(g, Phi_c, layout.batch_positions(c, j), len(landmarks)).L
            np.testing.assert_allclose(fit.L_inv[g].numpy() @ L, np.eye(len(landmarks)),
                                       atol=1e-8)
            assert L[-1, -1] >= np.sqrt(RIDGE * layout.batch_sizes()[g])


def test_keyboard_interrupt_keeps_the_finished_landmarks(monkeypatch):
    X = _roll(400)
    real = _gp_torch._Runner.run
    calls = []

    def interrupting(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(_gp_torch._Runner, "run", interrupting)
    params = dict(n_landmarks=5, n_steps=40, batch_size=100, random_state=0)
    gp = GPLandmarks(device=TORCH_CPU, **params)
    with pytest.raises(KeyboardInterrupt):
        gp.fit(X)
    whole = GPLandmarks(**params).fit(X)
    assert gp.landmarks_.shape == (2, 3) and gp.objective_.shape == (2,)
    np.testing.assert_allclose(gp.landmarks_, whole.landmarks_[:2], rtol=0,
                               atol=SAME_FIT_TOL[np.dtype(np.float64)][0]
                               * np.abs(whole.landmarks_).max())


# --- blocks of landmarks (block_size > 1) on the device -------------------------------

# Measured against the NumPy block path on these settings (worst over them):
# float64 4.3e-15 of the scale for the landmarks and 9.5e-15 relative for the
# objectives, float32 6.0e-7 and 4.8e-6. BLOCK_SLACK scales SAME_FIT_TOL to about
# 10x the float64 landmarks' (5e-14) and keeps float32's (3e-5, 1e-4: 50x and 20x);
# one step more moves a landmark by 4e-3 of the scale.
BLOCK_SLACK = {np.dtype(np.float64): 0.05, np.dtype(np.float32): 1}
BLOCK_SETTINGS = {
    "chunks": dict(n_landmarks=7, n_steps=120, batch_size=250, chunk_size=400, block_size=3),
    "auto-steps": dict(n_landmarks=6, n_steps="auto", batch_size=200, block_size=3),
    "one-batch": dict(n_landmarks=5, n_steps=60, batch_size=2000, block_size=5),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("setting", list(BLOCK_SETTINGS))
def test_torch_cpu_blocks_equal_the_numpy_blocks(dtype, setting):
    X = _roll(dtype=dtype)
    params = dict(random_state=1, **BLOCK_SETTINGS[setting])
    numpy_fit = GPLandmarks(**params).fit(X)
    torch_fit = GPLandmarks(device=TORCH_CPU, **params).fit(X)
    _assert_same_fit(numpy_fit, torch_fit, dtype, slack=BLOCK_SLACK[np.dtype(dtype)])
    if setting == "auto-steps":
        # The stopping rule on the block's summed batch objectives, on the device.
        assert torch_fit.n_steps_.max() < 1000


@pytest.mark.parametrize("space", ["nonnegative", "sphere"])
def test_torch_cpu_blocks_project_like_the_numpy_blocks(space):
    # Measured 7.8e-14 of the scale and 1.5e-12 relative (objectives).
    X, _ = make_sphere_orthant(600, random_state=0)
    params = dict(n_landmarks=6, n_steps=80, batch_size=150, space=space, block_size=3,
                  random_state=0)
    numpy_fit = GPLandmarks(**params).fit(X)
    torch_fit = GPLandmarks(device=TORCH_CPU, **params).fit(X)
    _assert_same_fit(numpy_fit, torch_fit, X.dtype)
    assert np.all(torch_fit.landmarks_ >= 0)
    if space == "sphere":
        np.testing.assert_allclose(np.linalg.norm(torch_fit.landmarks_, axis=1), 1.0)


def test_torch_cpu_block_size_one_is_the_sequential_torch_fit():
    X = _roll(600)
    params = dict(n_landmarks=4, n_steps=60, batch_size=150, random_state=2, device=TORCH_CPU)
    default = GPLandmarks(**params).fit(X)
    ones = GPLandmarks(block_size=1, **params).fit(X)
    np.testing.assert_array_equal(ones.landmarks_, default.landmarks_)
    np.testing.assert_array_equal(ones.objective_, default.objective_)


def test_torch_cpu_blocks_continue_across_a_block_boundary():
    # Measured 2.2e-15 of the scale (aligned) and 5.7e-16 (a block cut short).
    X = _roll(600)
    params = dict(n_steps=80, batch_size=150, random_state=4, block_size=2)
    whole = GPLandmarks(n_landmarks=8, **params).fit(X)
    extended = GPLandmarks(n_landmarks=4, device=TORCH_CPU, **params).fit(X).extend(X, 4)
    warm = GPLandmarks(n_landmarks=4, device=TORCH_CPU, warm_start=True, **params).fit(X)
    warm.set_params(n_landmarks=8).fit(X)
    _assert_same_fit(whole, extended, X.dtype)
    _assert_same_fit(whole, warm, X.dtype)
    # Five landmarks in blocks of 3 end on a block of two; the extension starts a
    # new block at landmark 6 on both paths.
    params["block_size"] = 3
    numpy_fit = GPLandmarks(n_landmarks=5, **params).fit(X).extend(X, 4)
    torch_fit = GPLandmarks(n_landmarks=5, device=TORCH_CPU, **params).fit(X).extend(X, 4)
    _assert_same_fit(numpy_fit, torch_fit, X.dtype)


def test_torch_cpu_block_prefixes_are_landmark_sets():
    X = _roll(600)
    params = dict(n_steps=80, batch_size=150, random_state=0, block_size=3,
                  device=TORCH_CPU)
    gp = GPLandmarks(n_landmarks=7, **params).fit(X)
    # Greedy order inside each block: the posterior variance given the landmarks
    # before does not rise, and a shorter fit is a prefix of a longer one.
    for lo, hi in ((0, 3), (3, 6)):
        assert np.all(np.diff(gp.objective_[lo:hi]) <= 1e-12)
    Phi = np.exp(-((X[:, None] - gp.landmarks_[None]) ** 2).sum(-1) / gp.kernel_width_)
    order, _ = greedy_order(Phi[:, :6].T @ Phi[:, :6], 3, objective.RIDGE * len(X))
    assert order.tolist() == [0, 1, 2]
    short = GPLandmarks(n_landmarks=3, **params).fit(X)
    np.testing.assert_array_equal(short.landmarks_, gp.landmarks_[:3])


def test_torch_cpu_sparse_blocks_equal_the_numpy_blocks():
    # Measured 3.0e-16 of the scale (landmarks), 2.2e-15 relative (objectives).
    rng = np.random.default_rng(12)
    X = np.abs(rng.normal(size=(500, 6))) * (rng.random((500, 6)) < 0.5)
    for chunk_size in (200, None):
        params = dict(n_landmarks=5, n_steps=100, batch_size=100, chunk_size=chunk_size,
                      kernel_width=1.0, block_size=2, random_state=0)
        numpy_fit = GPLandmarks(**params).fit(sparse.csr_matrix(X))
        torch_fit = GPLandmarks(device=TORCH_CPU, **params).fit(sparse.csr_matrix(X))
        _assert_same_fit(numpy_fit, torch_fit, X.dtype)
        _assert_same_fit(GPLandmarks(**params).fit(X), torch_fit, X.dtype)


def test_torch_cpu_coincident_starts_in_a_block_drop_like_the_numpy_blocks():
    # Four landmarks from one point: the drop rule leaves all but one out of the
    # first step, and the near-singular G of the next steps amplifies rounding:
    # measured 1.0e-12 of the scale and 6e-13 relative (objectives), hence 10x
    # the tolerance.
    X = _roll(300)
    init = np.repeat(X[:1], 4, axis=0)
    params = dict(n_landmarks=4, n_steps=50, batch_size=100, init=init, block_size=4,
                  random_state=0)
    numpy_fit = GPLandmarks(**params).fit(X)
    torch_fit = GPLandmarks(device=TORCH_CPU, **params).fit(X)
    assert np.all(np.isfinite(torch_fit.landmarks_))
    _assert_same_fit(numpy_fit, torch_fit, X.dtype, slack=10)


def test_device_factor_with_drops_is_the_numpy_factor():
    from landmarking.gp.objective import pivots_with_drops

    rng = np.random.default_rng(5)
    Phi = np.exp(-rng.uniform(0, 3, size=(40, 5)))
    Phi[:, 3] = Phi[:, 1]  # column 3 duplicates column 1: dropped
    Phi[:, 4] = 0.5 * Phi[:, 0] + Phi[:, 2]  # in the span of 0 and 2: dropped
    G = Phi.T @ Phi
    phi_sq = np.diag(G).copy()
    f, active, L = pivots_with_drops(G, phi_sq)
    steps = _gp_torch._Steps(SimpleNamespace(torch=torch, n_features=2, device=TORCH_CPU),
                                  5)
    f_t, active_t, L_t = (v.numpy() for v in steps._factor_with_drops(torch.as_tensor(G),
                                                                        torch.as_tensor(phi_sq)))
    assert active.tolist() == [True, True, True, False, False]
    np.testing.assert_array_equal(active_t, active)
    np.testing.assert_allclose(f_t[active], f[active], rtol=1e-13)
    # A dropped column's pivot is rounding of 0 on both.
    assert np.all(np.abs(f_t[~active]) <= 1e-10 * phi_sq[~active])
    np.testing.assert_allclose(L_t[np.ix_(active, active)], L, rtol=1e-13, atol=1e-15)
    # The dropped columns' rows and columns are the identity's.
    np.testing.assert_array_equal(L_t[~active], np.eye(5)[~active])
    np.testing.assert_array_equal(L_t[:, ~active], np.eye(5)[:, ~active])


# --- landmark features on the device -------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_transform_on_the_device_equals_the_numpy_features(dtype):
    X = _roll(700, dtype)
    gp = GPLandmarks(n_landmarks=6, n_steps=40, batch_size=200, random_state=0,
                     device=TORCH_CPU).fit(X)
    features = gp.transform(X)
    assert isinstance(features, np.ndarray) and features.dtype == dtype
    expected = gaussian_features(X, gp.landmarks_, gp.kernel_width_)
    np.testing.assert_allclose(features, expected, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if dtype == np.float32 else 1e-14)


def test_device_features_in_blocks_equal_one_block():
    X = _roll(500)
    T = X[:7] + 0.1
    one = gaussian_features_torch(X, T, 2.0, TORCH_CPU, chunk_size=10_000)
    blocks = gaussian_features_torch(X, T, 2.0, TORCH_CPU, chunk_size=64)
    np.testing.assert_array_equal(blocks, one)
    np.testing.assert_allclose(one, gaussian_features(X, T, 2.0), rtol=1e-12, atol=1e-14)


def test_set_params_moves_a_model_to_the_numpy_path():
    X = _roll(300)
    gp = GPLandmarks(n_landmarks=3, n_steps=30, batch_size=100, random_state=0,
                     device=TORCH_CPU).fit(X)
    on_device = gp.transform(X)
    np.testing.assert_allclose(gp.set_params(device="cpu").transform(X), on_device,
                               rtol=1e-12, atol=1e-14)


# --- torch tensors as input ----------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_cpu_tensor_gives_the_numpy_result(dtype):
    X = _roll(400)
    tensor = torch.as_tensor(X, dtype=dtype)
    params = dict(n_landmarks=3, n_steps=40, batch_size=100, random_state=0)
    from_tensor = GPLandmarks(**params).fit(tensor)
    from_numpy = GPLandmarks(**params).fit(tensor.numpy())
    np.testing.assert_array_equal(from_tensor.landmarks_, from_numpy.landmarks_)
    np.testing.assert_array_equal(from_tensor.transform(tensor),
                                  from_numpy.transform(tensor.numpy()))


def test_tensor_to_host_views_cpu_memory_and_widens_bfloat16():
    tensor = torch.arange(6, dtype=torch.float32).reshape(3, 2).requires_grad_()
    host = tensor_to_host(tensor)
    assert np.shares_memory(host, tensor.detach().numpy())
    np.testing.assert_array_equal(check_rows(tensor), host)
    wide = tensor_to_host(torch.tensor([[1.5, 2.0]], dtype=torch.bfloat16))
    assert wide.dtype == np.float32
    np.testing.assert_array_equal(wide, [[1.5, 2.0]])


@pytest.mark.parametrize("tensor, match", [
    (torch.empty((10, 3), device="meta"), "'meta' device"),
    (torch.eye(3).to_sparse(), "sparse torch tensor"),
])
def test_tensors_without_readable_values_are_refused(tensor, match):
    with pytest.raises(ValueError, match=match):
        GPLandmarks(n_landmarks=2).fit(tensor)


# --- device values and missing pieces ------------------------------------------------

@pytest.mark.parametrize("device, match", [
    ("gpu", "device='gpu' is not a device"),
    ("CPU", "device='CPU' is not a device"),
    ("cuda:x", "device='cuda:x' is not a device"),
    ("cuda:", "device='cuda:' is not a device"),
    (0, "device=0 is not a device"),
    (None, "device=None is not a device"),
    (torch.device("meta"), "only CPU and CUDA devices"),
])
def test_bad_device_values(device, match):
    X = _roll(100)
    with pytest.raises(ValueError, match=match):
        GPLandmarks(n_landmarks=2, device=device).fit(X)


def test_device_values_resolve():
    assert check_device("cpu") is None
    assert check_device(TORCH_CPU) == TORCH_CPU
    expected = torch.device("cuda") if torch.cuda.is_available() else None
    assert check_device("auto") == expected


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu_names_the_fallback():
    X = _roll(100)
    with pytest.raises(RuntimeError, match="no CUDA GPU.*device='cpu'"):
        GPLandmarks(n_landmarks=2, device="cuda").fit(X)
    gp = GPLandmarks(n_landmarks=2, n_steps=20, device="auto", random_state=0).fit(X)
    assert gp.device_ == "cpu" and gp.device == "auto"  # the parameter keeps its value


def test_cuda_without_torch_names_the_extra(monkeypatch):
    real = torch_module.importlib.import_module

    def no_torch(name, *args):
        if name == "torch":
            raise ImportError("No module named 'torch'")
        return real(name, *args)

    monkeypatch.setattr(torch_module.importlib, "import_module", no_torch)
    with pytest.raises(ImportError, match=r"landmarking\[gpu\].*device='cpu'"):
        GPLandmarks(n_landmarks=2, device="cuda").fit(_roll(100))
    assert check_device("auto") is None  # auto falls back to the NumPy path


def test_out_of_device_memory_names_the_parameter_to_lower(monkeypatch):
    def exhausted(self):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(_gp_torch._Steps, "step", exhausted)
    gp = GPLandmarks(n_landmarks=2, n_steps=20, batch_size=50, device=TORCH_CPU)
    with pytest.raises(MemoryError, match="out of memory on cpu.*batch_size.*device='cpu'"):
        gp.fit(_roll(200))


def test_out_of_device_memory_in_transform_names_the_block_size(monkeypatch):
    import landmarking._torch_kernels as kernels_torch

    def exhausted(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory")

    gp = GPLandmarks(n_landmarks=2, n_steps=20, batch_size=50, random_state=0,
                     device=TORCH_CPU).fit(_roll(200))
    monkeypatch.setattr(kernels_torch, "squared_distances_torch", exhausted)
    with pytest.raises(MemoryError, match="working_memory"):
        gp.transform(_roll(200))


def test_device_memory_passes_other_errors_through():
    with pytest.raises(RuntimeError, match="unrelated"), device_memory(TORCH_CPU, lower="x"):
        raise RuntimeError("unrelated")


# --- CUDA, where there is a GPU ------------------------------------------------------

@needs_cuda
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cuda_landmarks_equal_the_numpy_path(dtype):
    X = _roll(dtype=dtype)
    params = dict(n_landmarks=5, n_steps="auto", batch_size=200, random_state=1)
    numpy_fit = GPLandmarks(**params).fit(X)
    cuda_fit = GPLandmarks(device="cuda", **params).fit(X)
    # The CPU tolerances. Measured on an H100 (torch 2.11, CUDA 13): landmarks 9.0e-16
    # of the scale and objectives 5.8e-15 relative in float64, 6.7e-8 and 2.0e-6 in
    # float32 (the probe is quoted in docs/benchmarks.md, "On a GPU").
    _assert_same_fit(numpy_fit, cuda_fit, dtype)
    assert cuda_fit.device_.startswith("cuda")
    rtol, atol = FEATURE_TOL[np.dtype(dtype)]
    np.testing.assert_allclose(cuda_fit.transform(X), numpy_fit.transform(X), rtol=rtol,
                               atol=atol)
    on_gpu = torch.as_tensor(X, device="cuda")
    np.testing.assert_allclose(GPLandmarks(device="cuda", **params).fit(on_gpu).landmarks_,
                               cuda_fit.landmarks_, rtol=0, atol=1e-10)


@needs_cuda
def test_cuda_graphs_replay_the_eager_steps(monkeypatch):
    X = _roll(600)
    from landmarking.kernels import resolve_kernel_width

    width = resolve_kernel_width(X, "auto", random_state=0)
    kwargs = dict(kernel_width=width, n_steps=120, batch_size=150, seed=3,
                  device=torch.device("cuda"))
    graphs = learn_gp_landmarks(X, 4, **kwargs)[0]
    monkeypatch.setattr(_gp_torch, "CUDA_GRAPHS", False)
    eager = learn_gp_landmarks(X, 4, **kwargs)[0]
    np.testing.assert_allclose(graphs, eager, rtol=0, atol=1e-10)


@needs_cuda
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("setting", ["chunks", "auto-steps"])
def test_cuda_blocks_equal_the_numpy_blocks(dtype, setting):
    X = _roll(dtype=dtype)
    params = dict(random_state=1, **BLOCK_SETTINGS[setting])
    numpy_fit = GPLandmarks(**params).fit(X)
    cuda_fit = GPLandmarks(device="cuda", **params).fit(X)
    # The CPU tolerances. Measured on an H100: landmarks at most 7.8e-16 of the scale
    # and objectives 3.9e-15 relative in float64, 1.0e-7 and 1.7e-6 in float32.
    _assert_same_fit(numpy_fit, cuda_fit, dtype, slack=BLOCK_SLACK[np.dtype(dtype)])
    assert cuda_fit.device_.startswith("cuda")


@needs_cuda
def test_cuda_graphs_replay_the_eager_block_steps(monkeypatch):
    X = _roll(600)
    kwargs = dict(kernel_width=4.0, n_steps=120, batch_size=150, seed=3, block_size=3,
                  device=torch.device("cuda"))
    graphs = learn_gp_landmarks(X, 5, **kwargs)[0]  # blocks of 3 and 2: two graphs
    monkeypatch.setattr(_gp_torch, "CUDA_GRAPHS", False)
    eager = learn_gp_landmarks(X, 5, **kwargs)[0]
    np.testing.assert_allclose(graphs, eager, rtol=0, atol=1e-10)


# --- scikit-learn, pickling, model files, the command line ----------------------------

@parametrize_with_checks([GPLandmarks(n_landmarks=3, n_steps=20, batch_size=50,
                                      random_state=0, device=TORCH_CPU)])
def test_torch_path_is_sklearn_compatible(estimator, check):
    check(estimator)


def test_pickle_and_model_file_keep_the_device(tmp_path):
    X = _roll(300)
    params = dict(n_landmarks=3, n_steps=30, batch_size=100, random_state=0)
    on_torch = GPLandmarks(device=TORCH_CPU, **params).fit(X)
    again = pickle.loads(pickle.dumps(on_torch))
    assert again.device == TORCH_CPU
    np.testing.assert_array_equal(again.transform(X), on_torch.transform(X))
    auto = GPLandmarks(device="auto", **params).fit(X)
    save(auto, tmp_path / "model.npz")
    loaded = load(tmp_path / "model.npz")
    assert loaded.device == "auto" and loaded.device_ == auto.device_
    np.testing.assert_array_equal(loaded.transform(X), auto.transform(X))


def test_cli_device_cpu_and_bad_device(tmp_path, capsys):
    data = tmp_path / "roll.npy"
    np.save(data, _roll(300))
    common = [str(data), "-n", "3", "--steps", "30", "-q"]
    assert cli.main(["landmarks", *common, "-o", str(tmp_path / "a.npz")]) == 0
    assert cli.main(["landmarks", *common, "--device", "cpu", "-o",
                     str(tmp_path / "b.npz")]) == 0
    a, b = read_result(tmp_path / "a.npz"), read_result(tmp_path / "b.npz")
    np.testing.assert_array_equal(a["landmarks"], b["landmarks"])
    assert cli.main(["features", str(data), "--landmarks", str(tmp_path / "a.npz"),
                     "--device", "auto", "-q", "-o", str(tmp_path / "f.npz")]) == 0
    np.testing.assert_allclose(read_result(tmp_path / "f.npz")["features"],
                               gaussian_features(np.load(data), a["landmarks"],
                                                 float(a["kernel_width"])), rtol=1e-12)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["landmarks", *common, "--device", "gpu", "-o", str(tmp_path / "c.npz")])
    assert exit_info.value.code == 2
    assert "'gpu' is not a device" in capsys.readouterr().err
    assert cli.main(["landmarks", str(data), "-n", "3", "-q", "--device", "auto",
                     "--method", "kmeans", "-o", str(tmp_path / "d.npz")]) == 2
    assert "--device does not apply to --method kmeans" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert cli.main(["features", str(data), "--landmarks", str(tmp_path / "a.npz"),
                         "--device", "cuda", "-o", str(tmp_path / "g.npz")]) == 2
        assert "no CUDA GPU" in capsys.readouterr().err
        assert not (tmp_path / "g.npz").exists()


def test_cli_continues_a_run_on_another_device(tmp_path):
    data = tmp_path / "roll.npy"
    np.save(data, _roll(300))
    out = str(tmp_path / "a.npz")
    common = [str(data), "--steps", "30", "-q", "-o", out]
    assert cli.main(["landmarks", *common, "-n", "2", "--device", "auto"]) == 0
    assert cli.main(["landmarks", *common, "-n", "4", "--continue", out]) == 0
    assert cli.main(["landmarks", str(data), "--steps", "30", "-q", "-n", "4", "-o",
                     str(tmp_path / "whole.npz")]) == 0
    np.testing.assert_allclose(read_result(out)["landmarks"],
                               read_result(tmp_path / "whole.npz")["landmarks"], atol=1e-10)


def test_make_installs_the_floor_of_the_gpu_extra_before_the_package():
    root = Path(__file__).resolve().parents[1]
    extra = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["gpu"]
    floor = re.fullmatch(r"torch>=(\S+)", extra[0]).group(1)
    makefile = (root / "Makefile").read_text()
    assert re.search(rf"^TORCH := torch=={re.escape(floor)}$", makefile, re.M)
    assert re.search(r"^EXTRAS := .*\bgpu\b", makefile, re.M)
    install = makefile.index('pip install --quiet "$(TORCH)"')
    assert install < makefile.index('pip install --quiet -e ".[$(EXTRAS)]"')


def test_cli_transform_runs_a_gpu_model_where_asked(tmp_path, capsys):
    X = _roll(300)
    data = tmp_path / "roll.npy"
    np.save(data, X)
    gp = GPLandmarks(n_landmarks=3, n_steps=30, batch_size=100, random_state=0).fit(X)
    save(gp.set_params(device="cuda"), tmp_path / "model.npz")  # as fitted on a GPU
    out = tmp_path / "features.npz"
    assert cli.main(["transform", str(data), "--model", str(tmp_path / "model.npz"), "-q",
                     "-o", str(out)]) == 0  # --device defaults to cpu
    expected = gp.set_params(device="cpu").transform(X)
    np.testing.assert_array_equal(read_result(out)["features"], expected)
    assert cli.main(["transform", str(data), "--model", str(tmp_path / "model.npz"), "-q",
                     "--device", "auto", "-o", str(tmp_path / "auto.npz")]) == 0
    np.testing.assert_allclose(read_result(tmp_path / "auto.npz")["features"], expected,
                               rtol=1e-5, atol=1e-7)


def test_cli_topics_takes_a_device(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(40):
        words = "apple banana cherry date fig" if i % 2 else "car bus train boat ship"
        (corpus / f"d{i}.txt").write_text(f"{words} {words.split()[i % 5]}")
    common = [str(corpus), "-n", "2", "--vocabulary", "10", "--steps", "30", "-q"]
    assert cli.main(["topics", *common]) == 0
    default = capsys.readouterr().out
    assert cli.main(["topics", *common, "--device", "auto"]) == 0
    assert capsys.readouterr().out == default and "topic" in default
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["topics", *common, "--device", "tpu"])
    assert exit_info.value.code == 2
    assert "'tpu' is not a device" in capsys.readouterr().err
