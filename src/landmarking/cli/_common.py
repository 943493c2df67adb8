"""What every command of the ``landmarking`` command line shares: messages, reading
DATA, checking outputs, passing options to an estimator, pictures."""

import sys
from pathlib import Path

import numpy as np

from .._blocks import as_dask, map_row_blocks
from ..io import InputError, array_writer, check_output, read_data, read_labels

__all__ = ["INTERRUPTED", "STREAMED_SUFFIXES", "error", "say", "one_line", "load_data",
           "streamed", "write_rows", "check_outputs", "estimator_params", "dense_if_needed",
           "check_device", "seed", "estimator_class", "label_codes", "read_view",
           "plot_landmarks", "plot_embedding", "parameters"]

#: Exit status after Ctrl-C, as shells report it.
INTERRUPTED = 130

#: Outputs written block by block, for inputs larger than memory.
STREAMED_SUFFIXES = (".npy", ".zarr")


def error(args, message):
    """Print ``message`` as this command's one-line error."""
    print(f"landmarking {args.command}: error: {message}", file=sys.stderr)


def say(args, message):
    """Print a progress message unless --quiet."""
    if not args.quiet:
        print(message, file=sys.stderr)


def one_line(exc):
    """An exception's message on one line."""
    return " ".join(str(exc).split()) or type(exc).__name__


def load_data(args, *, dense=False):
    """Read DATA; with --scheduler/--dask-workers, as a Dask array read by the workers."""
    data = read_data(args.data, key=args.key, image_shape=args.image_shape)
    if dense and hasattr(data.X, "toarray"):
        data.X = data.X.toarray()
    if getattr(args, "dask", False):
        if hasattr(data.X, "toarray"):
            raise InputError(
                f"{args.data}: sparse data cannot go to a Dask cluster here; drop "
                "--scheduler/--dask-workers, or store the data densely (.npy or .zarr)."
            )
        data.X = as_dask(data.X)
    return data


def streamed(args):
    """Whether the output is written block by block (.npy, .zarr)."""
    return Path(args.output).suffix.lower() in STREAMED_SUFFIXES


def write_rows(args, func, X, *func_args, n_out, dtype):
    """Write ``func(block, *func_args)`` of every row block of X to the .npy/.zarr output.

    Nothing is gathered in memory: each block is computed and written (computed by
    the Dask workers for Dask input), and the file appears complete or not at all.
    """
    with array_writer(args.output, (X.shape[0], n_out), dtype, force=args.force) as out:
        map_row_blocks(func, X, *func_args, n_out=n_out, dtype=dtype, out=out)
    return (X.shape[0], n_out)


def check_outputs(args, *extra, force_output=False):
    """Refuse to start when an output exists (without --force) or cannot be written."""
    fmt = check_output(args.output, force=args.force or force_output, fmt=args.format)
    seen = {Path(args.output).resolve()}
    for option, path, kind in extra:
        if path is None:
            continue
        if Path(path).resolve() in seen:
            raise InputError(
                f"{path}: {option} names the same file as another output; choose another name."
            )
        seen.add(Path(path).resolve())
        check_output(path, force=args.force, fmt=kind, option=option)
    return fmt


def estimator_params(cls, given, method):
    """Keep the options the estimator accepts; an option it lacks is an error.

    ``given`` maps parameter names to (option, value); an option of ``None`` marks a
    value the command supplies itself (a default seed, verbosity), which is simply
    left out when the estimator has no such parameter.
    """
    accepted = cls().get_params()
    for name, (option, value) in given.items():
        if value is not None and option is not None and name not in accepted:
            raise InputError(f"{option} does not apply to --method {method}; drop it.")
    return {name: value for name, (option, value) in given.items()
            if value is not None and name in accepted}


def dense_if_needed(args, cls, X):
    """X, densified (with a message) when the estimator takes no sparse input."""
    if hasattr(X, "toarray") and not cls().__sklearn_tags__().input_tags.sparse:
        say(args, f"{cls.__name__} needs dense data: densifying the sparse matrix {X.shape}")
        return X.toarray()
    return X


def check_device(args):
    """The resolved --device (None: the CPU path); a device this machine lacks
    (no PyTorch, no GPU) is bad input, named before any data is read."""
    from .._torch import check_device as resolve

    try:
        return resolve(args.device or "cpu")
    except (ImportError, RuntimeError) as exc:
        raise InputError(f"--device {args.device}: {one_line(exc)}") from None


def seed(args):
    """(option, value) of the seed: the user's --seed, else 0 (reproducible runs)."""
    return ("--seed", args.seed) if args.seed is not None else (None, 0)


def estimator_class(name):
    """The estimator class ``landmarking.<name>``."""
    import landmarking

    try:
        return getattr(landmarking, name)
    except AttributeError:
        raise InputError(
            f"landmarking.{name} is not available in this installation; update the package."
        ) from None


def label_codes(args, n_samples):
    """--labels as integer codes (for colours), or None."""
    if not getattr(args, "labels", None):
        return None
    if not args.plot:
        raise InputError("--labels colours the picture; add --plot NAME.png or drop --labels.")
    labels = read_labels(args.labels, n_samples, key=args.labels_key)
    # Colours need numbers; names become codes in sorted order.
    return np.unique(labels, return_inverse=True)[1].ravel()


def read_view(args, n_samples):
    """The --view embedding to draw landmarks on, or None."""
    if args.view is None:
        return None
    if not args.plot:
        raise InputError(
            "--view sets the picture's coordinates; add --plot NAME.png or drop --view."
        )
    view = read_data(args.view, allow_sparse=False).X
    if view.shape[0] != n_samples or view.shape[1] < 2:
        raise InputError(
            f"{args.view}: the view has shape {view.shape} but needs one row of at least 2 "
            f"coordinates for each of the {n_samples} rows of {args.data}; "
            "pass an embedding of DATA."
        )
    return view


def plot_landmarks(args, X, landmarks, image_shape, labels, view):
    """Draw the landmarks to --plot."""
    from ..plotting import plot_landmarks_auto

    plot_landmarks_auto(X, landmarks, image_shape=image_shape, labels=labels, view=view,
                        path=args.plot)
    say(args, f"wrote {args.plot}")


def plot_embedding(args, embedding, labels, title):
    """Draw the first two coordinates to --plot."""
    from ..plotting import plot_embedding as draw
    from ..plotting import plot_rows

    rows = plot_rows(len(embedding))
    draw(np.asarray(embedding)[rows], labels=None if labels is None else labels[rows],
         title=title, path=args.plot)
    say(args, f"wrote {args.plot}")


def parameters(estimator, **extra):
    """The estimator's parameters (without verbose) and ``extra``, for a result file."""
    params = {k: v for k, v in estimator.get_params().items() if k != "verbose"}
    params.update(extra)
    return params
