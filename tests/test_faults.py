"""Faults a long run meets: Ctrl-C, kill -9, a full disk, too little memory.

Each test drives a fresh interpreter (the command or a small script), as the fault
would hit a user's process, and finishes in well under a minute:

- GP landmarks are bit-identical across processes and BLAS/numba thread counts;
- SIGINT writes the finished landmarks, and ``--continue`` then gives exactly the
  landmarks of one uninterrupted run;
- SIGKILL at a random moment loses at most the last second of work: the result file
  written as the run goes is whole (``complete=False``), and ``--continue`` finishes
  the run bit for bit equal to an uninterrupted one (``landmarks`` and ``topics``);
- a write that hits the file-size limit exits 2 naming the file, and leaves neither
  a partial file nor a temporary one, nor harms the file it would have replaced;
- output files honour the umask;
- every memory guard refuses an allocation that cannot fit under a small
  ``RLIMIT_AS``, at once, with the estimate, what is available and the way out,
  while the same call on small data still works under that limit;
- on a Dask cluster (a ``LocalCluster`` on localhost, started by the test): a
  worker killed in the middle of a distributed GP fit or of an LLL out-of-sample
  pass changes nothing in the result; the scheduler going away in the middle of
  ``landmarking landmarks --scheduler`` is one clear line within the timeout, the
  finished landmarks are in the output file, and ``--continue`` completes it bit
  for bit.
"""

import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from conftest import environ_kept

from landmarking import GPLandmarks, LocallyLinearLandmarks, cli
from landmarking.io import read_result, write_result

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and rlimits")

STEPS = 150
TOTAL = 200  # landmarks of a run that a signal stops: far more than finish before it


def _env():
    return dict(os.environ, PYTHONWARNINGS="ignore", OPENBLAS_NUM_THREADS="1",
                OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")


def _command(*args):
    return [sys.executable, "-m", "landmarking.cli", *map(str, args)]


def _default_sigint():
    # A background runner may ignore SIGINT, and children inherit that; a user's
    # terminal does not.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _circle(tmp_path, n=1000, seed=1):
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, 2 * np.pi, n)
    X = np.c_[np.cos(angle), np.sin(angle)] + 0.02 * rng.normal(size=(n, 2))
    np.save(tmp_path / "x.npy", X)
    return X


def _wait_for(path, proc, timeout=50):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, (proc.communicate()[1] or b"").decode(errors="replace")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.005)


def _signal_soon_after_the_first_checkpoint(proc, path, signum, seconds_left, rng):
    """Send ``signum`` to ``proc`` once its first checkpoint ``path`` is on disk (a first
    landmark is finished), at a random moment in the first fifth of the rest of its
    run. ``seconds_left``, how long that rest takes on this machine, is measured on an
    uninterrupted run: a delay in proportion to it, not a fixed one, lands inside the
    run on a machine of any speed."""
    _wait_for(path, proc)
    time.sleep(rng.uniform(0, 0.2) * seconds_left)
    proc.send_signal(signum)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """One uninterrupted GP fit of TOTAL landmarks on the circle, in this process: the
    reference of the kill -9 test, and the time a run takes after its first landmark."""
    X = _circle(tmp_path_factory.mktemp("circle"))
    fit = GPLandmarks(n_landmarks=TOTAL, n_steps=STEPS, random_state=0).fit(X)
    return fit, float(fit.landmark_seconds_[1:].sum())


# ------------------------------------------------------------------ signals


def test_ctrl_c_writes_the_finished_landmarks_and_continue_is_bit_identical(
        tmp_path, uninterrupted):
    X = _circle(tmp_path)
    proc = subprocess.Popen(_command("landmarks", "x.npy", "-n", TOTAL, "--steps", STEPS, "-o",
                                     "part.npz", "-q"), cwd=tmp_path, env=_env(),
                            stderr=subprocess.PIPE, preexec_fn=_default_sigint)
    _signal_soon_after_the_first_checkpoint(proc, tmp_path / "part.npz", signal.SIGINT,
                                            uninterrupted[1], random.Random(3))
    _, err = proc.communicate(timeout=50)
    assert proc.returncode == 130, err.decode(errors="replace")
    partial = read_result(tmp_path / "part.npz")
    k = len(partial["landmarks"])
    assert 1 <= k < TOTAL and not bool(partial["complete"])
    assert b"--continue part.npz -o part.npz" in err
    resumed = subprocess.run(_command("landmarks", "x.npy", "-n", k + 4, "--steps", STEPS,
                                      "--continue", "part.npz", "-o", "part.npz", "-q"),
                             cwd=tmp_path, env=_env(), capture_output=True, timeout=50)
    assert resumed.returncode == 0, resumed.stderr.decode(errors="replace")
    result = read_result(tmp_path / "part.npz")
    single = GPLandmarks(n_landmarks=k + 4, n_steps=STEPS, random_state=0).fit(X)
    assert bool(result["complete"])
    np.testing.assert_array_equal(result["landmarks"], single.landmarks_)
    np.testing.assert_array_equal(result["objective"], single.objective_)


