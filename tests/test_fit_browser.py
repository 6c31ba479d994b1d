"""Every algorithm's picture fits a 1280x800 screen in headless Chromium: the frame is no wider than the window,
the picture's bounding box is inside the viewport, its root is visible, and no text is clipped. Checked for the
frozen logs of all eight algorithms and for two big trees of thoughts (about 50 nodes, and the largest the bounds
allow: depth 8, width 5, branching 5), and zoomed in on the current node of the largest one.

Needs Debian's chromium and graphviz (scripts/setup.sh --dev) and playwright (the dev extra); never downloads a browser."""
import asyncio
import hashlib
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from reasoning_kit.algos import TreeOfThoughts
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Engine
from reasoning_kit.viz import FIT_CSS, Frame, Stepper, frame_html

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LOGS = ["tot", "swarm", "debate", "tool_loop", "self_consistency", "reflexion", "generator_critic", "generate_test_repair"]


def _h(s: str) -> int: return int(hashlib.md5(s.encode()).hexdigest()[:8], 16)


def _wide(request):
    "A proposer that lists as many steps as asked and an evaluator that scores 0-10 by hash: a full, varied tree."
    u = next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")
    if request.role == "evaluator": return text(f"score: {_h(u) % 11}/10")
    depth, k = len(re.findall(r"\n\d+\. ", u)), int(re.search(r"List up to (\d+)", u)[1])
    return text("\n".join(f"step {depth + 1}: a longer idea about the numbers, number {(_h(u) + 7 * i) % 97}" for i in range(k)))


def tree_run(depth: int, width: int, branching: int):
    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(_wide)).attach(engine)
            return await engine.run(TreeOfThoughts(depth=depth, width=width, branching=branching, generate="propose",
                                                   min_score=3, stop_score=None), {"task": "Make 24 from 4, 9, 10, 13"})
    return asyncio.run(go())


# the checks, run in the page: sizes of the window, the frame, the picture and its root, and any clipped element
_MEASURE = """() => {
  const r = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const pic = document.querySelector('.rk-picture'), svg = pic.querySelector('svg');
  const titles = svg ? [...svg.querySelectorAll('g.node')] : [];
  const root = titles.find(g => ['n', window.RK_ROOT].includes(g.querySelector('title').textContent)) || pic.firstElementChild;
  const cur = svg && svg.querySelector('.rkcur');
  const clipped = [...pic.querySelectorAll('div,span,td,th,b,small')].filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
                    .map(e => e.textContent.slice(0, 60));
  return {doc: document.documentElement.scrollWidth, svg: svg ? r(svg) : null, root: root ? r(root) : null,
          current: cur ? r(cur) : null, clipped};
}"""


def _pages():
    "(name, frame HTML, the root node's title) for every picture checked."
    out = []
    for name in LOGS:
        s = Stepper(FIXTURES / f"{name}_v0.1.jsonl")
        root = "triage" if name == "swarm" else "n"
        for i in sorted({len(s) // 2, len(s) - 1}): out.append((f"{name}@{i}", s.frame(i).html, root))
    for dims in ((3, 5, 5), (8, 5, 5)):
        s = Stepper(tree_run(*dims))
        assert len(s.state_at(len(s) - 1).algo.nodes) >= {3: 40, 8: 150}[dims[0]]
        label = "x".join(map(str, dims))
        for i in (len(s) // 2, len(s) - 1): out.append((f"tot {label}@{i}", s.frame(i).html, "n"))
    s = Stepper(tree_run(8, 5, 5)).goto(600).centre()
    out.append(("tot 8x5x5 zoomed on the current node", Frame(frame_html(s.view_html(), s.event_html(), s.usage_html())).html, None))
    return out


def test_every_picture_fits_1280x800(tmp_path):
    from playwright.sync_api import sync_playwright
    assert Path(CHROMIUM).exists(), "apt-get install -y chromium"
    problems, pages = [], _pages()  # built before playwright starts its event loop
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        b = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=ARGS,
                                                 viewport={"width": 1280, "height": 800})
        try:
            page = b.pages[0] if b.pages else b.new_page()
            for k, (name, html, root) in enumerate(pages):
                f = tmp_path / f"{k}.html"
                f.write_text(f'<!doctype html><meta charset="utf-8"><body style="margin:8px">{html}</body>')
                page.goto(f.as_uri())
                if root: page.evaluate(f"window.RK_ROOT = {root!r}")
                m = page.evaluate(_MEASURE)
                page.screenshot(path=str(tmp_path / f"{k}.png"))
                inside = lambda box: box[0] >= -1 and box[1] >= -1 and box[2] <= 1281 and box[3] <= 801
                if m["doc"] > 1280: problems.append(f"{name}: the page is {m['doc']} px wide")
                if m["svg"] and not inside(m["svg"]): problems.append(f"{name}: the picture's box {m['svg']} leaves the window")
                if root and (m["root"] is None or not inside(m["root"])): problems.append(f"{name}: the root is out of view ({m['root']})")
                if root is None and (m["current"] is None or not inside(m["current"])):
                    problems.append(f"{name}: the current node is out of view ({m['current']})")
                if m["clipped"]: problems.append(f"{name}: clipped text {m['clipped'][:3]}")
        finally:
            b.close()
    assert not problems, "\n".join(problems)
