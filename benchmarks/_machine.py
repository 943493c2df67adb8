"""The machine line every timing script prints, and a BLAS at full speed.

Every speed claim of this project is a ratio against a peer measured in the same
run, so a timing script calls :func:`full_speed_blas` first and :func:`machine_line`
beside each table:

- ``full_speed_blas()``: some machines set ``OPENBLAS_CORETYPE`` (and
  ``OPENBLAS_L2_SIZE``) because old OpenBLAS builds misbehave on their processors;
  with a current NumPy they throttle BLAS, and a ratio against k-means or
  scikit-learn's solvers measured so is not a result (it moved 3.5x once). When
  either is set, the script re-runs itself with both unset (this process only:
  never in tests or CI) and prints that it did.
- ``machine_line()``: the load average, threadpoolctl's BLAS library, kernel
  (``architecture``) and thread count, and ``OPENBLAS_CORETYPE``.
"""

import os
import sys

THROTTLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_MARK = "LANDMARKING_BENCH_BLAS_UNTHROTTLED"


def full_speed_blas():
    """Re-execute this script without the BLAS-throttling variables, if set."""
    found = {name: os.environ[name] for name in THROTTLES if name in os.environ}
    if not found or os.environ.get(_MARK):
        return
    print(f"re-running with {', '.join(f'{k}={v}' for k, v in found.items())} unset "
          "(benchmark only), so that BLAS peers run at full speed", flush=True)
    env = {k: v for k, v in os.environ.items() if k not in THROTTLES}
    env[_MARK] = ",".join(f"{k}={v}" for k, v in found.items())
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def blas_line():
    """'BLAS: openblas 0.3.x, kernel SkylakeX, 2 threads' from threadpoolctl."""
    from threadpoolctl import threadpool_info

    parts = []
    for pool in threadpool_info():
        if pool.get("user_api") != "blas":
            continue
        parts.append(f"{pool.get('internal_api')} {pool.get('version')}, kernel "
                     f"{pool.get('architecture')}, {pool.get('num_threads')} threads")
    return "BLAS: " + ("; ".join(parts) if parts else "none loaded yet (import numpy first)")


def machine_line():
    """Load average, the BLAS line and OPENBLAS_CORETYPE, as one printable line."""
    import numpy  # noqa: F401  (loads the BLAS threadpoolctl reports)

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    coretype = os.environ.get("OPENBLAS_CORETYPE", "unset")
    unset = os.environ.get(_MARK)
    note = f" (unset for this run; was {unset})" if unset else ""
    return (f"load average {load} | {blas_line()} | OPENBLAS_CORETYPE={coretype}{note} "
            f"| {os.cpu_count()} cores")
