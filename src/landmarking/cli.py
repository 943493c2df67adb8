"""The ``landmarking`` command: every method from a shell, with files and pictures.

Subcommands: ``landmarks``, ``features``, ``embed``, ``transform``, ``topics``,
``demo`` and ``reproduce``; ``landmarking COMMAND --help`` shows a worked example
for each. Bad input ends with exit status 2 and one line naming the file, the
problem and the fix (the traceback only with ``--debug``); Ctrl-C ends with 130.
"""

import os
import shlex
import subprocess
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ._blocks import as_dask, map_row_blocks, take_rows, working_dtype
from ._checkpoint import Throttle
from ._cli_parser import EMBED_METHODS, EXPERIMENTS, LANDMARK_METHODS, build_parser
from ._cluster import SchedulerLostError, dask_client
from .io import (
    InputError,
    array_writer,
    check_output,
    input_sha256,
    read_corpus,
    read_data,
    read_labels,
    read_result,
    write_result,
)
from .persistence import HEADER, load, save

__all__ = ["main", "build_parser"]

#: Exit status after Ctrl-C, as shells report it.
INTERRUPTED = 130


# --------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``landmarking`` command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status: 0 on success, 2 for bad input or options (one line on stderr
        naming the file, the problem and the fix), 130 after Ctrl-C, 1 for any other
        failure.

    Examples
    --------
    >>> main(["landmarks", "missing.csv", "-n", "3", "-o", "out.npz"])  # doctest: +SKIP
    landmarking landmarks: error: missing.csv: no such file or folder; check the name ...
    2
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.command_line = "landmarking " + shlex.join(argv)
    handler = {"landmarks": _cmd_landmarks, "features": _cmd_features, "embed": _cmd_embed,
               "transform": _cmd_transform, "topics": _cmd_topics, "demo": _cmd_demo,
               "reproduce": _cmd_reproduce}[args.command]
    start = time.perf_counter()
    try:
        with dask_client(getattr(args, "scheduler", None),
                         getattr(args, "dask_workers", None)) as client:
            args.dask = client is not None
            status = handler(args)
    except InputError as exc:
        if args.debug:
            raise
        _error(args, str(exc))
        return 2
    except (ValueError, TypeError) as exc:
        # The estimators' own checks (sklearn convention: ValueError/TypeError at the
        # top of fit) name the problem and the fix; add the file they concern.
        if args.debug:
            raise
        source = getattr(args, "data", None) or getattr(args, "corpus", None)
        _error(args, f"{source}: {_one_line(exc)}" if source else _one_line(exc))
        return 2
    except SchedulerLostError as exc:
        if args.debug:
            raise
        _error(args, f"{exc}; {_after_lost_scheduler(args)}")
        return 1
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("\nlandmarking: interrupted", file=sys.stderr)
        return INTERRUPTED
    except OSError as exc:
        # Unreadable input or unwritable output (permissions, full disk).
        if args.debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        _error(args, f"{where}{exc.strerror or _one_line(exc)}; check the path, its permissions "
                     "and the free space.")
        return 2
    except MemoryError as exc:
        if args.debug:
            raise
        # A device's MemoryError names what to lower; a bare one gets the usual advice.
        _error(args, _one_line(exc) if str(exc) else
               "out of memory; use fewer rows or columns, or a smaller --batch-size.")
        return 1
    except Exception as exc:  # noqa: BLE001 - one line for users, traceback with --debug
        if args.debug:
            raise
        _error(args, f"{type(exc).__name__}: {_one_line(exc)} "
                     "(rerun with --debug for the traceback)")
        return 1
    if status in (None, 0):
        _say(args, f"done in {time.perf_counter() - start:.2f} s")
    return status or 0


def _error(args, message):
    print(f"landmarking {args.command}: error: {message}", file=sys.stderr)


def _say(args, message):
    if not args.quiet:
        print(message, file=sys.stderr)


def _one_line(exc):
    return " ".join(str(exc).split()) or type(exc).__name__


# --------------------------------------------------------------------- helpers


def _load(args, *, dense=False):
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


