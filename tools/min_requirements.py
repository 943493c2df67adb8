"""Print the declared minimum version of every dependency as an exact pin.

``make test-min`` installs these pins in a separate virtual environment and runs the
test suite there, so the floors in ``pyproject.toml`` are the versions that are tested:
they cannot drift apart, because the pins are read from the floors each time.

Usage::

    python tools/min_requirements.py [--extras test,ann,scale] [pyproject.toml]

Each requirement of ``[project] dependencies`` and of the named extras must carry a
``>=`` floor; ``name[extra]>=1.2, <2`` becomes ``name[extra]==1.2`` (an upper bound
or an environment marker is kept out of the pin, the marker is carried over).
A requirement without a floor is an error: its minimum could not be tested.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

# name, optional [extras], then the version specifiers, then an optional marker.
_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<extras>\[[^\]]*\])?\s*"
    r"(?P<specs>[^;]*?)\s*(?:;\s*(?P<marker>.+))?\s*$"
)
_FLOOR = re.compile(r"^>=\s*(?P<version>[0-9][0-9A-Za-z.+!-]*)$")
_EXACT = re.compile(r"^==\s*(?P<version>[0-9][0-9A-Za-z.+!-]*)$")


def exact_pin(requirement: str) -> str:
    """Turn one PEP 508 requirement with a ``>=`` floor into an ``==`` pin.

    Parameters
    ----------
    requirement : str
        For example ``"dask[array,distributed]>=2025.1.0"``.

    Returns
    -------
    str
        For example ``"dask[array,distributed]==2025.1.0"``. A requirement that is
        already an exact ``==`` pin is returned as it is.

    Raises
    ------
    ValueError
        When the requirement has no ``>=`` floor (or no ``==`` pin), or more than one.
    """
    match = _REQUIREMENT.match(requirement)
    if match is None or not match["specs"]:
        raise ValueError(
            f"{requirement!r} has no version floor; write it as 'name>=X.Y' in "
            "pyproject.toml so that `make test-min` can install and test version X.Y."
        )
    specs = [s.strip() for s in match["specs"].split(",") if s.strip()]
    floors = [m["version"] for s in specs if (m := _FLOOR.match(s) or _EXACT.match(s))]
    if len(floors) != 1:
        raise ValueError(
            f"{requirement!r} needs exactly one '>=' floor (or one '==' pin), found "
            f"{len(floors)}; `make test-min` installs that version and tests it."
        )
    pin = f"{match['name']}{match['extras'] or ''}=={floors[0]}"
    return f"{pin}; {match['marker']}" if match["marker"] else pin


def minimum_pins(pyproject: Path, extras: list[str]) -> list[str]:
    """Exact pins for the dependencies of ``pyproject`` and of the given extras.

    Parameters
    ----------
    pyproject : pathlib.Path
        The project's ``pyproject.toml``.
    extras : list of str
        Names of ``[project.optional-dependencies]`` groups to include.

    Returns
    -------
    list of str
        One pin per requirement, core dependencies first, in the file's order.

    Raises
    ------
    ValueError
        When an extra is not declared, or a requirement has no floor.
    """
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [name for name in extras if name not in optional]
    if unknown:
        raise ValueError(
            f"extras {unknown} are not declared in {pyproject}; declared: {sorted(optional)}."
        )
    requirements = list(project.get("dependencies", []))
    for name in extras:
        requirements += optional[name]
    return [exact_pin(r) for r in requirements]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pyproject", nargs="?", type=Path,
                        default=Path(__file__).resolve().parents[1] / "pyproject.toml")
    parser.add_argument("--extras", default="",
                        help="comma-separated optional-dependency groups, e.g. test,ann,scale")
    args = parser.parse_args(argv)
    extras = [e.strip() for e in args.extras.split(",") if e.strip()]
    try:
        pins = minimum_pins(args.pyproject, extras)
    except ValueError as exc:
        print(f"min_requirements: {exc}", file=sys.stderr)
        return 1
    print("\n".join(pins))
    return 0


if __name__ == "__main__":
    sys.exit(main())
