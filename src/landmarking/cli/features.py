"""``landmarking features``: Gaussian landmark features of DATA for landmarks saved by
``landmarking landmarks``, on the host or a device."""

import argparse

import numpy as np

from .._blocks import working_dtype
from .._landmark_features import landmark_features
from ..io import InputError, input_sha256, read_result, write_result
from ._common import check_device, check_outputs, load_data, say, streamed, write_rows

# Called by :func:`landmarking.cli.main`: the command line, not these functions, is the
# public interface (nothing here is in the API reference).
__all__: list[str] = []


def run_features(args: argparse.Namespace) -> int:
    """Run ``landmarking features``; returns the exit status."""
    # The device is named (and refused if absent) before any data is read.
    features = landmark_features(check_device(args) or "cpu")
    fmt = None if streamed(args) else check_outputs(args)
    saved = read_result(args.landmarks, required=["landmarks"])
    landmarks = np.asarray(saved["landmarks"], dtype=float)
    width = args.kernel_width
    if width is None:
        if "kernel_width" not in saved:
            raise InputError(
                f"{args.landmarks}: holds no kernel width; pass one with --kernel-width WIDTH."
            )
        width = float(saved["kernel_width"])
    X = load_data(args).X
    if X.shape[1] != landmarks.shape[1]:
        raise InputError(
            f"{args.data}: has {X.shape[1]} columns but the landmarks in {args.landmarks} have "
            f"{landmarks.shape[1]}; give data with the columns the landmarks were learnt on."
        )
    if streamed(args):
        shape = write_rows(args, features.block, X, landmarks, width, n_out=len(landmarks),
                           dtype=working_dtype(X))
        say(args, f"wrote features of shape {shape} to {args.output}")
        return 0
    result = np.asarray(features.features(X, landmarks, width))
    params = {"landmarks": str(args.landmarks), "landmarks_sha256": input_sha256(args.landmarks),
              "kernel_width": width, "key": args.key}
    write_result(args.output, {"features": result}, parameters=params, source=args.data,
                 command=args.command_line, fmt=fmt, force=args.force)
    say(args, f"wrote features of shape {result.shape} to {args.output}")
    return 0
