"""The run saved as one HTML file steps in headless Chromium offline: next, play and the slider change the
picture, jump by kind lands on that kind, no request leaves the page, and the picture fits 1280 wide. The page
builds each step's picture itself (trees laid out in the page): it must be the widget's picture, exactly; and the
file must grow with the log (a 901-event tree under 1 MB, 10,000 events under 3 MB).

Needs Debian's chromium (scripts/setup.sh --dev) and playwright (the dev extra); never downloads a browser."""
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from reasoning_kit.viz import Stepper, save_html

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@contextmanager
def chromium_page():
    "A page of headless Debian Chromium at 1280x800 in a throwaway profile, closed afterwards."
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        b = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=ARGS,
                                                 viewport={"width": 1280, "height": 800})
        try: yield b.pages[0] if b.pages else b.new_page()
        finally: b.close()


LOGS = ["tot", "swarm", "debate", "tool_loop", "self_consistency", "reflexion", "generator_critic", "generate_test_repair"]


def test_saved_html_is_small_and_self_contained(tmp_path):
    page = save_html(FIXTURES / "tot_v0.1.jsonl", tmp_path / "tot.html").read_text()
    assert len(page.encode()) < 2_000_000
    assert "<link" not in page and " src=" not in page and "@import" not in page


@pytest.mark.parametrize("name", LOGS)
def test_saved_html_steps_offline_in_chromium(name, tmp_path):
    assert Path(CHROMIUM).exists(), "apt-get install -y chromium"
    out = Stepper(FIXTURES / f"{name}_v0.1.jsonl").save_html(tmp_path / f"{name}.html", start="first")
    requests = []
    with chromium_page() as page:
        page.on("request", lambda r: requests.append(r.url))
        page.goto(out.as_uri()); page.wait_for_function("() => document.getElementById('rk-position').textContent !== ''")  # the data may unpack asynchronously
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
    assert [u for u in requests if not u.startswith("file:")] == []


