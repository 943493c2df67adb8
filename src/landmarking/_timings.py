"""The stopwatch of the estimators' ``timings_``: ``with stage(timings, "name"):``."""

import time
from contextlib import contextmanager

__all__ = ["stage"]


@contextmanager
def stage(timings, name):
    """Store the seconds the block takes in ``timings[name]`` (nothing when timings
    is None). A stage that raises records nothing."""
    start = time.perf_counter()
    yield
    if timings is not None:
        timings[name] = time.perf_counter() - start
