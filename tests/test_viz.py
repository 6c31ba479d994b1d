"""The stepper and the pictures, beyond the notebooks' inline tests: every frozen log steps and draws,
`dot` missing degrades to plain HTML, a 10,000-event log steps without refolding, live runs are
followed, and `import reasoning_kit` stays light."""
import re
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasoning_kit.core.events import Event, Log
from reasoning_kit.models import FakeLLMClient, LLMHandler, system, user
from reasoning_kit.engine import Algorithm, Budget, Engine, fold_run
from reasoning_kit.viz import Compare, Graph, StepReducer, Stepper, view, view_for, views

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
VIEWS = {"tool_loop": "toolloop", "reflexion": "reflexion", "debate": "debate", "swarm": "swarm",
         "tree_of_thoughts": "tot", "self_consistency": "self_consistency", "generator_critic": "generator_critic",
         "generate_test_repair": "generate_test_repair"}


def _logs() -> list[Path]:
    "The frozen run logs among the fixtures (other fixtures, like memory stores, are not run logs)."
    return [p for p in sorted(FIXTURES.glob("*_v*.jsonl")) if '"reasoning_kit.log"' in p.open().readline()]


def _py(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, **(env or {})})


def test_import_stays_light():
    r = _py("import sys, reasoning_kit, reasoning_kit.engine, reasoning_kit.algos\n"
            "print([m for m in ('ipywidgets', 'graphviz', 'reasoning_kit.viz') if m in sys.modules])")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout


def test_views_are_found_by_name_in_a_fresh_process():
    "The stepper imports an algorithm's viz module the first time it meets the algorithm's name."
    r = _py("import reasoning_kit.algos\nfrom reasoning_kit.viz import view_for, views\n"
            f"names = {list(VIEWS)!r}\nassert not set(names) & set(views), views\n"
            "print({n: view_for(n).draw.__module__ for n in names})")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.replace("'", '"')) == {n: f"reasoning_kit.viz.{m}" for n, m in VIEWS.items()}


