"""The built documentation site, checked as a reader would, in headless Chromium.

Visits the index, a user-guide page, the API page of GPLandmarks, a gallery
example, the Benchmarks page and the GP and LLL results pages (with the
benchmarks' plots), and checks on
each: the title, that every internal link leads to a file of the site (and to
its anchor), and that every image loaded (natural width > 0).

Needs the site (``make docs`` builds it into docs/_build/html), Debian's
``chromium`` and Playwright's Python package (``pip install -e .[docs]``; the
system Chromium is used, no browser is downloaded). ``make docs-check`` builds
the site and runs this file (``make test`` leaves it to that target). Where one of
the three is missing the page tests skip, naming it; under CI (``CI`` set, as CI
runners do) they fail instead, so that the check cannot pass having checked nothing.
"""

import functools
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import pytest

SITE = Path(__file__).resolve().parents[1] / "docs" / "_build" / "html"
CHROMIUM = os.environ.get("LANDMARKING_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

# (page, text its <title> and <h1> must contain)
PAGES = [
    ("index.html", "landmarking"),
    ("guide/gp_landmarks.html", "GP manifold landmarks"),
    ("generated/landmarking.GPLandmarks.html", "landmarking.GPLandmarks"),
    ("auto_examples/plot_two_circles.html", "GP landmarks on two circles"),
    ("benchmarks.html", "Benchmarks"),
    ("results/gp.html", "GP manifold landmarks"),
    ("results/lll.html", "Locally Linear Landmarks"),
]

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]

ALL_IMAGES_SETTLED = """() => Array.from(document.images).every(img => img.complete)"""
IMAGES = """() => Array.from(document.images).map(img => ({
    src: img.currentSrc || img.src, width: img.naturalWidth}))"""
LINKS = """() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"""


def under_ci():
    """Whether a CI runner runs the tests (they set ``CI``, most to ``true``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def cannot_check(reason):
    """Skip with ``reason``; under CI fail with it: CI must check the site."""
    if under_ci():
        pytest.fail(f"{reason} (CI={os.environ['CI']}: the site must be checked in a browser "
                    "here, so this fails instead of skipping)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory):
    try:
        from playwright import sync_api
    except ImportError:
        sync_api = None
    if sync_api is None:
        cannot_check("Playwright's Python package is not installed (pip install -e .[docs])")
    if not (SITE / "index.html").exists():
        cannot_check(f"{SITE} has no index.html: build the site with `make docs` first")
    if not Path(CHROMIUM).exists():
        cannot_check(f"no Chromium at {CHROMIUM}: apt-get install chromium "
                     "(or set LANDMARKING_CHROMIUM)")
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM,
            headless=True, args=CHROMIUM_FLAGS, offline=True)
        try:
            yield context.new_page()
        finally:
            context.close()


def _file_of(url):
    """The file a file:// URL points at (index.html for a folder)."""
    path = Path(url2pathname(urlsplit(url).path))
    return path / "index.html" if path.is_dir() else path


@functools.lru_cache(maxsize=None)
def _anchors(path):
    """The ids and names a page defines (the targets of #fragments)."""
    html = path.read_text(encoding="utf-8", errors="replace")
    return frozenset(re.findall(r'\b(?:id|name)="([^"]+)"', html))


def _broken_links(urls):
    broken = []
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme != "file":
            continue                      # external sites are not this test's business
        target = _file_of(url)
        if not target.is_file():
            broken.append(f"{url} (no such file)")
        elif parts.fragment and target.suffix == ".html" \
                and unquote(parts.fragment) not in _anchors(target):
            broken.append(f"{url} (no anchor #{unquote(parts.fragment)})")
    return broken


@pytest.mark.parametrize("page_path, title", PAGES, ids=[p for p, _ in PAGES])
def test_page_reads_as_a_reader_sees_it(browser_page, page_path, title):
    page = browser_page
    file = SITE / page_path
    assert file.is_file(), f"{file} was not built"
    page.goto(file.as_uri(), wait_until="load")

    assert title in page.title(), f"{page_path}: <title> is {page.title()!r}"
    heading = page.locator("h1").first.inner_text()
    assert title in heading, f"{page_path}: first heading is {heading!r}"

    # Lazy images load only when scrolled to; a reader scrolls, so do it too.
    page.evaluate("() => document.querySelectorAll('img').forEach(i => i.loading = 'eager')")
    page.wait_for_function(ALL_IMAGES_SETTLED, timeout=15000)
    images = page.evaluate(IMAGES)
    not_loaded = [img["src"] for img in images if img["width"] == 0]
    assert not not_loaded, f"{page_path}: images that did not load: {not_loaded}"
    if page_path.startswith("auto_examples/"):
        assert any("sphx_glr_plot_" in img["src"] for img in images), \
            f"{page_path}: the example's picture is missing"

    links = page.evaluate(LINKS)
    assert links, f"{page_path}: no links at all"
    broken = _broken_links(links)
    assert not broken, f"{page_path}: broken internal links:\n" + "\n".join(broken)


def test_broken_link_is_detected(tmp_path):
    """The link check itself: a missing file and a missing anchor are reported."""
    page = tmp_path / "a.html"
    page.write_text('<h1 id="top">A</h1>')
    good = [page.as_uri(), page.as_uri() + "#top"]
    bad = [(tmp_path / "missing.html").as_uri(), page.as_uri() + "#nowhere"]
    assert _broken_links(good + ["https://example.org/x"]) == []
    assert len(_broken_links(bad)) == 2


@pytest.mark.parametrize("ci, fails", [("true", True), ("1", True), ("false", False),
                                       ("", False), (None, False)])
def test_a_missing_piece_fails_under_ci_and_skips_elsewhere(monkeypatch, ci, fails):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    outcome = pytest.fail.Exception if fails else pytest.skip.Exception
    with pytest.raises(outcome, match="no Chromium at /nowhere"):
        cannot_check("no Chromium at /nowhere")
