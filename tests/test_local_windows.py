"""Prompts sized from the context the server reports (issue 43), on the real default model (SmolLM2-135M-Instruct,
served by the library's llama-server): on a small context Debate and Reflexion never send a prompt that leaves no room
for a reply, on a large one they are not cut to the fixed bounds, and a replay decides the same without a server.
What is asserted is what a weak model can neither fake nor break: no request refused, prompts within the window, the
window the server reported, replay asking nothing. Never accuracy."""
import asyncio

import pytest

from reasoning_kit.algos import Debate, Reflexion
from reasoning_kit.algos.debate import PEER_CHARS
from reasoning_kit.algos.reflexion import LESSON_CHARS
from reasoning_kit.engine import Budget, Engine, Status
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.models import local

TASK = {"task": "Explain step by step how to work out 17 x 23, checking each step, then give the number."}
BUDGET = Budget(call_tokens=120)  # a reply is at most 120 tokens: several of them overflow a small context


def refuse(request): raise AssertionError("replay asked the model")


async def run_on(model, algorithm, **kw):
    async with Engine() as engine:
        LLMHandler(model).attach(engine)
        return await engine.run(algorithm, TASK, budget=BUDGET, **kw)


def results(out):
    "Every model call's (prompt tokens, completion tokens), and every error."
    done = [e.data["result"] for e in out.log if e.kind == "llm.result"]
    return [((r.get("usage") or {}).get("prompt_tokens", 0), (r.get("usage") or {}).get("completion_tokens", 0)) for r in done], \
           [e.data["error"] for e in out.log if e.kind == "llm.error"]


def within(out, sized):
    "No call refused, and every prompt left room for a reply as long as the longest seen (at most half the window)."
    calls, errors = results(out)
    assert errors == [] and calls, errors
    room = min(sized["reply_tokens"], sized["window"] // 2)
    assert max(p for p, _ in calls) + room <= sized["window"], (calls, sized)


@pytest.fixture(scope="module")
def small():
    with local.serve("smollm2", slots=3, context=1024) as s: yield s


@pytest.fixture(scope="module")
def large():
    with local.serve("smollm2", slots=3, context=4096) as s: yield s


def test_debate_on_a_small_context_stays_within_it_and_replays_offline(small):
    algorithm = Debate(agents=3, rounds=2)
    out = asyncio.run(run_on(small.model, algorithm))
    assert out.status in (Status.OK, Status.NO_SOLUTION), (out.status, out.error)
    sized = out.state.algo.sized
    assert sized is not None and sized["window"] == small.server_context == 1024 and sized["fits"], sized
    assert sized["chars"] < PEER_CHARS  # a small context is cut harder than the fixed bound
    within(out, sized)
    assert out.state.algo.dropped == {}
    again = asyncio.run(run_on(FakeLLMClient(refuse), Debate(agents=3, rounds=2), replay=out.log))
    assert again.value == out.value and again.state.algo.sized == sized and again.state.algo.trimmed == out.state.algo.trimmed


def test_reflexion_on_a_small_context_stays_within_it_and_replays_offline(small):
    out = asyncio.run(run_on(small.model, Reflexion(max_trials=3)))
    assert out.status in (Status.OK, Status.NO_SOLUTION), (out.status, out.error)
    _, errors = results(out)
    assert errors == []
    sized = out.state.algo.sized
    if out.value["trials"] > 1 or out.status == Status.NO_SOLUTION:  # a lesson was written: it was sized from the window
        assert sized is not None and sized["window"] == 1024
        within(out, sized)
    again = asyncio.run(run_on(FakeLLMClient(refuse), Reflexion(max_trials=3), replay=out.log))
    assert again.value == out.value and again.state.algo.sized == sized


def test_a_large_context_is_not_cut_to_the_fixed_bounds(large):
    out = asyncio.run(run_on(large.model, Debate(agents=3, rounds=1)))
    sized = out.state.algo.sized
    assert sized["window"] == 4096 and sized["chars"] > PEER_CHARS
    within(out, sized)
    assert all(t["kept"] == sized["chars"] for t in out.state.algo.trimmed)
    lessons = asyncio.run(run_on(large.model, Reflexion(max_trials=2)))
    if lessons.state.algo.sized is not None:
        assert lessons.state.algo.sized["chars"] > LESSON_CHARS