#: Outputs written block by block, for inputs larger than memory.
STREAMED_SUFFIXES = (".npy", ".zarr")


def _streamed(args):
    return Path(args.output).suffix.lower() in STREAMED_SUFFIXES


def _write_rows(args, func, X, *func_args, n_out, dtype):
    """Write ``func(block, *func_args)`` of every row block of X to the .npy/.zarr output.

    Nothing is gathered in memory: each block is computed and written (computed by
    the Dask workers for Dask input), and the file appears complete or not at all.
    """
    with array_writer(args.output, (X.shape[0], n_out), dtype, force=args.force) as out:
        map_row_blocks(func, X, *func_args, n_out=n_out, dtype=dtype, out=out)
    return (X.shape[0], n_out)


def _check_outputs(args, *extra, force_output=False):
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


def _estimator_params(cls, given, method):
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


def _dense_if_needed(args, cls, X):
    if hasattr(X, "toarray") and not cls().__sklearn_tags__().input_tags.sparse:
        _say(args, f"{cls.__name__} needs dense data: densifying the sparse matrix {X.shape}")
        return X.toarray()
    return X


def _check_device(args):
    """The resolved --device (None: the NumPy path); a device this machine lacks
    (no PyTorch, no GPU) is bad input, named before any data is read."""
    from ._torch import check_device

    try:
        return check_device(args.device or "cpu")
    except (ImportError, RuntimeError) as exc:
        raise InputError(f"--device {args.device}: {_one_line(exc)}") from None


def _seed(args):
    """(option, value) of the seed: the user's --seed, else 0 (reproducible runs)."""
    return ("--seed", args.seed) if args.seed is not None else (None, 0)


#: Where each estimator is defined, for installations that do not export it yet.
_MODULES = {"LocallyLinearLandmarks": "lll.estimator", "LaplacianEigenmaps": "spectral.laplacian",
            "ManifoldSculpting": "embedding.sculpting"}


def _class(name):
    import importlib

    import landmarking

    try:
        return getattr(landmarking, name)
    except AttributeError:
        pass
    try:
        return getattr(importlib.import_module(f"landmarking.{_MODULES[name]}"), name)
    except (KeyError, ImportError, AttributeError):
        raise InputError(
            f"landmarking.{name} is not available in this installation; update the package."
        ) from None


def _label_codes(args, n_samples):
    if not getattr(args, "labels", None):
        return None
    if not args.plot:
        raise InputError("--labels colours the picture; add --plot NAME.png or drop --labels.")
    labels = read_labels(args.labels, n_samples, key=args.labels_key)
    # Colours need numbers; names become codes in sorted order.
    return np.unique(labels, return_inverse=True)[1].ravel()


def _read_view(args, n_samples):
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


def _plot_landmarks(args, X, landmarks, image_shape, labels, view):
    from .plotting import plot_landmarks_auto

    plot_landmarks_auto(X, landmarks, image_shape=image_shape, labels=labels, view=view,
                        path=args.plot)
    _say(args, f"wrote {args.plot}")


def _parameters(estimator, **extra):
    params = {k: v for k, v in estimator.get_params().items() if k != "verbose"}
    params.update(extra)
    return params


# --------------------------------------------------------------------- landmarks


