"""Fork at any event k: every call answered before k is served, the new settings apply from there,
and the new log records its parent."""
import asyncio

from hypothesis import given, settings, strategies as st

from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, Engine, Status

from test_engine import Levels, answer

_client = FakeLLMClient(answer)


async def _go(fn):
    async with Engine() as engine:
        LLMHandler(_client).attach(engine)
        return await fn(engine)

PARENT = asyncio.run(_go(lambda e: e.run(Levels(), {})))


@settings(max_examples=40, deadline=None)
@given(at=st.integers(0, len(PARENT.log)))
def test_fork_at_any_k_reuses_every_call_before_k(at):
    client = FakeLLMClient(answer)

    async def go():
        async with Engine() as engine:
            LLMHandler(client).attach(engine)
            return await engine.fork(PARENT, at=at)
    child = asyncio.run(go())
    before = {e.key for e in PARENT.log[:at] if e.kind == "llm.result"}
    assert sorted(child.served_keys) == sorted(before)
    assert client.calls == 18 - len(before) and set(child.asked_keys).isdisjoint(before)
    assert child.value == PARENT.value
    started = next(e for e in child.log if e.kind == "run.started")
    assert started.data["parent"] == {"path": None, "at": at, "events": len(PARENT.log), "algorithm": "test_levels"}


def test_fork_with_a_new_model_changes_only_what_comes_after_k(tmp_path):
    path = PARENT.log.write(tmp_path / "parent.jsonl")
    first_level_done = next(e.seq for e in PARENT.log if e.kind == "levels.done") + 1
    other = FakeLLMClient(lambda r: text("other"))

    async def go():
        async with Engine() as engine:
            LLMHandler(other).attach(engine)
            return await engine.fork(path, at=first_level_done, budget=Budget(calls=9))
    child = asyncio.run(go())
    assert child.value["levels"][0] == PARENT.value["levels"][0] and child.value["levels"][1] != PARENT.value["levels"][1]
    assert other.calls == 3 and child.status == Status.BUDGET_EXHAUSTED  # the new budget (logical calls, served ones too) applies after k
    assert next(e for e in child.log if e.kind == "run.started").data["parent"]["path"] == str(path)


def test_fork_names_a_bad_k():
    async def go(engine):
        try: await engine.fork(PARENT, at=10_000)
        except ValueError as e: return str(e)
    assert "at must be an event index from 0 to" in asyncio.run(_go(go))


