"""``landmarking embed``: a low-dimensional embedding of DATA (Locally Linear
Landmarks, Laplacian eigenmaps or Manifold Sculpting), and its model for
``landmarking transform``."""

import argparse
from pathlib import Path

import numpy as np

from ..io import InputError, read_result, write_result
from ..persistence import save
from ._common import (
    check_outputs,
    estimator_class,
    estimator_params,
    label_codes,
    load_data,
    parameters,
    plot_embedding,
    say,
    seed,
)
from .parser import EMBED_METHODS

# Called by :func:`landmarking.cli.main`: the command line, not these functions, is the
# public interface (nothing here is in the API reference).
__all__: list[str] = []

#: The landmark choices of ``--landmarks`` that are names, not files.
LANDMARK_CHOICES = ("random", "random-pruned", "kmeans")


def run_embed(args: argparse.Namespace) -> int:
    """Run ``landmarking embed``; returns the exit status."""
    fmt = check_outputs(args, ("--plot", args.plot, "png"), ("--model", args.model, "npz"))
    cls = estimator_class(EMBED_METHODS[args.method])
    if args.model and not hasattr(cls, "transform"):
        raise InputError(
            f"--model saves a model for `landmarking transform`, and --method {args.method} "
            f"({cls.__name__}) cannot place new points; use --method lll, or drop --model."
        )
    data = load_data(args, dense=True)
    X = data.X
    labels = label_codes(args, X.shape[0])
    landmark_choice = _landmark_choice(args, X)
    n_landmarks = _n_landmarks(args, X, landmark_choice)
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
        "random_state": seed(args),
        "verbose": (None, not args.quiet),
    }
    estimator = cls(**estimator_params(cls, given, args.method))
    embedding = np.asarray(estimator.fit_transform(X))
    params = parameters(estimator, method=args.method, key=args.key)
    if isinstance(landmark_choice, np.ndarray):
        params["landmarks"] = str(args.landmarks)
    timings = getattr(estimator, "timings_", None)
    if timings:
        params["timings_s"] = {k: float(v) for k, v in timings.items()}
    write_result(args.output, {"embedding": embedding}, parameters=params, source=args.data,
                 command=args.command_line, fmt=fmt, force=args.force)
    say(args, f"wrote an embedding of shape {embedding.shape} to {args.output}")
    if args.model:
        save(estimator, args.model)
        say(args, f"wrote the fitted {type(estimator).__name__} to {args.model}")
    if args.plot:
        plot_embedding(args, embedding, labels, f"{args.method}: {Path(args.data).name}")
    return 0


def _landmark_choice(args, X):
    """--landmarks: a name of :data:`LANDMARK_CHOICES`, None, or the landmarks of a file."""
    choice = args.landmarks
    if choice is None or choice in LANDMARK_CHOICES:
        return choice
    choice = np.asarray(read_result(choice, required=["landmarks"])["landmarks"], dtype=X.dtype)
    if choice.shape[1] != X.shape[1]:
        raise InputError(
            f"{args.landmarks}: landmarks have {choice.shape[1]} columns but "
            f"{args.data} has {X.shape[1]}; use landmarks learnt on this data."
        )
    return choice


def _n_landmarks(args, X, landmark_choice):
    """--n-landmarks, or the number of landmarks in the --landmarks file."""
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
    return n_landmarks