def _cmd_landmarks(args):
    # Extending a file in place is the point of --continue: no --force needed for it.
    resuming_in_place = args.previous is not None and (
        Path(args.output).resolve() == Path(args.previous).resolve())
    fmt = _check_outputs(args, ("--plot", args.plot, "png"), ("--model", args.model, "npz"),
                         force_output=resuming_in_place)
    if args.device is not None:
        _check_device(args)
    previous = None
    if args.previous is not None:
        previous = _read_previous(args)
        if args.image_shape is None and previous["parameters"].get("image_shape"):
            args.image_shape = tuple(previous["parameters"]["image_shape"])
    data = _load(args)
    X = data.X
    labels = _label_codes(args, X.shape[0])
    view = _read_view(args, X.shape[0])
    if X.shape[0] < args.n_landmarks:
        raise InputError(
            f"{args.data}: has {X.shape[0]} rows, fewer than the {args.n_landmarks} landmarks "
            f"requested; ask for at most {X.shape[0]} with -n, or give more data."
        )
    cls = _class(LANDMARK_METHODS[args.method])
    given = {
        "n_landmarks": ("-n", args.n_landmarks),
        "space": ("--space", args.space),
        "n_steps": ("--steps", args.steps),
        "batch_size": ("--batch-size", args.batch_size),
        "kernel_width": ("--kernel-width", args.kernel_width),
        "random_state": _seed(args),
        "device": ("--device", args.device),
        "verbose": (None, not args.quiet),
    }
    fit_params = {}
    if previous is not None:
        given = _merge_previous(args, given, previous)
        fit_params["previous_landmarks"] = previous["landmarks"]
    params = _estimator_params(cls, given, args.method)
    X = _dense_if_needed(args, cls, X)
    if "verbose" not in params:
        _say(args, f"learning {args.n_landmarks} landmarks with --method {args.method} ...")
    estimator = cls(**params)
    if fmt == "npz" and _takes_checkpoint(cls):
        # Save as the run goes, so that a killed process can be continued.
        fit_params["checkpoint"] = Throttle(
            lambda *state: _write_landmarks(args, estimator, data, fmt, complete=False,
                                            previous=previous, state=state))
    try:
        estimator.fit(X, **fit_params)
    except KeyboardInterrupt:
        return _write_interrupted(args, estimator, data, fmt, previous)
    _write_landmarks(args, estimator, data, fmt, complete=True, previous=previous)
    _say(args, f"wrote {len(estimator.landmarks_)} landmarks to {args.output}")
    if args.model:
        save(estimator, args.model)
        _say(args, f"wrote the fitted {cls.__name__} to {args.model}")
    if args.plot:
        _plot_landmarks(args, X, estimator.landmarks_, data.image_shape, labels, view)
    return 0


def _check_more_requested(args, done, what):
    """--continue with ``done`` finished: -n, the total, must ask for more."""
    if args.n_landmarks <= done:
        raise InputError(
            f"{args.previous}: already holds {done} {what}; -n is the total, so ask for more "
            f"than {done} (e.g. -n {2 * done})."
        )


def _read_previous(args):
    if args.method != "gp":
        raise InputError(
            f"--continue extends gp runs only (--method {args.method} is fast to rerun); "
            "rerun with a larger -n instead."
        )
    previous = read_result(args.previous, required=["landmarks", "parameters"])
    saved = previous["parameters"]
    if saved.get("method", "gp") != "gp":
        raise InputError(
            f"{args.previous}: holds {saved.get('method')} landmarks; "
            "--continue extends gp runs only."
        )
    if previous.get("input_sha256") and previous["input_sha256"] != input_sha256(args.data):
        raise InputError(
            f"{args.previous}: was learnt from other data than {args.data} (the sha256 differs); "
            "continue a run on the same DATA, or start a new run without --continue."
        )
    if saved.get("key") != args.key:
        raise InputError(
            f"{args.previous}: was learnt from --key {saved.get('key')}, not {args.key}; "
            "pass the same --key."
        )
    _check_more_requested(args, len(previous["landmarks"]), "landmarks")
    return previous


def _merge_previous(args, given, previous):
    """The run continues with the saved parameters; a differing option is an error."""
    saved = previous["parameters"]
    merged = dict(given)
    for name, (option, value) in given.items():
        # Where a run computes never changes its landmarks: a continued run may move.
        if name in ("n_landmarks", "verbose", "device") or name not in saved:
            continue
        explicit = value is not None and option is not None
        if explicit and value != saved[name]:
            raise InputError(
                f"{args.previous}: was learnt with {option} {saved[name]}, not {value}; "
                f"drop {option} (a continued run keeps the saved parameters) or start a new run."
            )
        merged[name] = (None, saved[name])
    return merged


def _takes_checkpoint(cls):
    import inspect

    return "checkpoint" in inspect.signature(cls.fit).parameters


