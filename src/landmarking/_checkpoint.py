"""Saving a long run as it goes, so that a killed process loses little.

Ctrl-C can be caught and answered by writing what is finished; SIGKILL (the OOM
killer, a preempted cloud node) cannot. So a long run writes its result file as it
goes: after a finished landmark, at most once every :data:`INTERVAL` seconds (so
fast landmarks do not turn the run into a stream of writes), and once more at the
end. Each write is atomic (:func:`landmarking.io.write_result` writes a temporary
file, syncs it and renames it over the old one), so the file on disk is always a
whole result: either the previous checkpoint or the new one, never a torn mix. The
file records ``complete=False`` until the last landmark is in it; ``landmarking
landmarks --continue FILE`` (or ``GPLandmarks.fit(previous_landmarks=...)``)
then finishes the run, with the landmarks one uninterrupted run would give.

:class:`Throttle` is the timing rule alone, for any ``write(*state)`` function;
:func:`landmark_checkpoint` turns the ``checkpoint=`` argument of
:meth:`landmarking.GPLandmarks.fit` into the callback of
:func:`landmarking.gp.fit.learn_gp_landmarks`.
"""

import os
import time
from pathlib import Path

import numpy as np

__all__ = ["INTERVAL", "Throttle", "check_checkpoint", "landmark_checkpoint"]

#: Seconds between two checkpoint writes, at least.
INTERVAL = 1.0


class Throttle:
    """Hand the latest state to ``write`` at most once every ``interval`` seconds.

    Calling the throttle offers a new state: it is written at once when the last
    write is at least ``interval`` seconds old (or there was none), else held back
    until the next call or :meth:`close`, which writes a held-back state.

    Parameters
    ----------
    write : callable
        Called as ``write(*state)``.
    interval : float
        Seconds between writes, at least.
    clock : callable
        Monotonic time in seconds (tests pass a fake one).

    Examples
    --------
    >>> written = []
    >>> throttle = Throttle(written.append, interval=3600)
    >>> throttle(1); throttle(2); throttle(3)   # the first is written, then held back
    >>> throttle.close()                        # the last held-back state is written
    >>> written
    [1, 3]
    """

    def __init__(self, write, *, interval=INTERVAL, clock=time.monotonic):
        self.write = write
        self.interval = interval
        self.clock = clock
        self._pending = None
        self._last = None

    def __call__(self, *state):
        self._pending = state
        if self._last is None or self.clock() - self._last >= self.interval:
            self.flush()

    def flush(self):
        """Write the held-back state, if any."""
        if self._pending is None:
            return
        state, self._pending = self._pending, None
        self.write(*state)
        self._last = self.clock()

    def close(self):
        """Write the held-back state; call once when the run ends or stops."""
        self.flush()


def check_checkpoint(checkpoint):
    """Check the ``checkpoint=`` argument of a fit before any work starts.

    ``None``, a callable, or the path of an ``.npz`` file in an existing folder.
    """
    if checkpoint is None or callable(checkpoint):
        return
    if not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(
            f"checkpoint must be a file path or a callable, got {type(checkpoint).__name__}; "
            "pass e.g. checkpoint='run.npz'."
        )
    path = Path(checkpoint)
    if path.suffix.lower() != ".npz":
        raise ValueError(f"checkpoint {str(path)!r} must name an .npz file; e.g. 'run.npz'.")
    if path.is_dir():
        raise ValueError(f"checkpoint {str(path)!r} is a folder; give a file name in it.")
    if not path.parent.is_dir():
        raise ValueError(
            f"checkpoint {str(path)!r}: the folder {str(path.parent)!r} does not exist; "
            "create it first."
        )


class _Callback:
    """A user's callable: called after every landmark with all landmarks so far."""

    def __init__(self, function, previous_objective, previous_seconds):
        self.function = function
        self.previous = (np.asarray(previous_objective), np.asarray(previous_seconds))

    def __call__(self, landmarks, objectives, seconds):
        self.function(np.array(landmarks), np.concatenate([self.previous[0], objectives]),
                      np.concatenate([self.previous[1], seconds]))

    def close(self):
        pass


def landmark_checkpoint(checkpoint, estimator, n_total, previous_objective=(),
                        previous_seconds=()):
    """The callback for :func:`~landmarking.gp.fit.learn_gp_landmarks`.

    Parameters
    ----------
    checkpoint : None, callable or path
        As given to ``fit`` (already checked by :func:`check_checkpoint`).
    estimator : GPLandmarks
        Its parameters, ``seed_`` and ``kernel_width_`` go into the file.
    n_total : int
        The landmarks the run will have at its end (``complete`` then).
    previous_objective, previous_seconds : array-like
        Values of landmarks kept from before the run, put in front of the new ones.

    Returns
    -------
    None, or an object called as ``callback(landmarks, objectives, seconds)`` with
    a ``close()`` to call when the run ends or stops.
    """
    if checkpoint is None:
        return None
    if callable(checkpoint):
        return _Callback(checkpoint, previous_objective, previous_seconds)
    from .io import write_result

    path = Path(checkpoint)
    parameters = {k: (v if isinstance(v, str) or k != "init" else "array")
                  for k, v in estimator.get_params().items() if k != "verbose"}
    parameters["seed_"] = getattr(estimator, "seed_", None)
    before = (np.asarray(previous_objective, dtype=float),
              np.asarray(previous_seconds, dtype=float))

    def write(landmarks, objectives, seconds):
        write_result(path, {
            "landmarks": landmarks,
            "objective": np.concatenate([before[0], objectives]),
            "seconds": np.concatenate([before[1], seconds]),
            "kernel_width": np.asarray(estimator.kernel_width_),
            "n_requested": np.asarray(n_total),
            "complete": np.asarray(len(landmarks) == n_total),
        }, parameters=parameters, force=True)

    return _Copying(Throttle(write))


class _Copying:
    """Copies the run's live arrays before the throttle may hold them back."""

    def __init__(self, throttle):
        self.throttle = throttle

    def __call__(self, *arrays):
        self.throttle(*(np.array(a) for a in arrays))

    def close(self):
        self.throttle.close()
