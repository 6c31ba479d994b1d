"""The code pane: for every event of every algorithm's run, the line of the algorithm that produced it, highlighted.

Each algorithm's run is a kept fixture log (written by an earlier release: the place is derived from the source, so old
logs get it too) or, for BestOfN and MCTS, a scripted run. For each event: a domain event's highlighted line is the
`emit` of its kind, a model call's is a `ctx.llm(` (a tool call's `ctx.tool(`, a check's `ctx.validate(`), the engine's
own events point at the algorithm's `run`; and the pane shows it in the widget and in the HTML page.
"""
import re
from pathlib import Path

import pytest

from reasoning_kit.viz import Stepper
from reasoning_kit.viz.code import code_html, code_site, source_lines

FIXTURES = Path(__file__).parent / "fixtures"
LOGS = ["tot", "debate", "reflexion", "swarm", "tool_loop", "self_consistency", "generator_critic", "generate_test_repair"]


def _scripted(name):
    if name == "mcts":
        import test_mcts as m
    else:
        import test_best_of_n as m
    return m.run_task(m.make())[0]  # (outcome, client)


def stepper(name) -> Stepper:
    return Stepper(_scripted(name)) if name in ("mcts", "best_of_n") else Stepper(FIXTURES / f"{name}_v0.1.jsonl")


EFFECT = {"llm": "ctx.llm(", "tool": "ctx.tool(", "validate": "ctx.validate("}


@pytest.mark.parametrize("name", LOGS + ["mcts", "best_of_n"])
def test_every_event_points_at_the_line_that_made_it(name):
    s = stepper(name)
    assert len(s) > 5 and s.algorithm is not None
    for e in s.events:
        site = code_site(s.algorithm, e)
        assert site is not None, (name, e.kind)
        line = source_lines(site[0])[site[1]]
        family = e.kind.split(".")[0]
        if family in EFFECT: assert EFFECT[family] in line or "_ask(" in line, (name, e.kind, e.key, line)  # or the call of a helper that asks
        elif family in ("run", "budget"): assert "def run(" in line, (name, e.kind, line)
        else: assert f'emit("{e.kind}"' in line, (name, e.kind, line)
    last = len(s) - 1
    domain = next(i for i, e in enumerate(s.events) if e.kind.split(".")[0] not in (*EFFECT, "run", "budget"))
    s.widget(); s.goto(domain); s.on_key("code")  # the widget: the key shows the pane, beside the picture
    assert s.code_pane.layout.display != "none" and "rk-code-hit" in s.code_pane.value and s.events[domain].kind in s.code_pane.value
    s.on_key("code"); assert s.code_pane.layout.display == "none"
    assert "rk-code-hit" in s.code_html(last)


def test_the_page_carries_the_code_pane(tmp_path):
    from reasoning_kit.viz.export import frames
    s = stepper("tot"); d = frames(s)
    codes = {d["s"][step[5]] for step in d["steps"]}
    assert all("rk-code-hit" in c for c in codes) and any('emit("tot.selected"' in re.sub(r"<[^>]+>", "", c).replace("&quot;", '"') for c in codes)


def test_a_highlight_tells_apart_two_lines_that_emit_the_same_kind():
    s = stepper("tot")
    hows = {e.data.get("how"): code_site(s.algorithm, e) for e in s.events if e.kind == "tot.evaluated"}
    lines = {h: source_lines(m)[i] for h, (m, i) in hows.items()}
    assert all(f'how="{h}"' in l for h, l in lines.items() if h in ("parsed", "votes", "code")), lines


def test_a_value_left_empty_tells_the_lines_apart_too():
    s = stepper("tot")
    done = next(e for e in s.events if e.kind == "tot.completed")
    m, i = code_site(s.algorithm, done)
    assert done.data["winner"] is not None and "winner=None" not in source_lines(m)[i]  # the run with a winner, not the one without