def test_diff_is_reached_from_the_package_root_without_importing_it_early():
    import subprocess, sys
    code = ("import sys, reasoning_kit; early = 'reasoning_kit.engine.timetravel' in sys.modules; "
            "from reasoning_kit.engine.timetravel import diff; print(early, reasoning_kit.diff is diff)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]


# diff in the algorithms' own terms: Debate, Swarm, Reflexion say what changed (RunDiff.story)
from reasoning_kit.algos import Agent, Debate, Reflexion, Swarm
from reasoning_kit.models.fake import tool_call
from reasoning_kit.engine.timetravel import diff
from reasoning_kit.effects.validate import ValidationHandler


def _debater(req):  # agent 1 answers 10 first, then follows the others
    if req.role == "judge": return "Answer: 12"
    return "Answer: 10" if "agent 1." in req.messages[0].content and len(req.messages) == 2 else "Answer: 12"


def _firm(req):  # agent 1 never changes its mind
    if req.role == "judge": return "Answer: 12"
    return "Answer: 10" if "agent 1." in req.messages[0].content else "Answer: 12"


async def _run(alg, inp, fn, checks=None, fork=None, at=None):
    async with Engine() as engine:
        LLMHandler(FakeLLMClient(fn)).attach(engine)
        if checks: ValidationHandler(checks).attach(engine)
        return await (engine.fork(fork, at=at) if fork is not None else engine.run(alg, inp))

DEBATE = asyncio.run(_run(Debate(agents=3, rounds=1), {"task": "6 x 2?"}, _debater))
CHANGED = next(e.seq for e in DEBATE.log if e.kind == "llm.result" and e.key == "debate/r1/a0")


@settings(max_examples=30, deadline=None)
@given(at=st.integers(0, len(DEBATE.log)))
def test_diff_of_a_forked_debate_names_the_agent_whose_answer_changed(at):
    child = asyncio.run(_run(None, None, _firm, fork=DEBATE, at=at))
    d = diff(DEBATE, child)
    if at > CHANGED:  # agent 1's revision was served from the parent: nothing can differ
        assert d.same and d.story == [] and child.value == DEBATE.value
    else:
        assert d.at == CHANGED and (d.first[0].kind, d.first[0].key) == ("llm.result", "debate/r1/a0")
        assert d.story == ["round 1, agent 1: '12' -> '10'"]
        assert d.result["answers"] == (DEBATE.value["answers"], [["10", "12", "12"], ["10", "12", "12"]])
        assert "debate.answered" in d.decisions and "round 1, agent 1" in str(d)


def test_diff_of_two_swarms_names_the_hand_off():
    desk = {"triage": Agent("You route.", handoffs=["billing", "sales"]), "billing": Agent("Billing."), "sales": Agent("Sales.")}
    def to(agent):
        return lambda req: tool_call(f"transfer_to_{agent}") if any(t.name == f"transfer_to_{agent}" for t in req.tools) else f"{agent} here."
    a = asyncio.run(_run(Swarm(desk), {"task": "Refund"}, to("billing")))
    b = asyncio.run(_run(None, None, to("sales"), fork=a, at=next(e.seq for e in a.log if e.kind == "llm.request")))
    d = diff(a, b)
    assert d.story == ["hand-off 1: triage -> billing | triage -> sales", "last agent: billing -> sales",
                       "text: 'billing here.' -> 'sales here.'"]
    assert (d.first[0].kind, d.first[0].key) == ("llm.result", "loop/1/llm")
    assert d.result["handoffs"] == ([["triage", "billing"]], [["triage", "sales"]])


def test_diff_of_two_reflexion_runs_names_the_lesson_and_the_trials():
    def learner(req):
        s = req.messages[0].content
        if "reviewing a failed attempt" in s: return "State the unit."
        return "42 km" if "State the unit" in s else "42"
    def vague(req): return "Try harder." if "reviewing a failed attempt" in req.messages[0].content else learner(req)
    checks = {"has_unit": lambda a, ctx: ("km" in a, "no unit")}
    a = asyncio.run(_run(Reflexion(validator="has_unit"), {"task": "How far?"}, learner, checks))
    k = next(e.seq for e in a.log if e.kind == "llm.request" and e.data["request"].get("role") == "reflector")
    b = asyncio.run(_run(None, None, vague, checks, fork=a, at=k))
    d = diff(a, b)
    assert d.story == ["lesson after trial 1: 'State the unit.' -> 'Try harder.'", "trial 2: '42 km' (pass) -> '42' (fail)",
                       "lesson after trial 2: None -> 'Try harder.'", "trial 3: (none) -> '42' (fail)",
                       "lesson after trial 3: None -> 'Try harder.'", "passed: True -> False"]
    assert sorted(b.served_keys) == sorted(e.key for e in a.log[:k] if e.kind.endswith(".result"))  # the model calls and the check
    assert d.totals["calls"] == (a.calls, b.calls) and b.calls > a.calls


def test_a_changed_setting_is_named_with_both_values_and_no_line_prints_two_equal_values():
    "Issue 32: not 'the runs part at event 0: run.started | run.started', and no 'calls: 7 -> 7'."
    more = asyncio.run(_run(Debate(agents=3, rounds=2), {"task": "6 x 2?"}, _debater))
    d = diff(DEBATE, more)
    assert d.at == 0 and d.settings == {"config.rounds": (1, 2)}
    text = str(d)
    assert text.splitlines()[0] == "the runs were started with different settings: config.rounds 1 -> 2", text
    assert "run.started | run.started" not in text and "[{" not in text
    for line in text.splitlines()[1:]:
        if line.strip().startswith(("calls:", "tokens:", "cost:")):
            a, b = line.split(":", 1)[1].split(" -> ")
            assert a.strip() != b.strip(), line
    other = asyncio.run(_run(Debate(agents=3, rounds=1), {"task": "7 x 2?"}, _debater))
    assert str(diff(DEBATE, other)).startswith("the runs were started with different settings: input.task '6 x 2?' -> '7 x 2?'")


def test_the_diff_numbers_agents_as_the_stepper_does():
    "Payloads hold agent indices from 0; the diff, like the stepper's 'Agent 1', counts from 1."
    child = asyncio.run(_run(None, None, _firm, fork=DEBATE, at=CHANGED))
    line = next(l for l in str(diff(DEBATE, child)).splitlines() if "debate.answered" in l)
    assert "(Agent 1, round 1): answer '12' -> '10'" in line, line
