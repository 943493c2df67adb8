"""Sphinx configuration of the landmarking documentation site.

Built by ``make docs`` (warnings are errors). What can drift from the code is
generated here at build time: the API reference (``api.rst``, one autosummary
table per public module over its ``__all__``), the command line reference (each
subcommand's ``--help``), the changelog (``../CHANGELOG.md`` when it exists,
else the git log) and the user-guide entry of ``reliability.md`` when that page
exists. The figures of the Results pages (``results/*.md``) are in ``figures/``,
copied from the benchmark scripts' quick runs or drawn from their tables.
"""

import importlib
import inspect
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import landmarking

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS))  # for _gallery_order

# Examples and doctests read real data like the tests do: LANDMARKING_DATA, else
# ../shared/data next to the repository (not next to the example's folder, which
# is the working directory sphinx-gallery runs it from).
os.environ.setdefault("LANDMARKING_DATA", str(ROOT.parent / "shared" / "data"))
os.environ.setdefault("MPLBACKEND", "Agg")

project = "landmarking"
author = "the landmarking developers"
copyright = "2026, the landmarking developers"
version = release = landmarking.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "matplotlib.sphinxext.plot_directive",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "**/*.md5",
                    "**/*.codeobj.json", "gen_modules/**"]

html_theme = "pydata_sphinx_theme"
html_title = f"landmarking {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": [], "getting_started": [], "changelog": [], "benchmarks": [],
                 "cli": []}
html_show_sourcelink = False

autosummary_generate = True
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

myst_heading_anchors = 3

# Figures drawn at build time from data kept beside the page (docs/figures).
plot_working_directory = str(DOCS)
plot_include_source = False
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]

doctest_global_setup = """
import numpy as np
np.set_printoptions(precision=4, suppress=True)
"""

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "abort_on_example_error": True,
    "doc_module": ("landmarking",),
    "backreferences_dir": "gen_modules/backreferences",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "min_reported_time": 1,
    "show_memory": False,
    "write_computation_times": False,
    "within_subsection_order": "_gallery_order.ExampleOrder",
}


# --------------------------------------------------------------------------
# API reference: generated from __all__, one object on one page.
# --------------------------------------------------------------------------

