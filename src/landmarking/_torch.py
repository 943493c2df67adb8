"""Where a fit runs: the CPU path (compiled loops on the host), or PyTorch on a device.

Every estimator with a ``device`` parameter resolves it here, once, at the top
of ``fit``:

- ``"cpu"`` (the default) is the CPU path; it needs nothing beyond the core
  dependencies and never imports torch.
- ``"cuda"``, ``"cuda:N"`` or a ``torch.device`` run the torch path on that
  device (the optional extra: ``pip install "landmarking[gpu]"``). A
  ``torch.device("cpu")`` runs the torch path on the CPU: that is how the test
  suite checks the torch path against the CPU path on machines without a GPU.
- ``"auto"`` is ``"cuda"`` when torch is installed and sees a GPU, else ``"cpu"``.

Random streams always come from the estimator's NumPy generator, so the torch
path draws the same batches as the CPU path. Fitted attributes are NumPy
arrays whatever the device.

Besides the resolution, this module holds what every torch path shares: tensors
given as input (:func:`tensor_to_host`, used by :func:`landmarking._blocks.check_rows`)
and the translation of an exhausted device into a ``MemoryError`` that names the
parameter to lower (:func:`device_memory`).
"""

import importlib
from contextlib import contextmanager

__all__ = ["check_device", "device_memory", "device_name", "import_torch", "is_device_name",
           "is_tensor", "tensor_to_host", "to_numpy", "to_tensor"]

DEVICES = ("cpu", "cuda", "cuda:N", "auto", "a torch.device")
GPU_EXTRA = 'pip install "landmarking[gpu]"'


def is_tensor(X):
    """Whether X is a torch tensor (checked without importing torch)."""
    return type(X).__module__.split(".")[0] == "torch" and hasattr(X, "detach")


def import_torch(device=None):
    """Import torch, or raise an ImportError that names the extra and the fallback."""
    try:
        return importlib.import_module("torch")
    except ImportError:
        wanted = f"device={device!r} needs" if device is not None else "This needs"
        raise ImportError(
            f"{wanted} PyTorch, which is not installed. Install the optional extra "
            f"({GPU_EXTRA}), or use device='cpu' (the CPU path, same results)."
        ) from None


def check_device(device):
    """Resolve a ``device`` parameter: None for the CPU path, else a torch.device.

    Raises
    ------
    ValueError
        For a value that is not a device, naming the accepted values.
    ImportError
        For a torch device without torch installed, naming the extra to install.
    RuntimeError
        For ``"cuda"`` on a machine where torch sees no GPU, naming the fallback.

    Examples
    --------
    >>> check_device("cpu") is None
    True
    >>> check_device("tpu")
    Traceback (most recent call last):
    ...
    ValueError: device='tpu' is not a device we run on; pass 'cpu', 'cuda', 'cuda:N', 'auto' or a torch.device.
    """  # noqa: E501
    if type(device).__module__ == "torch" and type(device).__name__ == "device":
        return _checked_torch_device(import_torch(device), device)
    if not isinstance(device, str) or not is_device_name(device):
        raise ValueError(
            f"device={device!r} is not a device we run on; pass 'cpu', 'cuda', "
            "'cuda:N', 'auto' or a torch.device."
        )
    if device == "cpu":
        return None
    if device == "auto":
        try:
            torch = importlib.import_module("torch")
        except ImportError:
            return None
        return torch.device("cuda") if torch.cuda.is_available() else None
    torch = import_torch(device)
    return _checked_torch_device(torch, torch.device(device))


def is_device_name(name):
    """Whether ``name`` is a device string we accept ('cpu', 'cuda', 'cuda:N', 'auto')."""
    if name in ("cpu", "cuda", "auto"):
        return True
    prefix, _, index = name.partition(":")
    return prefix == "cuda" and index.isdigit()


