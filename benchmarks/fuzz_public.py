"""Fuzz the public API with a larger budget than the test suite's, and count.

Runs the cases of ``tests/test_fuzz_public.py`` (malformed dense and sparse
arrays, odd dtypes, extreme scales, empty and one-row inputs, NaN and infinity,
out-of-range parameters and index arguments) through the same child worker, but
records every bad outcome instead of stopping at the first, and prints the number
of examples run and of crashes, hangs, silent acceptances of malformed input,
non-finite results and unclear errors (anything but a ValueError or TypeError
with a message), then each bad case.

    python benchmarks/fuzz_public.py --examples 2000
    python benchmarks/fuzz_public.py --examples 300 --timeout 30

Exit status 1 when any bad outcome was found.
"""

import argparse
import pickle
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import test_fuzz_public as harness  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=2000,
                        help="hypothesis examples to run (default 2000)")
    parser.add_argument("--timeout", type=float, default=harness.CASE_TIMEOUT,
                        help="seconds before a case counts as a hang")
    parser.add_argument("--save", metavar="FILE",
                        help="pickle the bad cases to FILE, to replay them one by one")
    args = parser.parse_args(argv)
    tally = harness.Tally(strict=False)
    worker = harness.Worker(timeout=args.timeout)
    start = time.perf_counter()
    try:
        harness.fuzz(args.examples, tally, worker)
    finally:
        worker.stop()
    print(f"fuzz_public: {tally.summary()} in {time.perf_counter() - start:.0f} s")
    for line in tally.failures:
        print("  " + line)
    if args.save:
        with open(args.save, "wb") as fh:
            pickle.dump(tally.failed_cases, fh)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