def _write_landmarks(args, estimator, data, fmt, *, complete, previous=None, state=None):
    """Write the landmarks: the fitted ones, or ``state`` = (landmarks, objective,
    seconds) of a run still going (a checkpoint)."""
    if state is None:
        state = (estimator.landmarks_, getattr(estimator, "objective_", None),
                 getattr(estimator, "landmark_seconds_", None))
    landmarks = np.asarray(state[0])
    arrays = {"landmarks": landmarks}
    for key, value in (("objective", state[1]), ("seconds", state[2]),
                       ("kernel_width", getattr(estimator, "kernel_width_", None))):
        if value is None:
            continue
        value = np.asarray(value)
        if (value.ndim == 1 and previous is not None and key in previous
                and len(value) < len(landmarks)):
            # A continued fit reports only its new landmarks; keep the earlier values.
            value = np.concatenate([previous[key], value])
        arrays[key] = value
    arrays["n_requested"] = np.asarray(args.n_landmarks)
    arrays["complete"] = np.asarray(complete)
    if data.image_shape is not None:
        arrays["image_shape"] = np.asarray(data.image_shape)
    parameters = _parameters(estimator, method=args.method, key=args.key,
                             image_shape=data.image_shape)
    # The run may have been resumed: record the total asked for, not a partial count.
    parameters["n_landmarks"] = args.n_landmarks
    same_as_previous = args.previous is not None and (
        Path(args.output).resolve() == Path(args.previous).resolve())
    # After this run's first checkpoint the file is its own to replace.
    ours = getattr(args, "checkpointed", False)
    if getattr(args, "data_sha256", None) is None:
        args.data_sha256 = input_sha256(args.data)  # once, not at every checkpoint
    write_result(args.output, arrays, parameters=parameters, source=args.data,
                 command=args.command_line, fmt=fmt, force=args.force or same_as_previous or ours,
                 source_sha256=getattr(args, "data_sha256", None))
    args.checkpointed = True


def _write_interrupted(args, estimator, data, fmt, previous):
    landmarks = getattr(estimator, "landmarks_", None)
    if landmarks is None or len(landmarks) == 0:
        print("\nlandmarking landmarks: interrupted before the first landmark was finished; "
              "nothing written.", file=sys.stderr)
        return INTERRUPTED
    _write_landmarks(args, estimator, data, fmt, complete=False, previous=previous)
    print(f"\nlandmarking landmarks: interrupted; wrote the {len(landmarks)} landmarks finished "
          f"so far (of {args.n_landmarks}) to {args.output}. Resume with:\n  "
          f"{_resume_command(args)}", file=sys.stderr)
    return INTERRUPTED


def _resume_command(args):
    resume = f"landmarking landmarks {shlex.quote(args.data)} -n {args.n_landmarks}"
    if args.key:
        resume += f" --key {shlex.quote(args.key)}"
    if args.model:
        # The model is written once the list is complete.
        resume += f" --model {shlex.quote(args.model)}"
    out = shlex.quote(args.output)
    return f"{resume} --continue {out} -o {out}"


def _after_lost_scheduler(args):
    """What a run that lost its scheduler left, and how to go on (one line)."""
    if args.command == "landmarks" and getattr(args, "checkpointed", False):
        done = len(read_result(args.output)["landmarks"])
        return (f"the {done} landmarks finished so far (of {args.n_landmarks}) are in "
                f"{args.output}; start the scheduler again (or use --dask-workers N) and "
                f"resume with: {_resume_command(args)} --scheduler ADDRESS")
    return "nothing was written; start the scheduler again (or use --dask-workers N) and rerun."


# --------------------------------------------------------------------- features


