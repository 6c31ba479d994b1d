"""The run saved as one HTML file steps in headless Chromium offline: next, play and the slider change the
picture, jump by kind lands on that kind, no request leaves the page, and the picture fits 1280 wide.

Needs Debian's chromium (scripts/setup.sh --dev) and playwright (the dev extra); never downloads a browser."""
import shutil
import tempfile
from pathlib import Path

import pytest

from reasoning_kit.viz import Stepper, save_html

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LOGS = ["tot", "swarm", "debate", "tool_loop", "self_consistency", "reflexion", "generator_critic", "generate_test_repair"]


def test_saved_html_is_small_and_self_contained(tmp_path):
    page = save_html(FIXTURES / "tot_v0.1.jsonl", tmp_path / "tot.html").read_text()
    assert len(page.encode()) < 2_000_000
    assert "<link" not in page and " src=" not in page and "@import" not in page


@pytest.mark.parametrize("name", LOGS)
def test_saved_html_steps_offline_in_chromium(name, tmp_path):
    from playwright.sync_api import sync_playwright
    assert Path(CHROMIUM).exists(), "apt-get install -y chromium"
    out = Stepper(FIXTURES / f"{name}_v0.1.jsonl").save_html(tmp_path / f"{name}.html")
    requests = []
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        b = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=ARGS,
                                                 viewport={"width": 1280, "height": 800})
        try:
            page = b.pages[0] if b.pages else b.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.goto(out.as_uri())
            pos = lambda: page.inner_text("#rk-position")
            event = lambda: page.inner_text("#rk-event")
            assert pos().startswith("1 / ")
            n = int(pos().split("/ ")[1])
            e0 = event()
            page.click("#rk-next")
            assert pos() == f"2 / {n}" and event() != e0
            page.click("#rk-prev"); assert pos() == f"1 / {n}"
            page.eval_on_selector("#rk-slider", "(s, v) => { s.value = v; s.dispatchEvent(new Event('input')) }", str(n - 1))
            assert pos() == f"{n} / {n}" and event() != e0
            page.screenshot(path=str(tmp_path / f"{name}.png"))
            # the picture fits: nothing in the picture pane is wider than the pane
            widths = page.eval_on_selector("#rk-picture", "p => [p.clientWidth, p.scrollWidth]")
            assert widths[1] <= widths[0] + 2, widths
            page.eval_on_selector("#rk-slider", "(s) => { s.value = 0; s.dispatchEvent(new Event('input')) }")
            page.select_option("#rk-speed", "100"); page.click("#rk-play")
            page.wait_for_function("() => !document.getElementById('rk-position').textContent.startsWith('1 /')")
            page.click("#rk-play")
            assert pos() != f"1 / {n}"
            page.select_option("#rk-kind", "model call"); page.eval_on_selector("#rk-slider", "(s) => { s.value = 0; s.dispatchEvent(new Event('input')) }")
            page.click("#rk-jump-next")
            assert "llm.request" in event()
            # play to the next event of a kind: it plays, then stops on that kind
            kind = "model reply"; page.select_option("#rk-kind", kind); page.select_option("#rk-speed", "30")
            start = pos(); page.click("#rk-play-next")
            page.wait_for_function("([p]) => document.getElementById('rk-position').textContent !== p", arg=[start])
            page.wait_for_timeout(400)
            assert "llm.result" in event() or "llm.error" in event(), event()
            # zoom: centre on the current node narrows the SVG's window; fit brings the whole picture back
            if page.query_selector("#rk-picture svg"):
                whole = page.get_attribute("#rk-picture svg", "viewBox")
                page.click("#rk-centre"); near = page.get_attribute("#rk-picture svg", "viewBox")
                assert float(near.split()[2]) < float(whole.split()[2]), (whole, near)
                page.click("#rk-fit"); assert page.get_attribute("#rk-picture svg", "viewBox") == whole
        finally:
            b.close()
    assert [u for u in requests if not u.startswith("file:")] == []