@pytest.mark.parametrize("seed", [0, 1])
def test_kill_9_at_a_random_moment_then_continue_is_bit_identical(tmp_path, seed,
                                                                  uninterrupted):
    _circle(tmp_path)
    single, seconds_left = uninterrupted
    total = TOTAL
    proc = subprocess.Popen(_command("landmarks", "x.npy", "-n", total, "--steps", STEPS, "-o",
                                     "run.npz", "-q"), cwd=tmp_path, env=_env(),
                            stderr=subprocess.PIPE)
    _signal_soon_after_the_first_checkpoint(proc, tmp_path / "run.npz", signal.SIGKILL,
                                            seconds_left, random.Random(seed))
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run ended before the kill; make it longer"
    killed = read_result(tmp_path / "run.npz")  # whole, though the process was killed
    k = len(killed["landmarks"])
    assert 1 <= k < total and not bool(killed["complete"]) and int(killed["n_requested"]) == total
    assert len(killed["objective"]) == len(killed["seconds"]) == k
    resumed = subprocess.run(_command("landmarks", "x.npy", "-n", total, "--steps", STEPS,
                                      "--continue", "run.npz", "-o", "run.npz", "-q"),
                             cwd=tmp_path, env=_env(), capture_output=True, timeout=50)
    assert resumed.returncode == 0, resumed.stderr.decode(errors="replace")
    result = read_result(tmp_path / "run.npz")
    assert bool(result["complete"]) and len(result["landmarks"]) == total
    np.testing.assert_array_equal(result["landmarks"], single.landmarks_)
    np.testing.assert_array_equal(result["objective"], single.objective_)
    np.testing.assert_array_equal(result["landmarks"][:k], killed["landmarks"])


def test_kill_9_during_topics_then_continue_is_bit_identical(tmp_path):
    words = [f"z{a}{b}x" for a in "abcdefghij" for b in "abcdef"]  # 60 made-up words
    rng = np.random.default_rng(3)
    with open(tmp_path / "posts.jsonl", "w") as fh:
        for i in range(600):
            group = words[(i % 6) * 10:(i % 6) * 10 + 10]
            fh.write(json.dumps({"text": " ".join(rng.choice(group, size=15))}) + "\n")
    total = 100
    args = ("topics", "posts.jsonl", "--steps", STEPS, "-q")
    # The uninterrupted run first: the reference.
    with open(tmp_path / "u.out", "wb") as out:
        reference_run = subprocess.Popen(_command(*args, "-n", total, "-o", "u.npz"),
                                         cwd=tmp_path, env=_env(), stdout=out,
                                         stderr=subprocess.PIPE)
        _, err = reference_run.communicate(timeout=50)
    assert reference_run.returncode == 0, err.decode(errors="replace")
    # The kill lands as soon as the first checkpoint is on disk (one landmark of 100
    # done). A delay in proportion to the rest of a run's wall time let the kill land
    # in the process's exit, after the last landmark was written, in 2 of 5 loaded
    # runs: the topics' output records no per-landmark seconds to size it by.
    seconds_left = 0.0
    proc = subprocess.Popen(_command(*args, "-n", total, "-o", "t.npz"), cwd=tmp_path, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _signal_soon_after_the_first_checkpoint(proc, tmp_path / "t.npz", signal.SIGKILL,
                                            seconds_left, random.Random(2))
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run ended before the kill; make it longer"
    killed = read_result(tmp_path / "t.npz")
    k = len(killed["landmarks"])
    assert 1 <= k < total and not bool(killed["complete"])
    resumed = subprocess.run(_command(*args, "-n", total, "--continue", "t.npz", "-o", "t.npz"),
                             cwd=tmp_path, env=_env(), capture_output=True, timeout=50)
    assert resumed.returncode == 0, resumed.stderr.decode(errors="replace")
    result, reference = read_result(tmp_path / "t.npz"), read_result(tmp_path / "u.npz")
    assert bool(result["complete"]) and bool(reference["complete"])
    np.testing.assert_array_equal(result["landmarks"], reference["landmarks"])
    assert resumed.stdout == (tmp_path / "u.out").read_bytes()  # the same topics printed


def test_gp_landmarks_are_bit_identical_across_processes_and_thread_counts(tmp_path):
    """What makes --continue in another process (or on another node) exact."""
    X = _circle(tmp_path, n=600)
    here = GPLandmarks(n_landmarks=5, n_steps=100, random_state=0).fit(X).landmarks_
    script = ("import sys, numpy as np; from landmarking import GPLandmarks; "
              "X = np.load('x.npy'); "
              "sys.stdout.write(GPLandmarks(n_landmarks=5, n_steps=100, random_state=0)"
              ".fit(X).landmarks_.tobytes().hex())")
    for threads in ("1", "2", "4"):
        env = dict(_env(), OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads,
                   MKL_NUM_THREADS=threads, NUMBA_NUM_THREADS=threads)
        proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=50)
        assert proc.returncode == 0, proc.stderr
        assert bytes.fromhex(proc.stdout) == here.tobytes(), f"differs with {threads} threads"


