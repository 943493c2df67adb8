"""The command line on real data: each step timed against the library call it wraps.

Runs a user's session through the ``landmarking`` command (a fresh interpreter per
command, as from a shell) on MNIST and 20 Newsgroups, repeats the same work with
the library in this process, checks that both give the same numbers, and prints
the wall time of each with the command's overhead (start-up, reading, checksums,
writing, pictures), and the start-up time alone. PNGs go to ``--out``.

Usage::

    python benchmarks/cli_workflow.py [--full | --quick] [--out DIR]
"""

import json
import shlex
import subprocess
import sys
import time
import warnings

import numpy as np
from _common import argument_parser, parse, timed

from landmarking import GPLandmarks
from landmarking.datasets import load_mnist, load_newsgroups
from landmarking.io import read_result
from landmarking.kernels import gaussian_features
from landmarking.lll.estimator import LocallyLinearLandmarks
from landmarking.text import sqrt_histograms, strip_headers


def command(args, cwd):
    """Run ``landmarking ARGS``; return (seconds, stdout)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "landmarking.cli", *map(str, args), "-q"],
                          cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"landmarking {shlex.join(map(str, args))} failed:\n{proc.stderr}")
    return seconds, proc.stdout


def main():
    parser = argument_parser(__doc__, seed=False)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes (2,000 images, 500 posts): a smoke run")
    args = parse(parser)
    if args.quick:
        n_rows, n_first, n_more, steps, n_lll, n_docs, n_topics = 2000, 4, 2, 50, 100, 500, 4
    elif args.full:
        n_rows, n_first, n_more, steps, n_lll, n_docs, n_topics = 60000, 20, 5, 1000, 1000, None, 12
    else:
        n_rows, n_first, n_more, steps, n_lll, n_docs, n_topics = 10000, 8, 2, 200, 300, 3000, 6
    work = args.out.resolve() / "cli_workflow"
    work.mkdir(parents=True, exist_ok=True)
    for old in work.iterdir():
        if old.is_file():
            old.unlink()

    X, y = load_mnist(split="train")
    X, y = X[:n_rows], y[:n_rows]
    X_test = load_mnist(split="test")[0][:2000]
    np.savez(work / "mnist.npz", X=X, y=y)
    np.save(work / "test.npy", X_test)
    docs, _, _ = load_newsgroups(subset="train")
    docs = docs if n_docs is None else docs[:: len(docs) // n_docs][:n_docs]
    with open(work / "posts.jsonl", "w") as fh:
        for doc in docs:
            fh.write(json.dumps({"text": doc}) + "\n")

    rows = []

    def record(step, cli_s, lib_s, check):
        rows.append((step, cli_s, lib_s, check))

    # Start-up alone: a fresh interpreter importing the package (median of 3).
    startup = float(np.median([timed(lambda: subprocess.run(
        [sys.executable, "-m", "landmarking.cli", "--version"], capture_output=True, check=True))[0]
        for _ in range(3)]))

    # 1. Landmarks, then --continue.
    n_total = n_first + n_more
    cli_s, _ = command(["landmarks", "mnist.npz", "--key", "X", "-n", n_first, "--steps", steps,
                        "--space", "nonnegative", "--image-shape", "28x28", "-o", "lm.npz",
                        "--plot", "landmarks.png"], work)
    lib_s, gp = timed(lambda: GPLandmarks(n_landmarks=n_first, n_steps=steps, space="nonnegative",
                                          random_state=0).fit(X))
    saved = read_result(work / "lm.npz")
    diff = np.abs(saved["landmarks"] - gp.landmarks_).max()
    record(f"landmarks -n {n_first} (gp, {steps} steps)", cli_s, lib_s, f"max |diff| {diff:.1e}")

    cli_s, _ = command(["landmarks", "mnist.npz", "--key", "X", "-n", n_total, "--continue",
                        "lm.npz", "-o", "lm.npz"], work)
    lib_s, _ = timed(lambda: gp.extend(X, n_more))
    longer = GPLandmarks(n_landmarks=n_total, n_steps=steps, space="nonnegative",
                         random_state=0).fit(X)
    saved = read_result(work / "lm.npz")
    diff = np.abs(saved["landmarks"] - longer.landmarks_).max()
    record(f"landmarks --continue to {n_total}", cli_s, lib_s,
           f"vs one run of {n_total}: {diff:.1e}")

    # 2. Features of new data.
    cli_s, _ = command(["features", "test.npy", "--landmarks", "lm.npz", "-o", "features.npz"],
                       work)
    lib_s, features = timed(lambda: gaussian_features(X_test, saved["landmarks"],
                                                      float(saved["kernel_width"])))
    diff = np.abs(read_result(work / "features.npz")["features"] - features).max()
    record("features (2,000 test images)", cli_s, lib_s, f"max |diff| {diff:.1e}")

    # 3. LLL embedding with its out-of-sample model, then new points.
    cli_s, _ = command(["embed", "mnist.npz", "--key", "X", "--method", "lll", "-d", 2,
                        "--n-landmarks", n_lll, "--neighbors", 10, "-o", "embedding.npz",
                        "--model", "model.npz", "--plot", "embedding.png",
                        "--labels", "mnist.npz", "--labels-key", "y"], work)
    lll = LocallyLinearLandmarks(n_components=2, n_landmarks=n_lll, n_neighbors=10,
                                 random_state=0)
    lib_s, embedding = timed(lambda: lll.fit_transform(X))
    scale = np.abs(embedding).max()
    diff = np.abs(read_result(work / "embedding.npz")["embedding"] - embedding).max() / scale
    record(f"embed --method lll (L={n_lll})", cli_s, lib_s, f"relative |diff| {diff:.1e}")

    cli_s, _ = command(["transform", "test.npy", "--model", "model.npz", "-o", "placed.npz"], work)
    lib_s, placed = timed(lambda: lll.transform(X_test))
    diff = np.abs(read_result(work / "placed.npz")["embedding"] - placed).max() / scale
    record("transform (2,000 test images)", cli_s, lib_s, f"relative |diff| {diff:.1e}")

    # 4. Topics of the posts.
    cli_s, stdout = command(["topics", "posts.jsonl", "--strip-headers", "-n", n_topics,
                             "--steps", steps, "-o", "topics.npz"], work)

    def library_topics():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            H, vocabulary, _ = sqrt_histograms([strip_headers(d) for d in docs], 1545, dense=True)
        return GPLandmarks(n_landmarks=n_topics, n_steps=steps, space="sphere",
                           random_state=0).fit(H)

    lib_s, topics = timed(library_topics)
    diff = np.abs(read_result(work / "topics.npz")["landmarks"] - topics.landmarks_).max()
    record(f"topics -n {n_topics} ({len(docs)} posts)", cli_s, lib_s, f"max |diff| {diff:.1e}")

    print(f"MNIST rows: {n_rows}; outputs in {work}")
    print(f"start-up of a command (landmarking --version, median of 3): {startup:.2f} s")
    print(f"{'step':<36} {'command s':>9} {'library s':>9} {'overhead s':>10} {'ratio':>6}  check")
    for step, cli_s, lib_s, check in rows:
        print(f"{step:<36} {cli_s:9.2f} {lib_s:9.2f} {cli_s - lib_s:10.2f} "
              f"{cli_s / lib_s:6.2f}  {check}")
    print("\ntopics printed by the command:")
    print(stdout.rstrip())


if __name__ == "__main__":
    main()
