"""The stepper in a real browser: voila serves a notebook that steps through a TreeOfThoughts run, and
headless Chromium (Debian's, driven by playwright) presses *next* and moves the slider.

Needs (installed by CI, never downloaded at test time): the Debian packages chromium and graphviz,
and `pip install voila playwright` (the `dev` extra). Playwright is told where Debian's Chromium is
(`/usr/bin/chromium`); it never downloads a browser. A missing piece fails the test with the line
that installs it: this test is not skipped.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from _support import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "tests" / "fixtures" / "stepper_tot.ipynb"
CHROMIUM = os.environ.get("RK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def _require():
    "Fail (not skip) with the install line for whatever is missing."
    missing = []
    if not Path(CHROMIUM).exists(): missing.append("Chromium (apt-get install -y chromium)")
    if shutil.which("dot") is None: missing.append("Graphviz's dot (apt-get install -y graphviz)")
    for mod, pip in (("voila", "voila"), ("playwright", "playwright")):
        try: __import__(mod)
        except ImportError: missing.append(f"{mod} (pip install {pip})")
    if missing: pytest.fail("the browser test needs " + ", ".join(missing), pytrace=False)



@pytest.fixture
def voila_url():
    _require()
    port = free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-m", "voila", str(NOTEBOOK), f"--port={port}", "--Voila.ip=127.0.0.1", "--no-browser",
         "--show_tracebacks=True", "--Voila.port_retries=0"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_listening(proc, port, log, "voila", 30, poll=0.2)
        yield f"http://127.0.0.1:{port}/", log
    finally:
        proc.terminate()
        try: proc.wait(10)
        except subprocess.TimeoutExpired: proc.kill(); proc.wait()
        log.close()


def _text(page, cls: str) -> str:
    return page.locator(f".{cls}").first.inner_text()


def _svg(page) -> str:
    return page.locator(".rk-picture-pane svg").first.inner_html()


def test_stepper_in_a_browser(voila_url):
    from playwright.sync_api import sync_playwright
    url, log = voila_url
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=ARGS,
                                                       viewport={"width": 1280, "height": 800})
        try:
            page = browser.pages[0] if browser.pages else browser.new_page()
            page.set_default_timeout(40_000)
            page.goto(url)
            try: page.wait_for_selector(".rk-picture-pane svg")
            except Exception:
                log.seek(0)
                raise AssertionError(f"the stepper never showed a picture; voila said:\n{log.read().decode()[-3000:]}\n"
                                     f"page:\n{page.inner_text('body')[:2000]}")
            # the notebook left the stepper at the first selection: the beam is n.1, the event tot.selected
            assert "tot.selected" in _text(page, "rk-event-pane")
            assert "beam: n.1 (6)" in _text(page, "rk-picture-pane")
            svg0, event0, pos0 = _svg(page), _text(page, "rk-event-pane"), _text(page, "rk-position")

            # next: the event pane shows the next event, and the position moves by one
            page.locator(".rk-next").click()
            page.wait_for_function("() => document.querySelector('.rk-event-pane').innerText.includes('tot.level_started')")
            page.wait_for_function("([p]) => document.querySelector('.rk-position').innerText !== p", arg=[pos0])
            event1 = _text(page, "rk-event-pane")
            assert event1 != event0 and "tot.level_started" in event1, event1
            n0, n1 = (int(x.split("/")[0]) for x in (pos0, _text(page, "rk-position")))
            assert n1 == n0 + 1, (pos0, _text(page, "rk-position"))
            assert "level 2 of 3" in _text(page, "rk-picture-pane")  # a new level has started

            # the slider: drag the handle to the far right, the end of the run
            handle = page.locator(".rk-slider .noUi-handle").first
            track = page.locator(".rk-slider .noUi-target").first.bounding_box()
            hb = handle.bounding_box()
            page.mouse.move(hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2)
            page.mouse.down()
            page.mouse.move(track["x"] + track["width"] + 50, hb["y"] + hb["height"] / 2, steps=8)
            page.mouse.up()
            page.wait_for_function("() => document.querySelector('.rk-event-pane').innerText.includes('run.finished')")
            picture = _text(page, "rk-picture-pane")
            assert "stopped: final" in picture and "(8 / (3 - 8 / 3))" in picture, picture
            assert _svg(page) != svg0  # the tree was redrawn: the winning path is marked
            assert "#dc2626" in page.locator(".rk-picture-pane svg").first.inner_html()
            if os.environ.get("RK_SCREENSHOT"): page.screenshot(path=os.environ["RK_SCREENSHOT"], full_page=True)

            # the picture fits the pane at 1280x800: no wider than the window, nothing cut at the right
            box = page.locator(".rk-picture-pane svg").first.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 1280, box
            # the camera: centre zooms in on the current node (a smaller viewBox), fit shows it all again
            vb = lambda: page.locator(".rk-picture-pane svg").first.get_attribute("viewBox")
            whole = vb()
            page.locator(".rk-camera-3").click()
            page.wait_for_function("([v]) => document.querySelector('.rk-picture-pane svg').getAttribute('viewBox') !== v", arg=[whole])
            assert float(vb().split()[2]) < float(whole.split()[2])
            page.locator(".rk-camera-1").click()
            page.wait_for_function("([v]) => document.querySelector('.rk-picture-pane svg').getAttribute('viewBox') === v", arg=[whole])

            # and back one step with the keyboard on the slider: the picture follows the fold again
            handle.focus(); page.keyboard.press("ArrowLeft")
            page.wait_for_function("() => !document.querySelector('.rk-event-pane').innerText.includes('run.finished')")
            assert "tot.completed" in _text(page, "rk-event-pane")
        finally:
            browser.close()
