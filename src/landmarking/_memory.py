"""How much memory is available, and refusing early when an allocation won't fit."""

import resource

__all__ = ["available_memory", "check_memory"]


def _meminfo_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def available_memory():
    """Bytes this process may still allocate: the smaller of free RAM and RLIMIT_AS."""
    limits = []
    free = _meminfo_available()
    if free is not None:
        limits.append(free)
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        try:
            with open("/proc/self/statm") as f:
                used = int(f.read().split()[0]) * resource.getpagesize()
        except OSError:
            used = 0
        limits.append(max(0, soft - used))
    return min(limits) if limits else None


def check_memory(nbytes, *, what, way_out):
    """Raise MemoryError when ``nbytes`` would not fit in the memory available."""
    available = available_memory()
    if available is not None and nbytes > available:
        raise MemoryError(
            f"{what} needs about {nbytes / 2**30:.2f} GiB but only "
            f"{available / 2**30:.2f} GiB is available; {way_out}"
        )