def test_nbconvert_html_shows_the_stepper_offline(tmp_path):
    """A notebook with a stepper, executed (widget state saved, as Jupyter does) and exported with nbconvert: offline, the
    page shows the still where the stepper was, as a picture, even though the widget cannot load, and no widget text."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"from reasoning_kit.viz import Stepper\ns = Stepper({str(FIXTURES / 'tot_v0.1.jsonl')!r}).goto(20)\ns")])
    NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    assert "widgets" in nb.metadata  # the saved widget state: nbconvert then prefers the widget view for the widget's output
    kinds = [sorted(o.data) for o in nb.cells[0].outputs]
    assert kinds == [["image/svg+xml", "text/plain"], ["application/vnd.jupyter.widget-view+json", "text/plain"]], kinds
    page, _ = HTMLExporter().from_notebook_node(nb)
    assert "VBox(children=" not in page and 'data-mime-type="image/svg+xml"' in page or "jp-RenderedSVG" in page
    out = tmp_path / "nb.html"; out.write_text(page)
    with chromium_page() as pg:
        pg.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:")) else route.abort())  # offline
        pg.goto(out.as_uri())
        box = pg.locator(".jp-RenderedSVG img, .jp-RenderedSVG svg").first.bounding_box()
        assert box and box["width"] > 500 and box["height"] > 100, box  # the still is there and visible


def test_a_300_event_tree_of_50_nodes_stays_under_2_mb(tmp_path):
    from test_fit_browser import tree_run
    out = tree_run(4, 5, 5)
    assert 250 <= len(out.log) <= 450 and len(out.state.algo.nodes) >= 50, (len(out.log), len(out.state.algo.nodes))
    size = save_html(out, tmp_path / "tree.html").stat().st_size
    assert size < 2_000_000, f"{size:,} bytes"


def test_ten_thousand_events_export_open_and_step_in_chromium(tmp_path):
    import asyncio
    from reasoning_kit.models import FakeLLMClient, LLMHandler, system, user
    from reasoning_kit.engine import Algorithm, Engine

    class Notes(Algorithm):
        name = "export_test_notes"
        def initial(self): return {"notes": 0, "last": None}
        def apply(self, s, e):
            if e.kind == "notes.noted": s["notes"] += 1; s["last"] = e.data["text"]
        async def run(self, ctx):
            for i in range(3333):
                r = await ctx.llm([system("Note."), user(f"note {i}")], key=f"notes/{i}")
                ctx.emit("notes.noted", text=r.text)
        def result(self, s): return {"answer": s["last"]}

    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lambda r: "ok " + r.messages[-1].content)).attach(engine)
            return await engine.run(Notes(), {})
    run = asyncio.run(go())
    n = len(run.log); assert n >= 10_000
    page_file = save_html(run, tmp_path / "big.html")
    assert page_file.stat().st_size < 3_000_000, f"{page_file.stat().st_size:,} bytes"
    requests = []
    with chromium_page() as page:
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_file.as_uri() + "#1"); page.wait_for_function("() => document.getElementById('rk-position').textContent !== ''")  # the data may unpack asynchronously
        assert page.inner_text("#rk-position") == f"1 / {n}"
        page.click("#rk-next"); assert page.inner_text("#rk-position") == f"2 / {n}"
        page.eval_on_selector("#rk-slider", "(s, v) => { s.value = v; s.dispatchEvent(new Event('input')) }", str(n - 2))
        assert page.inner_text("#rk-position") == f"{n - 1} / {n}" and "ok note 3332" in page.inner_text("#rk-picture")
        page.click("#rk-next"); assert "run.finished" in page.inner_text("#rk-event")
    assert [u for u in requests if not u.startswith("file:")] == []


def _open(page, path, fragment=""):
    page.goto(path.as_uri() + fragment)
    page.wait_for_function("() => document.getElementById('rk-position').textContent !== ''")


SAME = """([i, want]) => { const a = document.createElement('div'), b = document.createElement('div');
  a.innerHTML = rkPicture(i); b.innerHTML = want; return a.innerHTML === b.innerHTML ? null : [a.innerHTML, b.innerHTML] }"""


def test_every_algorithm_pictures_the_same_in_the_page_as_in_the_widget(tmp_path):
    "The page builds each picture from the shipped parts (trees laid out by its own script): parsed, it is the widget's HTML."
    from test_fit_browser import tree_run
    jobs = []
    for name in LOGS:
        s = Stepper(FIXTURES / f"{name}_v0.1.jsonl")
        steps = sorted({0, len(s) // 4, len(s) // 2, 3 * len(s) // 4, len(s) - 1})
        jobs.append((name, save_html(s, tmp_path / f"{name}.html"), {i: s.picture(i) for i in steps}))
    s = Stepper(tree_run(8, 5, 5))  # 901 events, 176 nodes: the layout's arithmetic on a big tree
    jobs.append(("tot 8x5x5", save_html(s, tmp_path / "big.html"), {i: s.picture(i) for i in [*range(0, len(s), 90), len(s) - 1]}))
    with chromium_page() as page:
        for name, path, pictures in jobs:
            _open(page, path)
            for i, want in pictures.items():
                diff = page.evaluate(SAME, [i, want])
                assert diff is None, f"{name} step {i}: page {diff[0][:300]!r} vs widget {diff[1][:300]!r}"


def test_the_file_grows_with_the_log_not_the_picture(tmp_path):
    "The largest tree the bounds allow (depth 8, width 5, branching 5: about 900 events, 170 nodes; 6.7 MB when every step\n    shipped its SVG) is under 1 MB."
    from test_fit_browser import tree_run
    out = tree_run(8, 5, 5)
    assert len(out.log) >= 850 and len(out.state.algo.nodes) >= 150, (len(out.log), len(out.state.algo.nodes))
    size = save_html(out, tmp_path / "tree.html").stat().st_size
    assert size < 1_000_000, f"{size:,} bytes"


def test_opens_at_the_last_step_a_fragment_picks_one_and_keys_step(tmp_path):
    s = Stepper(FIXTURES / "tot_v0.1.jsonl"); n = len(s)
    last, first = s.save_html(tmp_path / "last.html"), s.save_html(tmp_path / "first.html", start="first")
    with chromium_page() as page:
        pos = lambda: page.inner_text("#rk-position")
        _open(page, last); assert pos() == f"{n} / {n}" and "run.finished" in page.inner_text("#rk-event")
        _open(page, first); assert pos() == f"1 / {n}"
        _open(page, last, "#20"); assert pos() == f"20 / {n}"  # a shared link opens at its step
        page.keyboard.press("ArrowRight"); assert pos() == f"21 / {n}" and page.evaluate("location.hash") == "#21"
        page.keyboard.press("ArrowLeft"); page.keyboard.press("ArrowLeft"); assert pos() == f"19 / {n}"
        page.keyboard.press("End"); assert pos() == f"{n} / {n}"
        page.keyboard.press("Home"); assert pos() == f"1 / {n}"
        page.keyboard.press(" "); page.wait_for_function("() => !document.getElementById('rk-position').textContent.startsWith('1 /')")
        page.keyboard.press(" "); at = pos(); page.wait_for_timeout(900); assert pos() == at  # space plays, and space stops
        page.evaluate("location.hash = '#7'"); page.wait_for_function("() => document.getElementById('rk-position').textContent.startsWith('7 /')")
        items = page.locator("#rk-list li"); assert "7" in page.inner_text("#rk-list li.rk-on")  # the events around this one
        items.last.click(); assert pos() == f"12 / {n}" and page.inner_text("#rk-list li.rk-on").split()[1] == s.events[11].kind


ARTEFACTS = Path(os.environ.get("RK_ARTEFACTS") or ROOT / "build" / "screenshots")  # kept after the run: look at them


def _swarm_run():
    "The spec's Swarm example: triage hands off to billing, which refunds (one real tool call)."
    import asyncio
    from reasoning_kit.algos import Agent, Swarm
    from reasoning_kit.models import FakeLLMClient, LLMHandler
    from reasoning_kit.models.fake import text, tool_call
    from reasoning_kit.engine import Engine
    from reasoning_kit.effects.tools import ToolHandler, ToolRegistry, tool

    @tool
    def refund(order: str) -> str:
        "Refund an order."
        return f"refunded {order}"

    def model(request):
        offered, last = {t.name for t in request.tools}, request.messages[-1]
        if "transfer_to_billing" in offered: return tool_call("transfer_to_billing")
        if last.role == "tool" and "Transferred" in (last.content or ""): return tool_call("refund", "c2", order="A1")
        return text(f"Done: {last.content}")

    async def go():
        registry = ToolRegistry([refund])
        agents = {"triage": Agent("You route customers.", handoffs=["billing"]),
                  "billing": Agent("You handle billing.", tools=["refund"], description="Refunds and charges.")}
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(model)).attach(engine); ToolHandler(registry).attach(engine)
            return await engine.run(Swarm(agents, registry, start="triage"), {"task": "Refund order A1"})
    return asyncio.run(go())


def _failed_run():
    "A run whose algorithm raises after its one model call: status failed, with an answer-shaped result never reached."
    import asyncio
    from reasoning_kit.models import FakeLLMClient, LLMHandler, user
    from reasoning_kit.engine import Algorithm, Engine

    class Breaks(Algorithm):
        name = "export_test_breaks"
        def initial(self): return {}
        def apply(self, s, e): pass
        async def run(self, ctx):
            await ctx.llm([user("hello")], key="breaks/1")
            raise ValueError("the checker crashed")
        def result(self, s): return {"answer": "42"}

    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lambda r: "42")).attach(engine)
            return await engine.run(Breaks(), {})
    return asyncio.run(go())


def _runs():
    from test_fit_browser import tree_run
    runs = [(name, Stepper(FIXTURES / f"{name}_v0.1.jsonl")) for name in LOGS]
    return runs + [("swarm_spec", Stepper(_swarm_run())), ("tot_8x5x5", Stepper(tree_run(8, 5, 5))), ("failed", Stepper(_failed_run()))]


def test_screenshots_of_every_algorithm_at_its_first_middle_and_last_step(tmp_path):
    "Kept in build/screenshots (or $RK_ARTEFACTS); each page loads without a script error and fits 1280 wide."
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    runs = [(name, s, s.save_html(tmp_path / f"{name}.html")) for name, s in _runs()]
    errors = []
    with chromium_page() as page:
        page.on("pageerror", lambda e: errors.append(str(e)))
        for name, s, path in runs:
            for which, i in (("first", 0), ("middle", len(s) // 2), ("last", len(s) - 1)):
                _open(page, path, f"#{i + 1}")
                assert page.inner_text("#rk-position") == f"{i + 1} / {len(s)}"
                assert page.inner_text("#rk-picture").strip(), f"{name} {which}: an empty picture"
                assert page.evaluate("document.documentElement.scrollWidth") <= 1280, f"{name} {which}: wider than the window"
                page.screenshot(path=str(ARTEFACTS / f"{name}-{which}.png"))
    assert not errors, errors


def _rgb(css: str) -> tuple[int, ...]: return tuple(int(x) for x in re.findall(r"\d+", css)[:3])


def test_status_colours_say_status(tmp_path):
    "A failed run's answer is not in a green box (an ok run's is); the Debate judge's ruling is not red."
    pages = {"failed": save_html(_failed_run(), tmp_path / "failed.html"), "ok": save_html(FIXTURES / "tot_v0.1.jsonl", tmp_path / "ok.html"),
             "debate": save_html(FIXTURES / "debate_v0.1.jsonl", tmp_path / "debate.html")}
    green = lambda c: c[1] > c[0] + 8 and c[1] > c[2]
    red = lambda c: c[0] > 150 and c[1] < 100 and c[2] < 100
    with chromium_page() as page:
        _open(page, pages["failed"])
        box = _rgb(page.eval_on_selector(".rk-closing", "e => getComputedStyle(e).backgroundColor"))
        assert "failed" in page.inner_text(".rk-closing") and not green(box), box
        _open(page, pages["ok"])
        assert green(_rgb(page.eval_on_selector(".rk-closing", "e => getComputedStyle(e).backgroundColor")))
        _open(page, pages["debate"])
        ruling = page.locator("#rk-picture b", has_text="12").last
        assert "judge rules" in page.inner_text("#rk-picture")
        colour = _rgb(page.eval_on_selector("#rk-picture", "p => { const d = [...p.querySelectorAll('div')].find(d => d.textContent.startsWith('judge rules')); return getComputedStyle(d.querySelector('b')).color }"))
        assert not red(colour), colour
        for name in ("self_consistency", "tot"):  # an answer is news, not an alarm: no answer line in alarm red
            _open(page, save_html(FIXTURES / f"{name}_v0.1.jsonl", tmp_path / f"{name}.html"))
            colour = _rgb(page.eval_on_selector("#rk-picture", "p => { const d = [...p.querySelectorAll('div')].find(d => /answer: /.test(d.textContent) && d.querySelector('b')); return getComputedStyle([...d.querySelectorAll('b')].pop()).color }"))
            assert not red(colour), (name, colour)


def test_a_finished_swarm_counts_no_running_tool_calls(tmp_path):
    "Running calls are counted from the events (requests without results): at the end none; while the refund runs, one."
    s = Stepper(_swarm_run())
    during = next(i for i, e in enumerate(s.events) if e.kind == "tool.request")
    path = s.save_html(tmp_path / "swarm.html")
    with chromium_page() as page:
        _open(page, path)
        end = page.inner_text("#rk-picture")
        assert "1 tool call" in end and "running" not in end, end[:300]
        _open(page, path, f"#{during + 1}")
        assert "(1 running)" in page.inner_text("#rk-picture")


def test_a_big_tree_opens_fitted_to_its_beam_and_path_readably(tmp_path):
    "At the last step of the largest tree the beam and the winning path show at a readable size, inside a 1280x800 window;\n    fit (or −) shows the whole tree, and fit again the beam."
    from test_fit_browser import tree_run
    s = Stepper(tree_run(8, 5, 5)); final = s.state_at(len(s) - 1).algo
    path = s.save_html(tmp_path / "tree.html")
    with chromium_page() as page:
        _open(page, path)
        fit = lambda: page.eval_on_selector("#rk-picture", "p => p.dataset.fit")
        assert fit() == "beam"
        shown = page.eval_on_selector_all("#rk-picture g.node title:first-child", "ts => ts.map(t => t.textContent)")
        assert set(final.winner_path) <= set(shown) and len(shown) < len(final.nodes), (len(shown), len(final.nodes))
        boxes = page.eval_on_selector_all("#rk-picture .rkbeam text, #rk-picture .rkwin text", "ts => ts.map(t => { const b = t.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom, b.height] })")
        assert boxes and all(b[4] >= 7 for b in boxes), min(b[4] for b in boxes)  # text at least 7 px high
        beam_end = page.eval_on_selector_all("#rk-picture .rkbeam rect", "rs => rs.map(r => { const b = r.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom] })")
        assert all(0 <= b[0] and b[2] <= 1280 and 0 <= b[1] and b[3] <= 800 for b in beam_end), beam_end  # the beam in view, none cut at the bottom
        page.screenshot(path=str(tmp_path / "beam.png"))
        page.click("#rk-fit"); assert fit() == "whole"
        assert page.eval_on_selector_all("#rk-picture g.node", "gs => gs.length") == len(final.nodes)
        page.click("#rk-fit"); assert fit() == "beam"
        page.click("#rk-zoom-out"); assert fit() == "whole"
