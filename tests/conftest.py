import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

DATA_DIR = Path(os.environ.get("LANDMARKING_DATA",
                               Path(__file__).resolve().parents[1].parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir():
    """The real-data folder; tests that need it skip when it is absent."""
    if not DATA_DIR.exists():
        pytest.skip(f"real data not found at {DATA_DIR}; set LANDMARKING_DATA to run this test")
    return DATA_DIR
