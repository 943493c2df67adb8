"""``landmarking landmarks``: learn an ordered list of landmarks on DATA (any method
of :data:`~landmarking.cli.parser.LANDMARK_METHODS`), saved as it goes, continued
with ``--continue``."""

import argparse
import inspect
import shlex
import sys

import numpy as np

from ..io import InputError, input_sha256, read_result, write_result
from ..persistence import save
from ._common import (
    INTERRUPTED,
    check_device,
    check_outputs,
    dense_if_needed,
    estimator_class,
    estimator_params,
    label_codes,
    load_data,
    parameters,
    plot_landmarks,
    read_view,
    say,
)
from ._runs import (
    check_more_requested,
    continues_in_place,
    fit_saving_progress,
    landmark_options,
    mark_written,
    may_replace_output,
    merge_previous,
)
from .parser import LANDMARK_METHODS

# Called by :func:`landmarking.cli.main`: the command line, not these functions, is the
# public interface (nothing here is in the API reference).
__all__: list[str] = []


def run_landmarks(args: argparse.Namespace) -> int:
    """Run ``landmarking landmarks``; returns the exit status."""
    fmt = check_outputs(args, ("--plot", args.plot, "png"), ("--model", args.model, "npz"),
                        force_output=continues_in_place(args))
    if args.device is not None:
        check_device(args)
    previous = None
    if args.previous is not None:
        previous = _read_previous(args)
        if args.image_shape is None and previous["parameters"].get("image_shape"):
            args.image_shape = tuple(previous["parameters"]["image_shape"])
    data = load_data(args)
    X = data.X
    labels = label_codes(args, X.shape[0])
    view = read_view(args, X.shape[0])
    if X.shape[0] < args.n_landmarks:
        raise InputError(
            f"{args.data}: has {X.shape[0]} rows, fewer than the {args.n_landmarks} landmarks "
            f"requested; ask for at most {X.shape[0]} with -n, or give more data."
        )
    cls = estimator_class(LANDMARK_METHODS[args.method])
    given = landmark_options(args, ("--space", args.space))
    fit_params = {}
    if previous is not None:
        given = merge_previous(args, given, previous)
        fit_params["previous_landmarks"] = previous["landmarks"]
    params = estimator_params(cls, given, args.method)
    X = dense_if_needed(args, cls, X)
    if "verbose" not in params:
        say(args, f"learning {args.n_landmarks} landmarks with --method {args.method} ...")
    estimator = cls(**params)

    def write(state=None, *, complete=False):
        _write_landmarks(args, estimator, data, fmt, complete=complete, previous=previous,
                         state=state)

    saves_progress = fmt == "npz" and "checkpoint" in inspect.signature(cls.fit).parameters
    if fit_saving_progress(estimator, X, fit_params, write if saves_progress else None):
        return _interrupted(args, estimator, write)
    write(complete=True)
    say(args, f"wrote {len(estimator.landmarks_)} landmarks to {args.output}")
    if args.model:
        save(estimator, args.model)
        say(args, f"wrote the fitted {cls.__name__} to {args.model}")
    if args.plot:
        plot_landmarks(args, X, estimator.landmarks_, data.image_shape, labels, view)
    return 0


def _read_previous(args):
    """The saved run that ``--continue`` extends, checked against this one."""
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
    check_more_requested(args, len(previous["landmarks"]), "landmarks")
    return previous


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
    params = parameters(estimator, method=args.method, key=args.key,
                        image_shape=data.image_shape)
    # The run may have been resumed: record the total asked for, not a partial count.
    params["n_landmarks"] = args.n_landmarks
    if getattr(args, "data_sha256", None) is None:
        args.data_sha256 = input_sha256(args.data)  # once, not at every checkpoint
    write_result(args.output, arrays, parameters=params, source=args.data,
                 command=args.command_line, fmt=fmt, force=may_replace_output(args),
                 source_sha256=args.data_sha256)
    mark_written(args)


def _interrupted(args, estimator, write):
    """Ctrl-C: write the landmarks finished so far and say how to resume."""
    landmarks = getattr(estimator, "landmarks_", None)
    if landmarks is None or len(landmarks) == 0:
        print("\nlandmarking landmarks: interrupted before the first landmark was finished; "
              "nothing written.", file=sys.stderr)
        return INTERRUPTED
    write(complete=False)
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


def after_lost_scheduler(args: argparse.Namespace) -> str:
    """What a run that lost its Dask scheduler left, and how to go on (one line)."""
    if args.command == "landmarks" and getattr(args, "checkpointed", False):
        done = len(read_result(args.output)["landmarks"])
        return (f"the {done} landmarks finished so far (of {args.n_landmarks}) are in "
                f"{args.output}; start the scheduler again (or use --dask-workers N) and "
                f"resume with: {_resume_command(args)} --scheduler ADDRESS")
    return "nothing was written; start the scheduler again (or use --dask-workers N) and rerun."