def _cmd_features(args):
    from .kernels import gaussian_features

    device = _check_device(args)
    features_of = gaussian_features
    if device is not None:
        from ._torch_kernels import features_block_torch, gaussian_features_torch

        def features_of(X, landmarks, width):
            return gaussian_features_torch(X, landmarks, width, device)

    fmt = None if _streamed(args) else _check_outputs(args)
    saved = read_result(args.landmarks, required=["landmarks"])
    landmarks = np.asarray(saved["landmarks"], dtype=float)
    width = args.kernel_width
    if width is None:
        if "kernel_width" not in saved:
            raise InputError(
                f"{args.landmarks}: holds no kernel width; pass one with --kernel-width WIDTH."
            )
        width = float(saved["kernel_width"])
    data = _load(args)
    X = data.X
    if X.shape[1] != landmarks.shape[1]:
        raise InputError(
            f"{args.data}: has {X.shape[1]} columns but the landmarks in {args.landmarks} have "
            f"{landmarks.shape[1]}; give data with the columns the landmarks were learnt on."
        )
    if _streamed(args):
        on_device = () if device is None else (device,)
        shape = _write_rows(args, gaussian_features if device is None else features_block_torch,
                            X, landmarks, width, *on_device, n_out=len(landmarks),
                            dtype=working_dtype(X))
        _say(args, f"wrote features of shape {shape} to {args.output}")
        return 0
    features = np.asarray(features_of(X, landmarks, width))
    parameters = {"landmarks": str(args.landmarks),
                  "landmarks_sha256": input_sha256(args.landmarks),
                  "kernel_width": width, "key": args.key}
    write_result(args.output, {"features": features}, parameters=parameters, source=args.data,
                 command=args.command_line, fmt=fmt, force=args.force)
    _say(args, f"wrote features of shape {features.shape} to {args.output}")
    return 0


# --------------------------------------------------------------------- embed, transform


def _cmd_embed(args):
    fmt = _check_outputs(args, ("--plot", args.plot, "png"), ("--model", args.model, "npz"))
    cls = _class(EMBED_METHODS[args.method])
    if args.model and not hasattr(cls, "transform"):
        raise InputError(
            f"--model saves a model for `landmarking transform`, and --method {args.method} "
            f"({cls.__name__}) cannot place new points; use --method lll, or drop --model."
        )
    data = _load(args, dense=True)
    X = data.X
    labels = _label_codes(args, X.shape[0])
    landmark_choice = args.landmarks
    if landmark_choice is not None and landmark_choice not in ("random", "random-pruned", "kmeans"):
        landmark_choice = np.asarray(
            read_result(landmark_choice, required=["landmarks"])["landmarks"], dtype=X.dtype)
        if landmark_choice.shape[1] != X.shape[1]:
            raise InputError(
                f"{args.landmarks}: landmarks have {landmark_choice.shape[1]} columns but "
                f"{args.data} has {X.shape[1]}; use landmarks learnt on this data."
            )
    n_landmarks = args.n_landmarks
    if isinstance(landmark_choice, np.ndarray):
        if n_landmarks is not None and n_landmarks != len(landmark_choice):
            raise InputError(
                f"--n-landmarks {n_landmarks} but {args.landmarks} holds {len(landmark_choice)}; "
                "drop --n-landmarks."
            )
        n_landmarks = len(landmark_choice)
    if n_landmarks is not None and n_landmarks > X.shape[0]:
        raise InputError(
            f"{args.data}: has {X.shape[0]} rows, fewer than the {n_landmarks} landmarks "
            f"requested; ask for at most {X.shape[0]} with --n-landmarks."
        )
    if args.neighbors is not None and args.neighbors >= X.shape[0]:
        raise InputError(
            f"{args.data}: has {X.shape[0]} rows, too few for --neighbors {args.neighbors}; "
            f"pass fewer than {X.shape[0]} neighbours."
        )
    given = {
        "n_components": ("-d", args.n_components),
        "n_neighbors": ("--neighbors", args.neighbors),
        "bandwidth": ("--bandwidth", args.bandwidth),
        "n_landmarks": ("--n-landmarks", n_landmarks),
        "n_landmark_neighbors": ("--landmark-neighbors", args.landmark_neighbors),
        "landmarks": ("--landmarks", landmark_choice),
        "scale_rate": ("--scale-rate", args.scale_rate),
        "preprocess": ("--start", args.start),
        "random_state": _seed(args),
        "verbose": (None, not args.quiet),
    }
    estimator = cls(**_estimator_params(cls, given, args.method))
    embedding = np.asarray(estimator.fit_transform(X))
    parameters = _parameters(estimator, method=args.method, key=args.key)
    if isinstance(landmark_choice, np.ndarray):
        parameters["landmarks"] = str(args.landmarks)
    arrays = {"embedding": embedding}
    timings = getattr(estimator, "timings_", None)
    if timings:
        parameters["timings_s"] = {k: float(v) for k, v in timings.items()}
    write_result(args.output, arrays, parameters=parameters, source=args.data,
                 command=args.command_line, fmt=fmt, force=args.force)
    _say(args, f"wrote an embedding of shape {embedding.shape} to {args.output}")
    if args.model:
        save(estimator, args.model)
        _say(args, f"wrote the fitted {type(estimator).__name__} to {args.model}")
    if args.plot:
        _plot_embedding(args, embedding, labels, f"{args.method}: {Path(args.data).name}")
    return 0