@pytest.mark.parametrize("path", _logs(), ids=lambda p: p.stem)
def test_every_frozen_log_steps_and_draws(path):
    "Each algorithm's frozen log: every event has a picture and readable text, and the state is the fold of the prefix."
    log = Log.read(path)
    s = Stepper(path)
    assert len(s) == len(log) and s.problem is None
    name = log[0].data["algorithm"]
    if name in VIEWS: assert s.view.draw.__module__ == f"reasoning_kit.viz.{VIEWS[name]}"
    for i in range(len(s)):
        pic, ev = s.picture(i), s.event_html(i)
        assert "view failed" not in pic, pic
        assert log[i].kind in ev
    for i in sorted({0, 1, len(log) // 3, len(log) // 2, len(log) - 1}):
        assert s.state_at(i) == fold_run(log[:i + 1])
    final = s.frame(len(s) - 1).html
    assert "event %d of %d" % (len(log), len(log)) in final


def test_frames_without_dot_fall_back_to_plain_html():
    "With no `dot` on the PATH, every view still renders: the notice and a plain rendering, never an error."
    code = ("from reasoning_kit.viz import Stepper, dot_available\nassert not dot_available()\n"
            f"for p in {[str(p) for p in _logs()]!r}:\n"
            "    s = Stepper(p); h = s.frame(len(s) - 1).html\n"
            "    assert ('<svg' not in h or 'tot_' in p) and 'view failed' not in h, p  # a tree is laid out without dot\n"
            "    print(p.split('/')[-1], 'apt-get install graphviz' in h)\n")
    bindir = Path(sys.executable).parent  # keep python itself, drop /usr/bin where dot lives
    r = _py(code, {"PATH": str(bindir)})
    assert r.returncode == 0, r.stderr
    lines = dict(l.split() for l in r.stdout.strip().splitlines())
    assert lines["tot_v0.1.jsonl"] == "False" and lines["swarm_v0.1.jsonl"] == "True", lines  # swarm's graph says why; the tree needs no dot


# --- a tiny algorithm for the mechanics -------------------------------------------------------------

class Tally(Algorithm):
    name = "viz_test_tally"
    def __init__(self, steps: int = 3): self.steps = steps
    def initial(self): return {"said": []}
    def apply(self, s, e):
        if e.kind == "tally.said": s["said"].append(e.data["text"])
    async def run(self, ctx):
        for i in range(self.steps):
            r = await ctx.llm([system("Count."), user(f"say {i}")], key=f"tally/{i}")
            ctx.emit("tally.said", i=i, text=r.text)
    def result(self, s): return {"n": len(s["said"])}


@view("viz_test_tally", jumps={"said": "tally.said"}, step="tally.said")
def _tally_view(state, event):
    g = Graph()
    for i, t in enumerate(state.algo["said"][-5:]): g.node(str(i), t)
    return g


async def _run(steps, model=lambda r: "ok " + r.messages[-1].content, **kw):
    async with Engine() as engine:
        LLMHandler(FakeLLMClient(model)).attach(engine)
        return await engine.run(Tally(steps), {}, **kw)


def test_ten_thousand_events_step_without_refolding():
    out = asyncio.run(_run(3333))
    n = len(out.log)
    assert n >= 10_000
    applied = []

    class Counting(StepReducer):
        def apply(self, s, e): applied.append(e.seq); super().apply(s, e)

    s = Stepper(out)
    s.reducer = s.timeline.reducer = Counting(s.algorithm)
    s.goto(n - 2); s.state; applied.clear()
    # a step never folds more than one checkpoint interval of events, however far from the start it is
    # (the work is counted, not timed: time per step is measured by benchmarks/stepper.py)
    for move in [s.next, s.prev, s.prev] + [lambda k=k: s.goto(k) for k in range(0, n, 97)]:
        applied.clear(); move(); s.picture(); s.event_html(); s.usage_html()
        assert len(applied) <= s.timeline.every, (s.pos, len(applied))
    per_move = []
    for move in [s.next] * 200:
        applied.clear(); move(); s.state; per_move.append(len(applied))
    assert max(per_move) <= 1  # forwards: one event applied a step


def test_unknown_algorithm_still_steps():
    out = asyncio.run(_run(2))
    events = [Event(kind=e.kind, key=e.key, seq=e.seq, at=e.at, data={**e.data, "algorithm": "nobody_knows"})
              if e.kind == "run.started" else e for e in out.log]
    s = Stepper(Log(events))
    assert s.algorithm is None and "nobody_knows" in s.problem
    html = s.frame(len(s) - 1).html
    assert "nobody_knows" in html and "run.finished" in html and "model calls 2" in html


def test_live_run_is_followed_and_redrawn():
    async def main():
        async def slow(r):
            await asyncio.sleep(0.03); return "ok"
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(slow)).attach(engine)
            run = engine.start(Tally(5), {})
            s = Stepper(run); s.widget()
            sizes = []
            while run.state.status is None:
                await asyncio.sleep(0.01); sizes.append((len(s), s.pos))
            await run; await asyncio.sleep(0.1)
            return run, s, sizes
    run, s, sizes = asyncio.run(main())
    assert len({n for n, _ in sizes}) >= 3 and all(p == n - 1 for n, p in sizes if n)
    assert s.pos == len(run.log) - 1 and s.slider.max == len(run.log) - 1 and "run.finished" in s.event_pane.value
    assert not s._live() and "live" not in s.position.value


def test_follow_false_stays_put():
    async def main():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lambda r: "ok")).attach(engine)
            run = engine.start(Tally(3), {})
            s = Stepper(run, follow=False)
            await run
            return run, s
    run, s = asyncio.run(main())
    assert s.pos == 0 and len(s) == len(run.log)


