"""A 50-node tree at "fit", in Chromium: the widget's picture (and the kept still) folds what it cannot show readably,
so its labels stay at a readable size, and the exported page clips no column. Screenshots under tests/screenshots/."""
import tempfile
from pathlib import Path

from test_fit_browser import ARGS, CHROMIUM, tree_run

from reasoning_kit.viz import Stepper
from reasoning_kit.viz.html import READABLE, Frame, frame_html, readable_scale

SHOTS = Path(__file__).parent / "screenshots"
SIZES = "() => [...document.querySelectorAll('svg text')].map(t => t.getBoundingClientRect().height / parseFloat(t.getAttribute('font-size')))"


def test_a_50_node_tree_at_fit_keeps_readable_labels(tmp_path):
    from playwright.sync_api import sync_playwright
    s = Stepper(tree_run(4, 5, 5))
    assert len(s.state.algo.nodes) >= 50
    assert readable_scale(s.picture()) < READABLE  # drawn whole, it would shrink below readable
    assert readable_scale(s.view_html()) >= READABLE and "nodes folded away" in s.view_html()
    s.zoom_by(1 / 1.5); assert "nodes folded away" not in s.view_html(); s.fit()  # − shows it whole; fit folds again
    page = tmp_path / "fit.html"
    page.write_text(f'<!doctype html><meta charset="utf-8"><body style="margin:8px;width:1264px">'
                    f'{Frame(frame_html(s.view_html(), s.event_html(), s.usage_html(), "tree_of_thoughts at fit")).html}</body>')
    exported = s.save_html(tmp_path / "page.html")
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        b = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=ARGS, viewport={"width": 1280, "height": 800})
        try:
            pg = b.pages[0] if b.pages else b.new_page()
            pg.goto(page.as_uri())
            scales = pg.evaluate(SIZES)
            assert scales and min(scales) >= READABLE, min(scales)  # every label at least 0.7 of its size: ~7 px and up, not 5
            SHOTS.mkdir(exist_ok=True); pg.screenshot(path=str(SHOTS / "tree_50_nodes_at_fit.png"))
            pg.goto(exported.as_uri()); pg.wait_for_function("() => window.rkReady !== undefined")
            box = pg.evaluate("() => { const p = document.getElementById('rk-picture'), g = p.querySelector('svg'), r = p.getBoundingClientRect(), s = g.getBoundingClientRect();"
                              " return [s.right, r.right, p.scrollWidth, p.clientWidth] }")
            assert box[0] <= box[1] + 0.5 or box[2] > box[3], box  # the drawing ends inside the pane, or the pane scrolls to it: no clipped column
            pg.screenshot(path=str(SHOTS / "tree_50_nodes_page.png"))
            small = Stepper(Path(__file__).parent / "fixtures" / "tot_v0.1.jsonl").save_html(tmp_path / "tot.html")
            pg.goto(small.as_uri()); pg.wait_for_function("() => window.rkReady !== undefined")
            pg.keyboard.press("Home"); [pg.keyboard.press("ArrowRight") for _ in range(3)]; pg.keyboard.press("c")  # event 4: the first prompt
            assert "Make 24 from 3, 3, 8, 8\n\nNo steps yet." in pg.inner_text("#rk-event")  # the prompt keeps its line breaks
            assert pg.locator("#rk-code .rk-code-hit").is_visible() and "_ask(" in pg.inner_text("#rk-code .rk-code-hit")  # the page's code pane: the call for this key
            pg.screenshot(path=str(SHOTS / "page_code_pane.png"))
        finally: b.close()