def _read_model(args):
    """The model of ``--model``: ``(class, n_features, place, key)``.

    ``place(X)`` is its transform, and ``key`` names what that gives: "embedding"
    (coordinates) or "features" (landmark features).

    Reads files of :func:`landmarking.save` and, so that they keep working, the
    arrays-only LLL models that ``embed --model`` wrote before it (landmarks, the
    landmark embedding, K_Z and the ridge).
    """
    path = Path(args.model)
    if not path.is_file():
        raise InputError(f"{path}: no such file; give the model written by `landmarking embed "
                         "--model` (or `landmarks --model`, or landmarking.save).")
    try:
        with zipfile.ZipFile(path) as archive:
            files = {name.removesuffix(".npy") for name in archive.namelist()}
    except (zipfile.BadZipFile, OSError):
        files = set()  # load() below names the problem
    if HEADER not in files and {"landmarks", "landmark_embedding", "n_landmark_neighbors"} <= files:
        if args.device is not None:
            raise InputError(f"{path}: --device does not apply to an LLL model of "
                             "landmarking 0.1; drop it.")
        return _read_legacy_lll_model(path)
    model = load(path)
    if not hasattr(model, "transform"):
        raise InputError(
            f"{path}: holds a {type(model).__name__}, which cannot place new points (it has no "
            "transform); save a model of --method lll with `landmarking embed --model`."
        )
    if "device" in model.get_params():
        # Where a model computes is this command's choice (--device, default cpu),
        # not the machine's it was fitted on: a model fitted on a GPU works anywhere.
        model.set_params(device=args.device or "cpu")
    elif args.device is not None:
        raise InputError(f"{path}: --device does not apply to a {type(model).__name__} model; "
                         "drop it.")
    key = "embedding" if hasattr(model, "embedding_") else "features"
    return type(model), model.n_features_in_, model.transform, key


def _read_legacy_lll_model(path):
    from .lll import LocallyLinearLandmarks, lll_out_of_sample

    model = read_result(path, required=["landmarks", "landmark_embedding", "n_landmark_neighbors"])
    kwargs = {"n_landmark_neighbors": int(model["n_landmark_neighbors"])}
    if "reg" in model:
        kwargs["reg"] = float(model["reg"])

    def place(X):
        return lll_out_of_sample(X, model["landmarks"], model["landmark_embedding"], **kwargs)

    return LocallyLinearLandmarks, model["landmarks"].shape[1], place, "embedding"