def test_display_keeps_a_still_and_a_caption_never_a_widget_repr(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    InteractiveShell.instance()  # a shell (not a kernel) for display() to display through
    out = asyncio.run(_run(3, budget=Budget(calls=9)))
    s = Stepper(out).goto(5)
    bundle = s._repr_mimebundle_()  # what a notebook keeps: the still and its caption
    assert sorted(bundle) == ["image/svg+xml", "text/plain"] and "<foreignObject" in bundle["image/svg+xml"]
    assert "model calls 2 / 9" in bundle["image/svg+xml"]
    assert bundle["text/plain"] == "Stepper: viz_test_tally, event 6 of 11 - run the notebook to step through it"
    with capture_output() as cap: s._ipython_display_()
    assert [sorted(o.data) for o in cap.outputs] == [["image/svg+xml", "text/plain"]]  # outside a kernel: no widget
    import reasoning_kit.viz.stepper as st, reasoning_kit.viz.still as still_module
    monkeypatch.setattr(still_module, "in_kernel", lambda: True)  # in a kernel: the widget after the still, its text the caption
    with capture_output() as cap: s._ipython_display_()
    still, widget = [o.data for o in cap.outputs]
    assert "image/svg+xml" in still and "application/vnd.jupyter.widget-view+json" in widget and "text/html" not in widget
    assert widget["text/plain"] == still["text/plain"] and "VBox" not in widget["text/plain"]
    assert st.HIDE_STILL in s.usage_pane.value and 'img[src*="rk-still"]' in st.HIDE_STILL  # hides only the still above it


def test_widget_buttons_slider_and_jumps():
    out = asyncio.run(_run(4))
    s = Stepper(out, start="first"); s.widget()
    s.next_button.click(); s.next_button.click()
    assert (s.pos, s.slider.value) == (2, 2) and "llm.result" in s.event_pane.value and "ok say 0" in s.event_pane.value
    s.slider.value = 7
    assert s.pos == 7 and s.event.kind == "llm.request" and "say 2" in s.event_pane.value
    s.jump_kind.value = "said"; s.jump_next.click()
    assert s.event.kind == "tally.said" and s.event.data["i"] == 2 and "ok say 2" in s.picture_pane.value
    s.jump_back.click(); assert s.event.data["i"] == 1
    s.prev_button.click(); assert s.pos == s.slider.value and s.event.kind == "llm.result"
    here = s.pos; s.play.value = 0; assert s.pos == here  # play's stop button (value back to the start, not playing) keeps the place
    s.slider.value = 0; assert s.pos == 0 and s.play.value == 0 and "run.started" in s.event_pane.value


def test_compare_aligns_by_step():
    a, b = asyncio.run(_run(2)), asyncio.run(_run(4))
    c = Compare(a, b)
    assert c.steps == 5
    assert [s.events[i].data["i"] for s, i in zip(c.sides, c.position(1))] == [1, 1]
    assert c.position(3)[0] == len(a.log) - 1  # the shorter run shows its end
    assert "step <b>3</b>" in c.html(3)


from hypothesis import given, settings, strategies as st


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=8))
def test_any_order_of_moves_shows_the_state_a_fresh_fold_gives(moves):
    # wherever the stepper goes and in whatever order, the state it shows is the one folding the prefix gives
    path = FIXTURES / "tot_v0.1.jsonl"
    s = Stepper(path, every=7)  # small checkpoint interval: moves cross checkpoints both ways
    fresh = Stepper(path, every=100_000)  # no checkpoints: its timeline folds every prefix from the start
    for m in moves:
        s.goto(m % len(s))
        want = fresh.timeline.state_at(s.pos + 1)
        assert s.pos == m % len(s)
        assert (s.state.algo, s.state.calls, s.state.tokens) == (want.algo, want.calls, want.tokens)


def test_bad_files_say_what_is_wrong_in_one_line(tmp_path):
    from reasoning_kit.core.events import LogFormatError
    whole = (FIXTURES / "debate_v0.1.jsonl").read_text()
    cut = tmp_path / "cut.jsonl"; cut.write_text(whole[:-25])
    with pytest.warns(UserWarning, match="the run did not finish"): s = Stepper(cut)
    assert len(s) == len(Log.from_jsonl(whole)) - 1  # the whole events are kept
    assert "the run did not finish" in s.problem and "the run did not finish" in s.frame().html
    unfinished = tmp_path / "unfinished.jsonl"; unfinished.write_text("".join(whole.splitlines(True)[:-1]))
    with pytest.warns(UserWarning, match="no run.finished"): assert "the run did not finish" in Stepper(unfinished).problem
    assert Stepper(FIXTURES / "debate_v0.1.jsonl").problem is None
    for name, data in [("bin.jsonl", b"\x00\x89PNG\xff\xfe\x00"), ("latin.jsonl", whole.encode()[:200] + "é".encode("latin-1"))]:
        p = tmp_path / name; p.write_bytes(data)
        with pytest.raises(LogFormatError) as e: Stepper(p)
        assert str(p) in str(e.value) and "\n" not in str(e.value)
    corrupt = tmp_path / "corrupt.jsonl"; corrupt.write_text(whole.replace("\n", "\n{oops\n", 1))
    with pytest.raises(LogFormatError) as e: Stepper(corrupt)
    assert str(corrupt) in str(e.value) and "\n" not in str(e.value)