def _checked_torch_device(torch, device):
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"device={str(device)!r}: PyTorch sees no CUDA GPU on this machine (torch "
            f"{torch.__version__}, CUDA build: {torch.version.cuda is not None}). Use "
            "device='cpu' (the CPU path, same results) or device='auto', which "
            "falls back to it."
        )
    if device.type not in ("cpu", "cuda"):
        raise ValueError(
            f"device={str(device)!r}: only CPU and CUDA devices are supported; pass "
            "'cpu', 'cuda' or 'cuda:N'."
        )
    return device


def to_tensor(X, device, dtype=None):
    """X (NumPy array or tensor) as a torch tensor on ``device``.

    A writable NumPy array on the CPU is shared, not copied; a read-only one (a
    memory map opened with mode="r") is copied, since torch tensors are writable.
    """
    torch = import_torch(device)
    if is_tensor(X):
        return X.detach().to(device=device, dtype=dtype)
    flags = getattr(X, "flags", None)
    if flags is not None and not flags.writeable:
        X = X.copy()
    return torch.as_tensor(X, device=device, dtype=dtype)


def to_numpy(t):
    """A tensor (on any device) as a NumPy array on the host."""
    return t.detach().cpu().numpy()


def device_name(device):
    """Where a resolved device runs, as a string: 'cpu' for the CPU path (None),
    else the torch device ('cpu' or 'cuda:N', with the current index filled in)."""
    if device is None or device.type != "cuda" or device.index is not None:
        return "cpu" if device is None else str(device)
    torch = import_torch(device)
    return f"cuda:{torch.cuda.current_device()}"


def tensor_to_host(X):
    """A torch tensor given as data, as a NumPy array.

    A tensor on the CPU becomes a view of its memory (no copy); a tensor on any
    other device is copied to the host, since validation and the CPU path read
    the data there (the torch path moves it back to its own device). bfloat16,
    which NumPy lacks, becomes float32 (exactly). A gradient is detached.

    Raises
    ------
    ValueError
        For a tensor on the 'meta' device (it has a shape but no values), or a
        sparse tensor (pass ``X.to_dense()`` or a scipy sparse matrix).
    """
    torch = import_torch()
    if X.device.type == "meta":
        raise ValueError(
            f"X is a torch tensor on the 'meta' device (shape {tuple(X.shape)}), which "
            "holds no values; pass the tensor with its data, e.g. created on 'cpu' or "
            "'cuda'."
        )
    if X.layout != torch.strided:
        raise ValueError(
            f"X is a sparse torch tensor ({X.layout}); pass X.to_dense() or a scipy "
            "sparse matrix (CSR), which the estimators read one block at a time."
        )
    X = X.detach().resolve_conj().resolve_neg()
    if X.dtype == torch.bfloat16:
        X = X.to(torch.float32)
    return X.cpu().numpy()


@contextmanager
def device_memory(device, *, lower=None, message=None):
    """Re-raise the device running out of memory as a ``MemoryError`` naming the fix.

    The one place that recognises an exhausted device (torch's ``OutOfMemoryError``,
    or the CPU allocator's ``RuntimeError``); every torch path goes through it.

    Parameters
    ----------
    device : torch.device
    lower : str, optional
        What to lower (a parameter and its effect), e.g. "batch_size (points per
        step)"; the message adds the fallback device='cpu'.
    message : str, optional
        The whole message instead, for a caller whose fix is not one thing to lower.
    """
    torch = import_torch(device)
    exhausted = tuple({getattr(torch, "OutOfMemoryError", None),
                       getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)}
                      - {None})
    try:
        yield
    except exhausted as exc:
        raise MemoryError(message or (
            f"out of memory on {device}: {_first_line(exc)}. Lower {lower}, or use "
            "device='cpu' (the CPU path, which streams the data from the host).")
        ) from exc
    except RuntimeError as exc:
        # The CPU allocator reports exhaustion as a plain RuntimeError.
        if "can't allocate memory" not in str(exc) and "not enough memory" not in str(exc):
            raise
        raise MemoryError(message or (
            f"out of memory on {device}: {_first_line(exc)}. Lower {lower}.")
        ) from exc


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
