"""The progress bars: tqdm's, without the monitor thread that hung Ctrl-C'd runs."""

import io
import subprocess
import sys
import textwrap

from landmarking._progress import progress_bar


def test_bar_wraps_an_iterable_and_draws_every_update():
    out = io.StringIO()
    assert list(progress_bar(range(3), file=out, mininterval=0, desc="steps")) == [0, 1, 2]
    for n in range(4):
        assert f"| {n}/3 [" in out.getvalue()
    with progress_bar(total=5, file=io.StringIO()) as bar:
        # Not tqdm's adaptive count, which only the monitor thread resets after a stall.
        assert bar.miniters == 1 and not bar.dynamic_miniters
    with progress_bar(total=5, file=io.StringIO(), miniters=5) as bar:
        assert bar.miniters == 5  # the caller's choice is kept


# A child process: tqdm's monitor made to wake at once (tqdm's default is 10 s),
# a verbose fit, then Ctrl-C's leftover simulated: the first of tqdm's two locks
# held by the main thread, as an interrupt between the two acquires leaves it.
# With a monitor running, the monitor waits on that lock forever and tqdm before
# 4.68.1 joins it at exit: the child would never end.
_CHILD = textwrap.dedent("""
    import threading, time
    import numpy as np
    import tqdm.std
    tqdm.std.tqdm.monitor_interval = 0.01
    from landmarking import GPLandmarks

    X = np.random.default_rng(0).normal(size=(200, 2))
    GPLandmarks(n_landmarks=3, n_steps=20, verbose=True, random_state=0).fit(X)
    monitors = [t.name for t in threading.enumerate() if type(t).__name__ == "TMonitor"]
    assert not monitors, monitors
    tqdm.std.tqdm.get_lock().locks[0].acquire()
    time.sleep(0.1)
    print("exiting")
""")


def test_interrupted_bar_cannot_hang_the_exit():
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "exiting"


def test_quiet_sculpting_fit_does_not_import_tqdm():
    # tqdm.auto costs about 0.15 s to import; a run without bars should not pay it.
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from landmarking import ManifoldSculpting
        X = np.random.default_rng(0).normal(size=(200, 3))
        ManifoldSculpting(n_components=2, max_iter=5).fit(X)
        print("tqdm" in sys.modules)
    """)
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "False"