# ------------------------------------------------------------------ files


def _file_size_limit(limit):
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_file_size_limit_exits_2_naming_the_file_and_leaves_nothing_behind(tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "wide.npy", rng.normal(size=(300, 60)))
    (tmp_path / "old.npz").write_bytes(b"an earlier result")
    for output, force in (("new.npz", ()), ("old.npz", ("--force",))):
        proc = subprocess.run(_command("landmarks", "wide.npy", "-n", 12, "--steps", 20, "-o",
                                       output, *force, "-q"),
                              cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=50,
                              preexec_fn=_file_size_limit(4096))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == (
            f"landmarking landmarks: error: {output}: File too large; check the path, its "
            "permissions and the free space.")
        assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.npz", "wide.npy"]
    assert (tmp_path / "old.npz").read_bytes() == b"an earlier result"


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_files_honour_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        write_result(tmp_path / "r.npz", {"x": np.zeros(2)})
        write_result(tmp_path / "r.csv", {"x": np.zeros((2, 2))})
    finally:
        os.umask(old)
    for name in ("r.npz", "r.csv"):
        assert (tmp_path / name).stat().st_mode & 0o777 == mode


# ------------------------------------------------------------------ memory

# Each guard runs in a child whose address space is limited to what it already
# uses plus ROOM, so that the test process itself is never limited.
ROOM = 600 * 2**20

GUARD_SCRIPT = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    from landmarking._memory import InsufficientMemoryError, _address_space_used
    {setup}
    resource.setrlimit(resource.RLIMIT_AS, (_address_space_used() + {room}, resource.RLIM_INFINITY))
    out = {{}}
    try:
        {big}
        out["big"] = "no error"
    except InsufficientMemoryError as exc:
        out["big"] = str(exc)
        out["is_value_error"] = isinstance(exc, ValueError)
    {small}
    out["small"] = "ok"
    print(json.dumps(out))
