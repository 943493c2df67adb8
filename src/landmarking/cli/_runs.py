"""Runs that learn landmarks one at a time and write them to a file as they go
(``landmarks`` and ``topics``): the one place for ``--continue``, checkpoints,
Ctrl-C and the rule that the output may replace the ``--continue`` file.

- The output may be the file ``--continue`` reads (extending it in place is the
  point of ``--continue``, so no ``--force`` is needed): :func:`continues_in_place`.
- After this run's first write the output is its own to replace:
  :func:`may_replace_output` and :func:`mark_written`.
- :func:`fit_saving_progress` fits with a checkpoint (the file is rewritten as
  landmarks finish, at most once a second) and turns Ctrl-C into a return value,
  so that each command writes what is finished and says how to go on.
- :func:`check_more_requested` and :func:`merge_previous` check a ``--continue``
  run against the saved one.
"""

from pathlib import Path

from .._checkpoint import Throttle
from ..gp.estimator import GPLandmarks
from ..io import InputError
from ._common import seed

__all__ = ["landmark_options", "continues_in_place", "may_replace_output", "mark_written",
           "fit_saving_progress", "check_more_requested", "merge_previous"]


def landmark_options(args, space):
    """The estimator parameters of a landmarks run, as (option, value) pairs for
    :func:`~landmarking.cli._common.estimator_params`; ``space`` is the pair of
    ``space``."""
    return {
        "n_landmarks": ("-n", args.n_landmarks),
        "space": space,
        "n_steps": ("--steps", args.steps),
        "block_size": ("--block-size", args.block_size),
        "batch_size": ("--batch-size", args.batch_size),
        "kernel_width": ("--kernel-width", args.kernel_width),
        "random_state": seed(args),
        "device": ("--device", args.device),
        "verbose": (None, not args.quiet),
    }


def continues_in_place(args):
    """Whether the output is the file ``--continue`` extends."""
    previous = getattr(args, "previous", None)
    return previous is not None and Path(args.output).resolve() == Path(previous).resolve()


def may_replace_output(args):
    """Whether a write may replace an existing output: --force, the --continue file
    itself, or a file this run has already written (a checkpoint)."""
    return args.force or continues_in_place(args) or getattr(args, "checkpointed", False)


def mark_written(args):
    """Record that this run has written its output (it may now replace it)."""
    args.checkpointed = True


def fit_saving_progress(estimator, X, fit_params, write=None):
    """Fit; with ``write``, save the run as it goes.

    ``write(state)`` writes the landmarks so far, ``state`` being what the fit's
    checkpoint callback gives (landmarks, objective, seconds); it is called at most
    once a second and after the last landmark, so that a killed process can be
    continued.

    Returns
    -------
    None, or the KeyboardInterrupt that stopped the fit (Ctrl-C): the caller writes
    what is finished, or raises it again when nothing is.
    """
    if write is not None:
        fit_params = {**fit_params, "checkpoint": Throttle(lambda *state: write(state))}
    try:
        estimator.fit(X, **fit_params)
    except KeyboardInterrupt as interrupt:
        return interrupt
    return None


def check_more_requested(args, done, what):
    """--continue with ``done`` finished: -n, the total, must ask for more."""
    if args.n_landmarks <= done:
        raise InputError(
            f"{args.previous}: already holds {done} {what}; -n is the total, so ask for more "
            f"than {done} (e.g. -n {2 * done})."
        )


def merge_previous(args, given, previous):
    """The run continues with the saved parameters; a differing option is an error.

    A GP parameter added since the file was written takes the value its writer
    used in effect (``block_size`` 1 before blocks existed), as
    :func:`landmarking.load` does for models.
    """
    saved = {**GPLandmarks._persistence_earlier_defaults, **previous["parameters"]}
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
