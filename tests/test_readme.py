"""The README, checked as a newcomer would use it.

- It starts with the two set-up commands, ``make demo`` and ``make test`` (CI runs
  the second through ``.ci/run``), and stays a short front door.
- Every ``python`` block runs as it is, in a fresh interpreter in an empty folder
  (matplotlib's Agg backend), and writes the picture the README shows beside it.
- Every relative link and image points to a file of the repository, and a link to a
  heading of a Markdown page (``page.md#heading``) to a heading that page has.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

# The fence, its language (possibly empty) and its body.
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, flags=re.S | re.M)
PYTHON = [body for language, body in BLOCKS if language == "python"]
# [text](target) and ![alt](target); a target has no spaces.
LINKS = re.findall(r"\]\(([^)\s]+)\)", README)
SAVED = re.compile(r"""(?:savefig\(|path=)["']([^"']+\.png)["']""")


def test_readme_starts_with_the_two_set_up_commands():
    assert BLOCKS, "the README has no code block"
    language, body = BLOCKS[0]
    assert README.lstrip().startswith("# landmarking\n\n```"), \
        "the README must open with its title, then the set-up commands"
    assert body == "make demo\nmake test\n"


def test_readme_is_a_front_door():
    assert len(README.splitlines()) <= 150, "move details to the documentation site"
    assert len(PYTHON) >= 3, "one example per method"
    for body in PYTHON:
        lines = [line for line in body.splitlines() if line.strip()]
        assert len(lines) <= 10, f"an example of more than ten lines:\n{body}"


@pytest.mark.parametrize("code", PYTHON, ids=[f"example{i}" for i in range(len(PYTHON))])
def test_readme_example_runs_and_draws_its_picture(code, tmp_path):
    pictures = SAVED.findall(code)
    assert len(pictures) == 1, "each example saves the one picture the README shows"
    env = dict(os.environ, MPLBACKEND="Agg")
    # The examples use generated or bundled data: seconds each on two cores. The
    # generous limit only stops a hung run from hanging the suite.
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / pictures[0]).stat().st_size > 0
    shown = f"docs/figures/readme/{pictures[0]}"
    assert f"]({shown})" in README, f"the README does not show {shown}"


def _slug(heading):
    """The anchor GitHub and the site (myst_heading_anchors) give a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("target", sorted({t for t in LINKS if "://" not in t}))
def test_readme_link_points_to_a_file(target):
    path, _, fragment = target.partition("#")
    file = ROOT / path
    assert path and file.is_file(), f"{target}: no such file in the repository"
    if fragment and file.suffix == ".md":
        headings = re.findall(r"^#{1,6} (.+)$", file.read_text(encoding="utf-8"), flags=re.M)
        assert fragment in {_slug(h) for h in headings}, f"{target}: no such heading"
