"""The documentation site: `scripts/docs.sh` builds it from the notebooks, offline, and headless Chromium reads a
few pages: a picture shows, the stepper's static frame is there, search answers, no link is broken and no page asks
anything of any host but the local server.

Needs the docs tool in its own environment (`bash scripts/docs.sh` installs it once from the `docs` extra into
.venv-docs, or $DOCS_VENV), Debian's Chromium and playwright (the `dev` extra). A missing piece fails the test with
the line that installs it: this test is not skipped.
"""
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
from prepare import page_name, reading_order  # noqa: E402

VENV = Path(os.environ.get("DOCS_VENV") or ROOT / ".venv-docs")
CHROMIUM = os.environ.get("RK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = ROOT / "tests" / "screenshots"  # kept for a person to look at (gitignored)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if not (VENV / "bin" / "sphinx-build").exists():
        pytest.fail(f"the docs tool is not installed in {VENV}: run `bash scripts/docs.sh` once (it installs the docs extra)", pytrace=False)
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run(["bash", "scripts/docs.sh", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "DOCS_VENV": str(VENV)})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return out


def test_one_page_per_notebook_in_reading_order_with_the_readme_in_front(site):
    nbs = reading_order(ROOT / "nbs")
    pages = [page_name(p) for p in nbs]
    assert all((site / f"{p}.html").exists() for p in pages)
    index = (site / "index.html").read_text()
    assert "Turn more model calls into better answers" in index or "reasoning_kit" in index
    first_line = (ROOT / "README.md").read_text().splitlines()[0].lstrip("# ").strip()
    assert first_line in index
    nav = re.findall(r'class="reference internal" href="([a-z0-9_]+)\.html"', index)
    order = [p for p in dict.fromkeys(nav) if p in pages]
    assert order == pages, (order[:8], pages[:8])  # the sidebar lists them as they are read


def test_hidden_cells_are_gone_and_inline_tests_folded(site):
    page = (site / "eval.html").read_text()
    assert "from fastcore.test import test_eq" not in page  # a `#| hide` cell
    assert "#| export" not in page and "default_exp" not in page
    tests = lambda html: len(re.findall(r"\btest_(?:eq|fail)\(", re.sub(r"<[^>]+>", "", html)))
    folded = inside = outside = 0
    for f in site.glob("*.html"):
        page = f.read_text(); folds = re.findall(r"<details.*?</details>", page, flags=re.S)
        folded += len(folds); inside += sum(map(tests, folds)); outside += tests(re.sub(r"<details.*?</details>", "", page, flags=re.S))
    assert folded > 200 and inside > 500
    assert outside <= inside / 20, (inside, outside)  # the few left are asserts written inside an example's own cell


def test_every_docs_line_of_the_package_names_a_page_of_the_site(site):
    cfg = __import__("tomllib").loads((ROOT / "pyproject.toml").read_text())
    base = cfg["project"]["urls"]["Documentation"].rstrip("/") + "/"
    urls = [m for f in (ROOT / "reasoning_kit").rglob("*.py") for m in re.findall(r"^Docs: (\S+?)(?:\"\"\")?$", f.read_text(), flags=re.M)]
    assert len(urls) > 30
    for u in urls:
        assert u.startswith(base), u
        rel = u[len(base):]
        assert (site / rel).exists() and (site / rel.removesuffix(".md")).exists(), u


class _Links(HTMLParser):
    def __init__(self):
        super().__init__(); self.links = []
    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("href", "src") and v: self.links.append(v)


def test_no_broken_local_link(site):
    broken = []
    for page in site.rglob("*.html"):
        p = _Links(); p.feed(page.read_text())
        for link in p.links:
            u = urlparse(link)
            if u.scheme or link.startswith(("#", "mailto:", "data:", "javascript:")): continue
            target = (page.parent / unquote(u.path)).resolve()
            if u.path and not target.exists(): broken.append(f"{page.name}: {link}")
    assert broken == []


@pytest.fixture(scope="module")
def served(site):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_pages_in_headless_chromium(served):
    if not Path(CHROMIUM).exists(): pytest.fail("Chromium is needed (apt-get install -y chromium)", pytrace=False)
    try: from playwright.sync_api import sync_playwright
    except ImportError: pytest.fail("playwright is needed (pip install playwright)", pytrace=False)
    import tempfile
    asked = []
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(); page.set_default_timeout(30_000)
            page.on("request", lambda r: asked.append(r.url))
            page.goto(f"{served}/sweep_plots.html", wait_until="load")
            sizes = page.eval_on_selector_all("img", "els => els.map(e => [e.complete, e.naturalWidth])")
            assert len(sizes) >= 3 and all(ok and w > 100 for ok, w in sizes), sizes  # the plots show
            page.goto(f"{served}/view_tot.html", wait_until="load")
            stills = page.eval_on_selector_all("article img", "els => els.map(e => [e.complete, e.naturalWidth, e.getAttribute('src')])")
            assert any(ok and w > 500 for ok, w, _ in stills), stills  # the stepper's still: a picture, not text
            SHOTS.mkdir(exist_ok=True); page.set_viewport_size({"width": 1280, "height": 1000})
            page.screenshot(path=str(SHOTS / "docs_view_tot.png"))
            page.goto(f"{served}/tot.html", wait_until="load"); page.locator("article img").last.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "docs_tot.png"))
            assert page.locator("details").count() > 0 and not page.locator("details").first.get_attribute("open")
            page.goto(f"{served}/index.html", wait_until="load")
            page.fill("input[name=q]", "sweep"); page.keyboard.press("Enter")
            page.wait_for_selector("#search-results li", timeout=30_000)
            assert page.locator("#search-results li").count() > 0  # the search box answers, offline
        finally: browser.close()
    assert asked and all(urlparse(u).hostname == "127.0.0.1" for u in asked), sorted({u for u in asked if urlparse(u).hostname != "127.0.0.1"})


def test_no_page_shows_a_widget_repr_and_the_footer_names_its_owner(site):
    pages = list(site.glob("*.html"))
    assert [p.name for p in pages if re.search(r"[HV]Box\(children=", p.read_text())] == []
    index = (site / "index.html").read_text()
    assert "reasoning_kit developers" in re.sub(r"\s+", " ", index)  # the footer said "Copyright ©" and nothing else
    captions = re.findall(r'<p class="caption"[^>]*><span class="caption-text">([^<]+)</span>', index)
    assert captions == ["start", "core", "models", "engine", "effects", "algos", "tasks", "viz", "sweep", "apps", "experiments"], captions


def test_a_page_starts_with_prose_not_the_import_block(site):
    text = re.sub(r"<[^>]+>", " ", (site / "stepper.html").read_text())
    body = text[text.find("The stepper"):]
    assert "from __future__ import annotations" not in body
