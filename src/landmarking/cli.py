"""The ``landmarking`` command line (placeholder until the full CLI lands)."""

import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["demo"]:
        from .demo import run_demo

        run_demo()
        return 0
    print("usage: landmarking demo", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