def _cmd_transform(args):
    if args.device is not None:
        _check_device(args)
    fmt = None if _streamed(args) else _check_outputs(args, ("--plot", args.plot, "png"))
    cls, n_features, place, key = _read_model(args)
    if args.plot and key == "features":
        raise InputError(
            f"{args.model}: holds a {cls.__name__}, whose transform gives landmark features, "
            "not coordinates to draw; drop --plot."
        )
    data = _load(args)
    X = _dense_if_needed(args, cls, data.X)
    if X.shape[1] != n_features:
        raise InputError(
            f"{args.data}: has {X.shape[1]} columns but the model in {args.model} was fitted on "
            f"{n_features}; give points with the same columns."
        )
    labels = _label_codes(args, X.shape[0])
    if _streamed(args):
        if args.plot:
            raise InputError("--plot draws from a result in memory; drop --plot when writing "
                             "a .npy or .zarr output.")
        first = np.asarray(place(take_rows(X, slice(0, 1))))
        shape = _write_rows(args, _place_block, X, place, n_out=first.shape[1],
                            dtype=first.dtype)
        _say(args, f"wrote {key} of shape {shape} to {args.output}")
        return 0
    result = np.asarray(place(X))
    parameters = {"model": str(args.model), "model_sha256": input_sha256(args.model),
                  "estimator": cls.__name__, "key": args.key}
    write_result(args.output, {key: result}, parameters=parameters,
                 source=args.data, command=args.command_line, fmt=fmt, force=args.force)
    _say(args, f"wrote {key} of shape {result.shape} to {args.output}")
    if args.plot:
        _plot_embedding(args, result, labels, f"out-of-sample: {Path(args.data).name}")
    return 0


def _place_block(block, place):
    return np.asarray(place(block))


def _plot_embedding(args, embedding, labels, title):
    from .plotting import plot_embedding, plot_rows

    rows = plot_rows(len(embedding))
    plot_embedding(np.asarray(embedding)[rows], labels=None if labels is None else labels[rows],
                   title=title, path=args.plot)
    _say(args, f"wrote {args.plot}")


# --------------------------------------------------------------------- topics


def _cmd_topics(args):
    if args.device is not None:
        _check_device(args)
    previous = getattr(args, "previous", None)
    if args.output:
        resuming_in_place = previous is not None and (
            Path(args.output).resolve() == Path(previous).resolve())
        check_output(args.output, force=args.force or resuming_in_place, fmt="npz")
    import warnings

    from .text import sqrt_histograms, strip_headers, top_words

    documents, _ = read_corpus(args.corpus, field=args.field)
    if args.strip_headers:
        documents = [strip_headers(doc) for doc in documents]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # dropped documents are reported below
        X, vocabulary, kept = sqrt_histograms(documents, args.vocabulary, dense=True)
    if len(kept) < len(documents):
        _say(args, f"left out {len(documents) - len(kept)} documents with no vocabulary word")
    if X.shape[0] < args.n_landmarks:
        raise InputError(
            f"{args.corpus}: has {X.shape[0]} usable documents, fewer than the {args.n_landmarks} "
            f"topics requested; ask for at most {X.shape[0]} with -n, or give more documents."
        )
    cls = _class("GPLandmarks")
    given = {
        "n_landmarks": ("-n", args.n_landmarks),
        "space": ("--space", "sphere"),
        "n_steps": ("--steps", args.steps),
        "batch_size": ("--batch-size", args.batch_size),
        "kernel_width": ("--kernel-width", args.kernel_width),
        "random_state": _seed(args),
        "device": ("--device", args.device),
        "verbose": (None, not args.quiet),
    }
    fit_params = {}
    if previous is not None:
        saved = _read_previous_topics(args, vocabulary)
        given = _merge_previous(args, given, saved)
        fit_params["previous_landmarks"] = saved["landmarks"]
    estimator = cls(**_estimator_params(cls, given, "gp"))
    if args.output:
        # Save as the run goes, so that a killed process can be continued.
        fit_params["checkpoint"] = Throttle(
            lambda *state: _write_topics(args, estimator, state[0], vocabulary, complete=False))
    interrupted = False
    try:
        estimator.fit(X, **fit_params)
    except KeyboardInterrupt:
        interrupted = True
        if getattr(estimator, "landmarks_", None) is None:
            raise
    landmarks = np.asarray(estimator.landmarks_)
    # On the sphere a landmark's squared entries sum to one: a word distribution.
    for k, landmark in enumerate(landmarks, start=1):
        print(f"topic {k:3d}: {' '.join(top_words(landmark, vocabulary, args.top))}")
    sys.stdout.flush()
    if args.output:
        _write_topics(args, estimator, landmarks, vocabulary, complete=not interrupted)
        _say(args, f"wrote {len(landmarks)} topic landmarks and the vocabulary to {args.output}")
    if interrupted:
        print("landmarking topics: interrupted; printed the topics finished so far.",
              file=sys.stderr)
        return INTERRUPTED
    return 0


