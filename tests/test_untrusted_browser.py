"""A shipped notebook read as a newcomer reads it: opened in JupyterLab before it is trusted, and rendered the way a
code host's preview renders it (nbconvert's HTML with its sanitiser). Both show every stepper as a picture.

JupyterLab does not render SVG in an untrusted notebook, and sanitises HTML into run-on text; nbconvert's sanitiser
drops SVG. A stepper's kept output is therefore a still with a PNG beside its SVG (scripts/stills.py), which both show.
Screenshots are written under tests/screenshots/ (gitignored) for a person to look at.

Needs Debian's Chromium, playwright and jupyterlab (the `dev` extra); a missing piece fails the test with the line
that installs it.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from _support import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "tests" / "screenshots"
CHROMIUM = os.environ.get("RK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
NOTEBOOK = ROOT / "nbs" / "14_tot.ipynb"


def _require(*mods):
    missing = [] if Path(CHROMIUM).exists() else ["Chromium (apt-get install -y chromium)"]
    for m in mods:
        try: __import__(m)
        except ImportError: missing.append(f"{m} (pip install {m})")
    if missing: pytest.fail("this test needs " + ", ".join(missing), pytrace=False)



def _pictures(page, selector: str) -> list:
    return page.eval_on_selector_all(selector, "els => els.map(e => [e.complete, e.naturalWidth, e.naturalHeight])")


def test_a_code_hosts_preview_shows_the_stepper_as_a_picture(tmp_path):
    "nbconvert's HTML with its sanitiser (as a code host's preview): the still's PNG, no widget text."
    _require("playwright", "nbconvert")
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors.sanitize import SanitizeHTML
    from playwright.sync_api import sync_playwright
    exporter = HTMLExporter(sanitize_html=True)  # HTML and Markdown outputs cleaned ...
    exporter.register_preprocessor(SanitizeHTML(), enabled=True)  # ... and every output type but text, PNG and JPEG dropped (SVG too)
    page_html, _ = exporter.from_filename(str(NOTEBOOK))
    assert "VBox(children=" not in page_html and 'data-mime-type="image/svg+xml"' not in page_html  # the sanitiser took the SVG
    assert re.search(r'class="jp-RenderedImage[^>]*>\s*<img[^>]*src="data:image/png;base64,', page_html)
    out = tmp_path / "tot.html"; out.write_text(page_html)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1280, "height": 900})
            pg.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:")) else r.abort())
            pg.goto(out.as_uri())
            big = [x for x in _pictures(pg, ".jp-RenderedImage img") if x[0] and x[1] >= 900]
            assert big, _pictures(pg, "img")  # the still, drawn
            pg.locator(".jp-RenderedImage img").last.scroll_into_view_if_needed()
            SHOTS.mkdir(exist_ok=True); pg.screenshot(path=str(SHOTS / "nbconvert_sanitised_tot.png"))
        finally: browser.close()


@pytest.fixture
def lab(tmp_path):
    "A JupyterLab serving a fresh folder, with its own (empty) trust database: yields its URL and the folder."
    _require("playwright", "jupyterlab", "anywidget")
    work = tmp_path / "work"; work.mkdir()
    port = free_port(); log = tempfile.TemporaryFile()
    env = {**os.environ, "JUPYTER_DATA_DIR": str(tmp_path / "data"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config")}  # its own trust database: nothing signed before
    proc = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
                             "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root", "--ServerApp.port_retries=0",
                             f"--ServerApp.root_dir={work}", "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                            cwd=work, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_listening(proc, port, log, "JupyterLab", 60)
        yield f"http://127.0.0.1:{port}/lab/tree/", work
    finally:
        proc.terminate()
        try: proc.wait(15)
        except subprocess.TimeoutExpired: proc.kill(); proc.wait()
        log.close()


def _browser(p, profile):
    return p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=ARGS, viewport={"width": 1400, "height": 1000})


def test_jupyterlab_shows_an_untrusted_notebooks_stepper_as_a_picture(lab):
    from playwright.sync_api import sync_playwright
    url, work = lab
    shutil.copy(NOTEBOOK, work / NOTEBOOK.name)  # a copy never opened: not trusted
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        browser = _browser(p, profile)
        try:
            pg = browser.new_page(); pg.set_default_timeout(90_000)
            pg.route("**/*", lambda r: r.continue_() if "127.0.0.1" in r.request.url or r.request.url.startswith("data:") else r.abort())
            pg.goto(url + NOTEBOOK.name)
            pg.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            pg.wait_for_function("() => [...document.querySelectorAll('.jp-RenderedImage img')].some(i => i.complete && i.naturalWidth >= 900)",
                                 timeout=90_000)
            assert "VBox(children=" not in pg.locator(".jp-Notebook").inner_text()
            img = pg.locator(".jp-RenderedImage img").last
            img.scroll_into_view_if_needed(); time.sleep(1)
            SHOTS.mkdir(exist_ok=True); pg.screenshot(path=str(SHOTS / "jupyterlab_untrusted_tot.png"))
            assert pg.locator(".jp-RenderedSVGImage, .jp-RenderedSVG").count() == 0  # untrusted: the PNG, not the SVG
        finally: browser.close()


def test_the_widget_steps_with_its_own_keys_in_jupyterlab(lab):
    """A live stepper in JupyterLab: click its picture, and ← → Home End step through the run while JupyterLab's own
    shortcuts (← folds a section in command mode) stay out of it; `c` shows the code pane; the still above it hides."""
    import nbformat
    from playwright.sync_api import sync_playwright
    url, work = lab
    fixture = ROOT / "tests" / "fixtures" / "tot_v0.1.jsonl"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A section\n\nThe stepper below is inside it."),
                                         nbformat.v4.new_code_cell(f"from reasoning_kit.viz import Stepper\ns = Stepper({str(fixture)!r})\ns")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, work / "live.ipynb")
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        browser = _browser(p, profile)
        try:
            pg = browser.new_page(); pg.set_default_timeout(120_000)
            pg.route("**/*", lambda r: r.continue_() if "127.0.0.1" in r.request.url or r.request.url.startswith("data:") else r.abort())
            pg.goto(url + "live.ipynb")
            pg.wait_for_selector(".jp-Notebook .jp-CodeCell")
            time.sleep(3)
            if pg.locator(".jp-Dialog .jp-mod-accept").count(): pg.locator(".jp-Dialog .jp-mod-accept").first.click()  # "Select Kernel": Python 3
            pg.wait_for_function("() => /Idle/.test(document.body.innerText)", timeout=120_000)
            pg.locator(".jp-CodeCell .cm-content").first.click(); pg.keyboard.press("Shift+Enter")
            try: pg.wait_for_selector(".rk-stepper .rk-position", timeout=120_000)
            except Exception:
                SHOTS.mkdir(exist_ok=True); pg.screenshot(path=str(SHOTS / "jupyterlab_widget_failed.png")); raise
            pg.wait_for_function("() => /55 \\/ 55/.test(document.querySelector('.rk-stepper .rk-position').innerText)")
            assert not pg.locator(".jp-OutputArea-child:has(img[src*='rk-still'])").first.is_visible()  # the still hides where the widget runs
            pg.locator(".rk-picture-pane").click(position={"x": 20, "y": 20})
            for key, want in (("ArrowLeft", "54 / 55"), ("ArrowLeft", "53 / 55"), ("ArrowRight", "54 / 55"), ("Home", "1 / 55"), ("End", "55 / 55")):
                pg.keyboard.press(key)
                pg.wait_for_function(f"() => document.querySelector('.rk-stepper .rk-position').innerText.trim().startsWith({want!r})", timeout=20_000)
            assert pg.locator(".rk-stepper").is_visible() and pg.locator(".jp-MarkdownCell").count() == 1  # nothing folded away
            pg.keyboard.press("ArrowLeft"); pg.keyboard.press("c")
            pg.wait_for_selector(".rk-code-pane .rk-code-hit", state="visible", timeout=20_000)
            assert "ctx.emit" in pg.locator(".rk-code-pane .rk-code-hit").inner_text() or "def run(" in pg.locator(".rk-code-pane .rk-code-hit").inner_text()
            pg.keyboard.press("Home")
            for _ in range(3): pg.keyboard.press("ArrowRight")  # event 4: the first prompt, whose lines are apart
            pg.wait_for_function("() => document.querySelector('.rk-stepper .rk-position').innerText.trim().startsWith('4 / 55')", timeout=20_000)
            pg.wait_for_function("() => document.querySelector('.rk-event-pane').innerText.includes('No steps yet.')", timeout=20_000)
            assert "Make 24 from 3, 3, 8, 8\n\nNo steps yet." in pg.locator(".rk-event-pane").inner_text()  # the prompt keeps its line breaks
            pg.locator(".rk-stepper").scroll_into_view_if_needed(); time.sleep(0.5)
            SHOTS.mkdir(exist_ok=True); pg.screenshot(path=str(SHOTS / "jupyterlab_widget_code_pane.png"), full_page=True)
        finally: browser.close()