""")

GUARDS = {
    "landmark features": (
        "from landmarking.kernels import gaussian_features",
        "gaussian_features(np.zeros((100000, 2)), np.zeros((4000, 2)), 1.0)",
        "gaussian_features(np.zeros((1000, 2)), np.zeros((40, 2)), 1.0)",
        ("the landmark features of 100000 rows x 4000 landmarks", 100000 * 4000 * 8),
        "pass float32 data"),
    "GPLandmarks.transform": (
        "from landmarking import GPLandmarks\n"
        "gp = GPLandmarks(n_landmarks=3, n_steps=5, random_state=0).fit(np.random.rand(50, 2))\n"
        "gp.landmarks_ = np.zeros((4000, 2))",
        "gp.transform(np.zeros((100000, 2)))",
        "gp.transform(np.zeros((1000, 2)))",
        ("the landmark features of 100000 rows x 4000 landmarks", 100000 * 4000 * 8),
        "transform the rows in smaller blocks"),
    "exact Laplacian eigenmaps": (
        "from landmarking import LaplacianEigenmaps\n"
        "X = np.random.default_rng(0).normal(size=(6000, 2))",
        "LaplacianEigenmaps(eigen_solver='dense').fit(X)",
        "LaplacianEigenmaps(eigen_solver='dense').fit(X[:300])",
        ("the dense 6000 x 6000 eigenproblem of exact Laplacian eigenmaps", 2 * 6000**2 * 8),
        "use LocallyLinearLandmarks (memory linear in N) or eigen_solver='lobpcg'"),
    "affinity graph": (
        "from landmarking.graph import gaussian_affinity\n"
        "d = np.broadcast_to(1.0, (10**6, 50)); i = np.broadcast_to(np.arange(50), (10**6, 50))",
        "gaussian_affinity(d, i, 1.0)",
        "gaussian_affinity(d[:1000, :5], i[:1000, :5] % 1000, 1.0)",
        ("the affinity graph of 1000000 points x 50 neighbours", 10**6 * 50 * 2 * 12),
        "use fewer neighbours, fewer rows, or an out-of-core (Dask) input"),
    "sculpting neighbour tables": (
        "from landmarking import ManifoldSculpting\n"
        "X = np.random.default_rng(0).normal(size=(400000, 3))",
        "ManifoldSculpting(n_neighbors=14).fit(X)",
        "ManifoldSculpting(n_neighbors=8, min_iter=2, max_iter=3).fit(X[:200])",
        ("the neighbour tables of 400000 points x 14 neighbours", 400000 * 14 * 8 * 8),
        "use fewer neighbours (n_neighbors) or fewer rows"),
    "active-learning kernel": (
        "from landmarking import ActiveLearningLandmarks\n"
        "X = np.random.default_rng(0).normal(size=(100000, 2))",
        "ActiveLearningLandmarks(n_landmarks=2000, subsample=None, random_state=0).fit(X)",
        "ActiveLearningLandmarks(n_landmarks=5, subsample=None, random_state=0).fit(X[:500])",
        ("the kernel factor of 100000 points x 2000 landmarks", 100000 * 2000 * 8),
        "pass a smaller subsample"),
}


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_memory_guard_refuses_at_once_with_estimate_available_and_way_out(name):
    setup, big, small, estimate, way_out = GUARDS[name]
    script = GUARD_SCRIPT.format(setup=setup, big=big, small=small, room=ROOM)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script], env=_env(), capture_output=True,
                          text=True, timeout=50)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["small"] == "ok"  # the limit leaves room for the work that fits
    what, at_least = estimate
    found = re.match(re.escape(what) + r" needs about ([0-9.]+) (MiB|GiB) but only ", out["big"])
    assert found, out["big"]
    # The estimate covers at least the main array the call would allocate.
    assert float(found[1]) * 2 ** (20 if found[2] == "MiB" else 30) >= at_least, out["big"]
    assert way_out in out["big"], out["big"]
    assert "is available (free RAM or the address-space limit, ulimit -v)" in out["big"]
    available = float(out["big"].split("but only ")[1].split(" MiB")[0])
    assert 0 < available <= ROOM / 2**20
    assert out["is_value_error"]
    assert time.monotonic() - start < 50


def test_memory_guard_on_the_command_line_exits_2_with_the_way_out(tmp_path):
    np.save(tmp_path / "big.npy", np.zeros((200000, 2)))
    write_result(tmp_path / "lm.npz", {"landmarks": np.zeros((3000, 2)),
                                       "kernel_width": np.asarray(1.0)})
    limit = 3 * 2**30

    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))

    proc = subprocess.run(_command("features", "big.npy", "--landmarks", "lm.npz", "-o", "f.npz",
                                   "-q"), cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=50, preexec_fn=apply)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert re.match(r"landmarking features: error: big\.npy: the landmark features of 200000 "
                    r"rows x 3000 landmarks needs about [0-9.]+ GiB but only [0-9.]+ [GM]iB is "
                    r"available", line), line
    assert line.endswith("transform the rows in smaller blocks, or pass float32 data."), line
    assert not (tmp_path / "f.npz").exists()


def test_available_memory_is_the_smaller_of_ram_and_the_address_space_limit():
    script = textwrap.dedent("""
        import resource
        from landmarking._memory import available_memory, _address_space_used, _meminfo_available
        free = available_memory()
        assert free is not None and free <= _meminfo_available()
        limit = _address_space_used() + 2**28
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
        limited = available_memory()
        assert 0 < limited <= 2**28 and limited <= free, (limited, free)
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], env=_env(), capture_output=True,
                          text=True, timeout=50)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# ------------------------------------------------------------------ a Dask cluster