def _public_modules():
    """landmarking and its public submodules, packages before their children."""
    names = ["landmarking"]
    for info in pkgutil.walk_packages(landmarking.__path__, "landmarking."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def _documented_names(module):
    """Public classes and functions a module offers, in its ``__all__`` order."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(module).items()
                 if not n.startswith("_") and getattr(obj, "__module__", None) == module.__name__]
    out = []
    for name in names:
        obj = getattr(module, name, None)
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and \
                str(getattr(obj, "__module__", "")).startswith("landmarking"):
            out.append((name, obj))
    return out


def write_api_page():
    """Write api.rst; rewrite only when it changes (keeps incremental builds)."""
    lines = [
        ".. This file is written by conf.py at every build; edit conf.py, not this file.",
        "",
        "API reference",
        "=============",
        "",
        "Every public class and function, generated from the docstrings. Objects",
        "that ``import landmarking`` offers are listed first; each module's section",
        "lists what it adds.",
        "",
    ]
    seen = set()
    for name in _public_modules():
        module = importlib.import_module(name)
        entries = [(n, o) for n, o in _documented_names(module) if id(o) not in seen]
        if not entries:
            continue
        title = f"``{name}``"
        lines += [title, "-" * len(title), "", f".. automodule:: {name}", "   :no-members:", "",
                  f".. currentmodule:: {name}", "",
                  ".. autosummary::", "   :toctree: generated/", "   :nosignatures:", ""]
        for n, obj in entries:
            seen.add(id(obj))
            lines.append(f"   {n}")
        lines.append("")
    text = "\n".join(lines) + "\n"
    path = DOCS / "api.rst"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


write_api_page()


# --------------------------------------------------------------------------
# Changelog and the optional Reliability page.
# --------------------------------------------------------------------------

def _changelog_markdown():
    if (ROOT / "CHANGELOG.md").exists():
        return "```{include} ../CHANGELOG.md\n:relative-docs: docs/\n:relative-images:\n```\n"
    try:
        log = subprocess.run(
            ["git", "log", "--no-merges", "--date=short", "--format=%ad %s", "-n", "300"],
            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        log = ""
    body = ["# Changelog", "",
            "There is no `CHANGELOG.md` yet, so this page lists the latest commits "
            "(newest first), as `git log` gives them.", ""]
    if not log.strip():
        body.append("No git history is available in this copy of the sources.")
    for line in log.splitlines():
        date, _, subject = line.partition(" ")
        subject = subject.replace("`", "'").replace("*", "\\*").replace("_", "\\_")
        subject = subject.replace("<", "&lt;").replace("[", "\\[")
        body.append(f"- **{date}** {subject}")
    return "\n".join(body) + "\n"


# --------------------------------------------------------------------------
# Command line reference: each subcommand's --help, from the parser itself.
# --------------------------------------------------------------------------

CLI_PLACEHOLDER = ".. the command line reference is inserted here by conf.py"


def _cli_reference():
    from landmarking.cli.parser import build_parser

    os.environ["COLUMNS"] = "88"  # argparse wraps --help to this width
    parser = build_parser()
    parser.prog = "landmarking"
    out = ["``landmarking``", "-" * 15, "", parser.description or "", "",
           ".. code-block:: text", ""]
    out += ["   " + line for line in parser.format_help().splitlines()] + [""]
    for action in parser._subparsers._group_actions:
        for name, sub in action.choices.items():
            title = f"``landmarking {name}``"
            out += [f".. _cli-{name}:", "", title, "-" * len(title), "",
                    sub.description or "", "", ".. code-block:: text", ""]
            out += ["   " + line for line in sub.format_help().splitlines()] + [""]
    return "\n".join(out) + "\n"


def _source_read(app, docname, source):
    if docname == "cli":
        source[0] = source[0].replace(CLI_PLACEHOLDER, _cli_reference())
    elif docname == "changelog":
        source[0] = _changelog_markdown()
    elif docname == "guide/index" and (DOCS / "reliability.md").exists():
        source[0] = source[0].replace("   sculpting\n", "   sculpting\n   /reliability\n")


# --------------------------------------------------------------------------
# Docstrings are written for help() as much as for this site: there a fitted
# attribute reads naturally as kernel_width_, a set as |B_s| and a norm as
# ||w||^2. In reStructuredText these are markup (a link to a target
# "kernel_width", substitutions), so escape them outside literals before
# numpydoc parses them.
# --------------------------------------------------------------------------

_LITERAL = re.compile(r"(``.*?``|`[^`]*`)")
_TRAILING_UNDERSCORE = re.compile(r"(?<![\\\w])(\w+)_(?![\w`])")
_BAR = re.compile(r"(?<!\\)\|")


def _escape_prose(text):
    """Escape trailing underscores and bars (norms, |B_s|) outside literals."""
    parts = _LITERAL.split(text)
    for i in range(0, len(parts), 2):
        parts[i] = _BAR.sub(r"\\|", _TRAILING_UNDERSCORE.sub(r"\1\\_", parts[i]))
    return "".join(parts)


def _escape_docstring(app, what, name, obj, options, lines):
    lines[:] = [_escape_prose(line) for line in lines]


def _skip_member(app, what, name, obj, skip, options):
    # scikit-learn's metadata-routing methods (set_fit_request, ...) are attached
    # to every estimator class; they are scikit-learn's API, documented there.
    if re.fullmatch(r"set_\w+_request|get_metadata_routing", name):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("source-read", _source_read)
    # Before numpydoc (priority 500), which reads the sections.
    app.connect("autodoc-process-docstring", _escape_docstring, priority=100)