@settings(max_examples=10, deadline=None)
@given(st.integers(min_value=2, max_value=14))
def test_compare_jumps_to_where_a_fork_parts(k):
    "A run forked at event k with another model: the compare view's departure is the first step that reaches diff.at."
    base = asyncio.run(_run(5))
    async def fork():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lambda r: "other " + r.messages[-1].content)).attach(engine)
            return await engine.fork(base, at=k)
    c = Compare(base, asyncio.run(fork())).to_departure()
    assert c.diff.at is not None and c.diff.at >= k
    assert c.step == c.departure and any(i >= c.diff.at for i in c.position(c.step))
    assert c.step == 0 or all(i < c.diff.at for i in c.position(c.step - 1))
    assert "they part at event" in c.html()


def test_running_tool_calls_are_counted_from_pending_events():
    "A tool call runs from its request to its result: the picture says so exactly then, whatever the algorithm's own records."
    import re
    from test_export_browser import _swarm_run
    s = Stepper(_swarm_run())
    req = next(i for i, e in enumerate(s.events) if e.kind == "tool.request")
    res = next(i for i, e in enumerate(s.events) if e.kind in ("tool.result", "tool.error"))
    running = [i for i in range(len(s)) if "running)" in s.picture(i)]
    assert running == list(range(req, res)), (running, req, res)
    assert re.search(r"1 tool call\b", s.picture(len(s) - 1)) and "running" not in s.picture(len(s) - 1)


def test_a_stepper_follows_a_log_only_while_something_writes_it():
    "Whether a log is being written is asked through Log.listened, not by reaching into the log's private listeners."
    log = Log(); log.append("run.started", {"algorithm": "demo"})
    assert not log.listened and Stepper(log)._live() is False
    stop = log.subscribe(lambda e: None)
    s = Stepper(log); assert log.listened and s._live()
    log.append("run.finished", {"status": "ok"}); assert not s._live()  # it stops at the end of the run
    stop(); assert not log.listened
    src = "\n".join(p.read_text() for p in (ROOT / "reasoning_kit" / "viz").glob("*.py"))
    assert "log._listeners" not in src


def test_the_closing_line_is_green_only_for_an_ok_run():
    from test_export_browser import _failed_run
    bad = Stepper(_failed_run()); ok = Stepper(FIXTURES / "tot_v0.1.jsonl")
    assert "rk-bad" in bad.closing_html(len(bad) - 1) and "#f0fdf4" not in bad.closing_html(len(bad) - 1)
    assert "rk-ok" in ok.closing_html(len(ok) - 1)


def test_a_partial_run_closes_amber_not_green_or_red():
    "A run that answered without a call that failed for good: its status is amber in the closing line and the usage line."
    import asyncio
    from reasoning_kit.algos import SelfConsistency
    from reasoning_kit.engine import Engine, Status
    from reasoning_kit.models import FakeLLMClient, LLMHandler
    def model(request, key):
        if key.endswith("/2"): raise ConnectionError("the server went away")
        return "The answer is 4."
    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(model)).attach(engine)
            return await engine.run(SelfConsistency(samples=3, mode="separate"), {"task": "2 + 2?"})
    out = asyncio.run(go())
    assert out.status == Status.PARTIAL, (out.status, out.error)
    from reasoning_kit.viz import usage_html
    s = Stepper(out); closing = s.closing_html(len(s) - 1)
    assert "rk-partial" in closing and "#fffbeb" in closing and "#b45309" in closing
    assert "#f0fdf4" not in closing and "#fef2f2" not in closing
    assert '<b style="color:#b45309">partial</b>' in usage_html(out.state)


def test_tree_scores_show_on_the_0_10_scale():
    from reasoning_kit.algos.tot import ThoughtNode
    from reasoning_kit.viz.tot import node_label, score_text
    assert node_label(ThoughtNode(id="n.1", text="x", score=0.0005, status="kept")).startswith("n.1 · <0.01\n")
    assert [score_text(x) for x in (10.0, 6.5, 1 / 3)] == ["10", "6.5", "0.33"]


def test_the_root_reads_as_the_task_in_the_prose():
    s = Stepper(FIXTURES / "tot_v0.1.jsonl")
    said = [s.say_html(i) for i in range(len(s))]
    assert any("level 1: expanding the task" in x for x in said) and any("proposed under the task:" in x for x in said)
    assert not any(re.search(r"expanding n(?![.\w])|under n:", x) for x in said)
