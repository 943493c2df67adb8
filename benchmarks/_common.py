"""What the benchmark scripts share: a fresh interpreter per row, and its peak memory.

Every speed claim is a ratio against a peer measured in the same run (see
:mod:`_machine`); a row that times a first call, or whose memory is reported, runs
in a new interpreter so that nothing of the previous rows (imported modules,
warmed caches, freed-but-kept heap) leaks into it.
"""

import json
import os
import subprocess
import sys
import tempfile
import time


def run_child(code, *, empty_numba_cache=False, timeout=None):
    """Run ``code`` in a new interpreter and return its last printed line, parsed
    as JSON, with ``process`` (its wall seconds, start-up included) added.

    ``empty_numba_cache``: point ``NUMBA_CACHE_DIR`` at a new empty folder, as in
    a fresh install or a container whose cache is not kept. The child's stderr is
    shown when it fails.
    """
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        if empty_numba_cache:
            env["NUMBA_CACHE_DIR"] = cache
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, timeout=timeout)
        wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"a row failed:\n{done.stderr[-4000:]}")
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["process"] = wall
    return row


#: Code for a child to report its peak resident memory (GiB) as ``peak_rss``.
PEAK_RSS = ("import resource\n"
            "def peak_rss():\n"
            "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20\n")
