"""The progress bars of every long loop (``verbose``): tqdm without its monitor thread.

tqdm starts a monitor thread with its first bar; it wakes every 10 s to take tqdm's
lock and redraw bars that have stalled. Ctrl-C can land between the two locks
tqdm takes for each redraw, so that the main thread keeps one of them; the monitor
then waits for it forever, and tqdm before 4.68.1 joins the monitor at exit, so the
interrupted process never ends (a CLI run stopped with Ctrl-C hung this way).
Our bars start no monitor: each one redraws on its own update (``miniters=1``, then
at most every ``mininterval``), which is what the monitor was there to ensure.
"""

from tqdm.auto import tqdm

__all__ = ["progress_bar"]


class _BarWithoutMonitor(tqdm):
    # A class attribute read by tqdm when a bar is made; set on this subclass only,
    # so a caller's own tqdm bars keep their monitor.
    monitor_interval = 0


def progress_bar(iterable=None, **kwargs):
    """A tqdm bar (``tqdm.auto``: a widget in notebooks) that starts no thread.

    Parameters
    ----------
    iterable : iterable, optional
        What to wrap, as in ``tqdm(iterable)``.
    **kwargs
        tqdm's keywords (``total``, ``desc``, ``disable``, ``leave``, ``unit``...).

    Returns
    -------
    tqdm.tqdm
    """
    kwargs.setdefault("miniters", 1)
    return _BarWithoutMonitor(iterable, **kwargs)