@pytest.fixture(scope="module")
def client():
    """Two single-threaded worker processes on localhost, for this module's tests."""
    distributed = pytest.importorskip("dask.distributed",
                                      reason="the scale extra (dask) is not installed")
    with environ_kept():  # the nannies' pre-spawn variables (conftest.environ_kept)
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, host="127.0.0.1")
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def _kill_a_worker_during(client, run, ready):
    """``run()`` while one worker process is killed in the middle of it, as soon as
    ``ready(address)`` (polled every 5 ms) says the run has reached the point to kill
    the worker at ``address``: an event of the run, not a fixed delay, so that the kill
    lands inside the run on a machine of any speed. The cluster gets its two workers
    back before the next test."""
    with environ_kept():  # the nanny that restarts the worker sets its variables again
        return _kill_and_restart(client, run, ready)


def _kill_and_restart(client, run, ready):
    address, victim = sorted(client.run(os.getpid).items())[0]
    killed_at, finished = [], threading.Event()

    def kill_when_ready():
        while not finished.wait(0.005):
            if ready(address):
                os.kill(victim, signal.SIGKILL)
                killed_at.append(time.perf_counter())
                return

    killer = threading.Thread(target=kill_when_ready)
    killer.start()
    try:
        result = run()
    finally:
        end = time.perf_counter()
        finished.set()
        killer.join()
    assert killed_at, "the run ended before the point to kill the worker at"
    assert killed_at[0] < end
    client.wait_for_workers(2, timeout=50)
    assert victim not in client.run(os.getpid).values()
    return result


def test_killed_worker_does_not_change_a_distributed_gp_fit(client, monkeypatch):
    """Dask recomputes the lost tasks; the fit holds no state that dies with a worker.

    A fit reads the cluster once, as it gathers the rows its minibatches come from
    (checking every block for NaN and infinity on the way; the kernel width comes
    from those rows); its steps then run on those rows here. The worker is killed
    as the gather starts, so the kill lands inside the distributed part of the run
    however fast the machine is."""
    da = pytest.importorskip("dask.array")
    from landmarking import _blocks

    X = np.random.default_rng(0).random((4000, 8)).astype(np.float32)
    dask_X = da.from_array(X, chunks=(1000, 8))
    params = dict(n_landmarks=4, n_steps=400, batch_size=100, random_state=0)
    undisturbed = GPLandmarks(**params).fit(dask_X)
    victim = sorted(client.run(os.getpid).values())[0]
    read, killed = _blocks._dask_pieces, []

    def read_after_killing_a_worker(*args):
        if not killed:
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)
        return read(*args)

    monkeypatch.setattr(_blocks, "_dask_pieces", read_after_killing_a_worker)
    with environ_kept():  # the nanny that restarts the worker sets its variables again
        disturbed = GPLandmarks(**params).fit(dask_X)
        assert killed == [victim]
        client.wait_for_workers(2, timeout=50)
    assert victim not in client.run(os.getpid).values()
    np.testing.assert_array_equal(disturbed.landmarks_, undisturbed.landmarks_)
    np.testing.assert_array_equal(disturbed.objective_, undisturbed.objective_)


def test_killed_worker_does_not_change_an_lll_out_of_sample_pass(client):
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(0)
    lll = LocallyLinearLandmarks(n_landmarks=200, n_landmark_neighbors=8,
                                 random_state=0).fit(rng.random((2000, 3)))
    new = rng.random((200_000, 3))
    dask_new = da.from_array(new, chunks=(5_000, 3))
    undisturbed = lll.transform(dask_new).compute()
    # Killed once it holds a finished block of the pass (of 40; they stay on the worker
    # until the end), so that finished work is lost with it and must be recomputed.
    disturbed = _kill_a_worker_during(client, lambda: lll.transform(dask_new).compute(),
                                      ready=lambda address: client.has_what([address]).get(address))
    np.testing.assert_array_equal(disturbed, undisturbed)
    np.testing.assert_array_equal(undisturbed[:5000], lll.transform(new[:5000]))


SCHEDULER_SCRIPT = textwrap.dedent("""
    import time
    from dask.distributed import LocalCluster
    if __name__ == "__main__":
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                               dashboard_address=None, host="127.0.0.1")
        print(cluster.scheduler_address, flush=True)
        while True:
            time.sleep(1)
""")


def _scheduler(tmp_path):
    """A scheduler and its worker in their own session (lost together, as when the
    scheduler's machine is lost) and its address."""
    (tmp_path / "cluster.py").write_text(SCHEDULER_SCRIPT)
    scheduler = subprocess.Popen([sys.executable, "cluster.py"], cwd=tmp_path, env=_env(),
                                 stdout=subprocess.PIPE, text=True, start_new_session=True)
    address = scheduler.stdout.readline().strip()
    assert address.startswith("tcp://127.0.0.1:"), address
    return scheduler, address


