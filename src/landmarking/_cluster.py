"""A Dask client for the command line: connect to a scheduler or start a local cluster.

The library itself never starts or looks for a cluster: Dask input runs on whatever
client is active (``dask.distributed`` makes the last one created the default).
"""

from contextlib import contextmanager

from .io import InputError

__all__ = ["dask_client", "SchedulerLostError", "SCHEDULER_TIMEOUT"]

#: Seconds to wait for a scheduler before giving up with an error, at the start
#: and when it stops answering in the middle of a run.
SCHEDULER_TIMEOUT = 10


class SchedulerLostError(RuntimeError):
    """The Dask scheduler went away in the middle of a run (and did not come back
    within the timeout)."""


@contextmanager
def dask_client(scheduler=None, n_workers=None, *, timeout=None):
    """Yield a ``dask.distributed.Client`` (or None when neither option is given).

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler, e.g. ``tcp://10.0.0.5:8786``.
    n_workers : int, optional
        Start a ``LocalCluster`` of this many single-threaded worker processes for
        the duration of the block, and close it after.
    timeout : float, optional
        Seconds to wait for the scheduler to answer (default ``SCHEDULER_TIMEOUT``).
    """
    timeout = SCHEDULER_TIMEOUT if timeout is None else timeout
    if scheduler is None and n_workers is None:
        yield None
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise InputError(
            "--scheduler and --dask-workers need dask.distributed; install the scale extra "
            "(pip install 'landmarking[scale]')."
        ) from None
    cluster = None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise InputError(
                f"could not reach the Dask scheduler at {scheduler} within {timeout:g} s "
                f"({type(exc).__name__}); check the address and that `dask scheduler` is "
                "running there, or use --dask-workers N for a local cluster."
            ) from None
    else:
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        yield client
    except Exception as exc:
        # The client gives up after `timeout` s without its scheduler and cancels
        # every pending task; what surfaces is a cancelled future, which says nothing
        # of the cause.
        if scheduler is not None and client.status != "running":
            raise SchedulerLostError(
                f"lost the Dask scheduler at {scheduler} in the middle of the run (no "
                f"answer within {timeout:g} s; {type(exc).__name__})"
            ) from exc
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