def _read_previous_topics(args, vocabulary):
    """The saved run that ``topics --continue`` extends, checked against this one."""
    saved = read_result(args.previous, required=["landmarks", "vocabulary", "parameters"])
    if saved.get("input_sha256") and saved["input_sha256"] != _corpus_sha256(args):
        raise InputError(
            f"{args.previous}: was learnt from another corpus than {args.corpus} (the sha256 "
            "differs); continue a run on the same CORPUS, or start a new run without --continue."
        )
    options = {"vocabulary_size": "--vocabulary", "field": "--field",
               "strip_headers": "--strip-headers"}
    for name, option in options.items():
        value = args.vocabulary if name == "vocabulary_size" else getattr(args, name)
        if name in saved["parameters"] and saved["parameters"][name] != value:
            raise InputError(
                f"{args.previous}: was learnt with {option} {saved['parameters'][name]}, not "
                f"{value}; pass the same {option}."
            )
    if not np.array_equal(saved["vocabulary"], np.asarray(vocabulary).astype(str)):
        raise InputError(
            f"{args.previous}: its vocabulary differs from this corpus's; continue a run on "
            "the same CORPUS with the same options."
        )
    _check_more_requested(args, len(saved["landmarks"]), "topics")
    return saved


def _corpus_sha256(args):
    if getattr(args, "corpus_sha256", None) is None:
        args.corpus_sha256 = input_sha256(args.corpus, suffixes=(".txt",))
    return args.corpus_sha256


def _write_topics(args, estimator, landmarks, vocabulary, *, complete):
    parameters = _parameters(estimator, method="gp", vocabulary_size=args.vocabulary,
                             field=args.field, strip_headers=args.strip_headers)
    parameters["n_landmarks"] = args.n_landmarks
    in_place = getattr(args, "previous", None) is not None and (
        Path(args.output).resolve() == Path(args.previous).resolve())
    write_result(args.output, {"landmarks": np.asarray(landmarks),
                               "vocabulary": np.asarray(vocabulary),
                               "kernel_width": getattr(estimator, "kernel_width_", None),
                               "n_requested": np.asarray(args.n_landmarks),
                               "complete": np.asarray(complete)},
                 parameters=parameters, source=args.corpus, command=args.command_line,
                 fmt="npz", force=args.force or in_place or getattr(args, "checkpointed", False),
                 source_sha256=_corpus_sha256(args))
    args.checkpointed = True


# --------------------------------------------------------------------- demo, reproduce


def _cmd_demo(args):
    from .demo import run_demo

    run_demo()
    return 0


def benchmarks_dir():
    """The ``benchmarks/`` folder of the source checkout the package runs from."""
    return Path(__file__).resolve().parents[2] / "benchmarks"


def _cmd_reproduce(args):
    folder = benchmarks_dir()
    script = folder / EXPERIMENTS[args.experiment]
    if not folder.is_dir():
        raise InputError(
            f"{folder}: no benchmarks folder; `reproduce` runs the scripts of a source checkout. "
            "Clone the repository and install it with `pip install -e .` (or `make install`)."
        )
    if not script.is_file():
        raise InputError(
            f"{script}: this experiment's script is missing from the checkout; update the "
            "repository (git pull)."
        )
    command = [sys.executable, str(script)]
    if args.full:
        command.append("--full")
    if args.out:
        command += ["--out", str(Path(args.out).resolve())]
    # The script runs from the repository root (where the default data folder
    # ../shared/data resolves), so paths the user gave relative to here become absolute.
    env = dict(os.environ)
    if env.get("LANDMARKING_DATA"):
        env["LANDMARKING_DATA"] = str(Path(env["LANDMARKING_DATA"]).resolve())
    _say(args, "running " + shlex.join(command))
    return subprocess.call(command, cwd=folder.parent, env=env)


if __name__ == "__main__":
    sys.exit(main())
