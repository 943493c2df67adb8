"""``landmarking transform``: a saved model applied to new points (an embedding
model places them, a landmark model gives their landmark features)."""

import argparse
import zipfile
from pathlib import Path

import numpy as np

from .._blocks import take_rows
from ..io import InputError, input_sha256, read_result, write_result
from ..persistence import HEADER, load
from ._common import (
    check_device,
    check_outputs,
    dense_if_needed,
    label_codes,
    load_data,
    plot_embedding,
    say,
    streamed,
    write_rows,
)

# Called by :func:`landmarking.cli.main`: the command line, not these functions, is the
# public interface (nothing here is in the API reference).
__all__: list[str] = []


def run_transform(args: argparse.Namespace) -> int:
    """Run ``landmarking transform``; returns the exit status."""
    if args.device is not None:
        check_device(args)
    fmt = None if streamed(args) else check_outputs(args, ("--plot", args.plot, "png"))
    cls, n_features, place, key = _read_model(args)
    if args.plot and key == "features":
        raise InputError(
            f"{args.model}: holds a {cls.__name__}, whose transform gives landmark features, "
            "not coordinates to draw; drop --plot."
        )
    data = load_data(args)
    X = dense_if_needed(args, cls, data.X)
    if X.shape[1] != n_features:
        raise InputError(
            f"{args.data}: has {X.shape[1]} columns but the model in {args.model} was fitted on "
            f"{n_features}; give points with the same columns."
        )
    labels = label_codes(args, X.shape[0])
    if streamed(args):
        if args.plot:
            raise InputError("--plot draws from a result in memory; drop --plot when writing "
                             "a .npy or .zarr output.")
        first = np.asarray(place(take_rows(X, slice(0, 1))))
        shape = write_rows(args, _place_block, X, place, n_out=first.shape[1],
                           dtype=first.dtype)
        say(args, f"wrote {key} of shape {shape} to {args.output}")
        return 0
    result = np.asarray(place(X))
    params = {"model": str(args.model), "model_sha256": input_sha256(args.model),
              "estimator": cls.__name__, "key": args.key}
    write_result(args.output, {key: result}, parameters=params,
                 source=args.data, command=args.command_line, fmt=fmt, force=args.force)
    say(args, f"wrote {key} of shape {result.shape} to {args.output}")
    if args.plot:
        plot_embedding(args, result, labels, f"out-of-sample: {Path(args.data).name}")
    return 0


def _place_block(block, place):
    return np.asarray(place(block))


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
    from ..lll.estimator import LocallyLinearLandmarks
    from ..lll.out_of_sample import lll_out_of_sample

    model = read_result(path, required=["landmarks", "landmark_embedding", "n_landmark_neighbors"])
    kwargs = {"n_landmark_neighbors": int(model["n_landmark_neighbors"])}
    if "reg" in model:
        kwargs["reg"] = float(model["reg"])

    def place(X):
        return lll_out_of_sample(X, model["landmarks"], model["landmark_embedding"], **kwargs)

    return LocallyLinearLandmarks, model["landmarks"].shape[1], place, "embedding"


