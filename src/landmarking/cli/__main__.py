"""``python -m landmarking.cli``: the ``landmarking`` command."""

import sys

from . import main

sys.exit(main())