def _stop(scheduler):
    if scheduler.poll() is None:
        os.killpg(scheduler.pid, signal.SIGKILL)
    scheduler.wait(timeout=30)


def test_lost_scheduler_is_one_clear_line_and_a_rerun_completes_bit_identically(
        tmp_path, monkeypatch, capsys):
    # A fit needs the cluster while it reads X, once (the gather of the rows its
    # minibatches come from, which checks every block for NaN and infinity): the
    # scheduler is lost as the gather starts.
    pytest.importorskip("dask.distributed", reason="the scale extra (dask) is not installed")
    from landmarking import _blocks, _cluster

    X = _circle(tmp_path, n=2000)
    scheduler, address = _scheduler(tmp_path)
    read, lost_at = _blocks._dask_pieces, []

    def read_after_losing_the_scheduler(*args):
        if not lost_at:
            os.killpg(scheduler.pid, signal.SIGKILL)
            lost_at.append(time.monotonic())
        return read(*args)

    try:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(_cluster, "SCHEDULER_TIMEOUT", 3)
        monkeypatch.setattr(_blocks, "_dask_pieces", read_after_losing_the_scheduler)
        status = cli.main(["landmarks", "x.npy", "-n", "200", "--steps", str(STEPS),
                           "--scheduler", address, "-o", "run.npz", "-q"])
        returned_at = time.monotonic()
    finally:
        _stop(scheduler)
    err = capsys.readouterr().err
    assert lost_at, f"the run never gathered its rows: {err}"
    assert status == 1, err
    assert returned_at - lost_at[0] < 3 + 20, "no error within the timeout"
    line = [m for m in err.splitlines() if m.startswith("landmarking landmarks: error:")]
    assert len(line) == 1 and "Traceback" not in err, err
    assert re.search(rf"lost the Dask scheduler at {re.escape(address)} in the middle of the "
                     r"run \(no answer within 3 s; .*\); nothing was written; start the "
                     r"scheduler again \(or use --dask-workers N\) and rerun\.", line[0]), line[0]
    assert not (tmp_path / "run.npz").exists()
    # Rerun without the cluster: the same landmarks wherever it runs.
    monkeypatch.setattr(_blocks, "_dask_pieces", read)
    status = cli.main(["landmarks", "x.npy", "-n", "5", "--steps", str(STEPS), "-o",
                       "run.npz", "-q"])
    assert status == 0, capsys.readouterr().err
    single = GPLandmarks(n_landmarks=5, n_steps=STEPS, random_state=0).fit(X)
    np.testing.assert_array_equal(read_result(tmp_path / "run.npz")["landmarks"],
                                  single.landmarks_)


def test_scheduler_lost_after_the_rows_are_read_leaves_the_fit_whole(tmp_path, monkeypatch,
                                                                    capsys):
    # Once its rows are read the fit no longer needs the cluster (issue 24): a
    # scheduler lost after the first landmark is saved does not stop the run, which
    # gives the landmarks of a run without a cluster.
    pytest.importorskip("dask.distributed", reason="the scale extra (dask) is not installed")
    from landmarking import _cluster

    X = _circle(tmp_path, n=2000)
    scheduler, address = _scheduler(tmp_path)
    lost_at, returned = [], threading.Event()

    def lose_the_scheduler():
        while not (tmp_path / "run.npz").exists():
            if returned.wait(0.02):
                return  # the run ended first; the assertions below say how
        os.killpg(scheduler.pid, signal.SIGKILL)  # once the first landmark is saved
        lost_at.append(time.monotonic())

    killer = threading.Thread(target=lose_the_scheduler)
    try:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(_cluster, "SCHEDULER_TIMEOUT", 3)
        killer.start()
        try:
            status = cli.main(["landmarks", "x.npy", "-n", "200", "--steps", str(STEPS),
                               "--scheduler", address, "-o", "run.npz", "-q"])
        finally:
            returned.set()
            killer.join()
    finally:
        _stop(scheduler)
    err = capsys.readouterr().err
    assert lost_at, f"the run ended before the scheduler was lost: {err}"
    assert status == 0, err
    result = read_result(tmp_path / "run.npz")
    assert bool(result["complete"])
    single = GPLandmarks(n_landmarks=200, n_steps=STEPS, random_state=0).fit(X)
    np.testing.assert_array_equal(result["landmarks"], single.landmarks_)
    np.testing.assert_array_equal(result["objective"], single.objective_)
