"""Token and cost budgets hold exactly under parallel calls: random budgets and completion orders across
SelfConsistency, Debate and TreeOfThoughts; refusals end the run with the budget status; a budget too
small for any call is refused at start; replay, resume and fork of a budgeted run ask no answered call again."""
import asyncio
import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.algos.debate import Debate
from reasoning_kit.algos.self_consistency import SelfConsistency
from reasoning_kit.algos.tot import TreeOfThoughts
from reasoning_kit.models.providers import Price, cost_of
from reasoning_kit.core.events import Log
from reasoning_kit.models import FakeLLMClient, LLMHandler, Usage
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, Engine, Status

from _support import run, system_of, user_of

PRICE = Price(input=2.0, output=8.0)  # dollars per million tokens, for the scripted model "fake"
SOME = settings(max_examples=40, deadline=None)


def words(request) -> int:
    "Prompt tokens as the scripted model counts them: words."
    return sum(len((m.content or "").split()) for m in request.messages)


def sc_model(request):
    return f"Let me think about {request.seed} carefully, step by step.\nAnswer: {(request.seed or 0) % 3 + 11}"


def debate_model(request):
    if "judge" in system_of(request).lower(): return "Having read every argument, the answer is clear.\nAnswer: 12"
    return f"I have considered the question closely and I conclude as follows.\nAnswer: {10 + len(user_of(request)) % 3}"


def tot_model(request):
    u = user_of(request)
    if request.role == "evaluator": return json.dumps({"score": sum(map(ord, u)) % 9})
    steps = len(re.findall(r"\n\d+\. ", u))
    return f"FINAL: {sum(map(ord, u)) % 50}" if steps >= 2 else f"try step {sum(map(ord, u)) % 7} next"


ALGOS = {
    "sc_separate": (lambda: SelfConsistency(samples=9, mode="separate"), sc_model),
    "sc_n": (lambda: SelfConsistency(samples=9), sc_model),
    "debate": (lambda: Debate(agents=3, rounds=2), debate_model),
    "tot": (lambda: TreeOfThoughts(depth=3, width=2, branching=3, stop_score=None), tot_model),
}
TASK = {"task": "6 x 2?"}


def honest(fn, delays=()) -> FakeLLMClient:
    """A scripted model that keeps to each request's max_tokens, as real models do, and reports its usage and
    its cost at PRICE; the i-th call first yields to the loop `delays[i]` times (the completion order)."""
    count = iter(range(10**9))

    async def model(request):
        i = next(count)
        for _ in range(delays[i % len(delays)] if delays else 0): await asyncio.sleep(0)
        out = fn(request).split(" ")
        if request.max_tokens is not None: out = out[:request.max_tokens]
        u = Usage(prompt_tokens=words(request), completion_tokens=len(out))
        return text(" ".join(out), usage=u.model_copy(update={"cost": cost_of(u, PRICE)}))

    client = FakeLLMClient(model)
    client.prices = {"fake": PRICE}  # what the engine's cost reservation reads (a real client's `prices`)
    return client


async def _go(algorithm, client, budget, **kw):
    async with Engine() as engine:
        LLMHandler(client).attach(engine)
        return await engine.run(algorithm, TASK, budget=budget, **kw)


def budgeted(name, budget, delays=(), **kw):
    make, fn = ALGOS[name]
    client = honest(fn, delays)
    return run(_go(make(), client, budget, **kw)), client


def assert_within(out, budget):
    "Tokens and dollars spent are within the budget; a refused call ends the run with the budget status."
    s = out.state
    if budget.tokens is not None: assert s.tokens <= budget.tokens, (s.tokens, budget)
    if budget.cost is not None: assert s.cost_nanos <= round(budget.cost * 1e9), (s.cost, budget)
    refused = [e for e in out.log if e.kind == "budget.exhausted"]
    if refused: assert out.status == Status.BUDGET_EXHAUSTED and s.exhausted == refused[0].data["reason"]
    else: assert out.status in (Status.OK, Status.NO_SOLUTION)
    assert s.pending == {}  # every call asked was answered (or refused before it was asked)


budgets = st.builds(Budget, tokens=st.one_of(st.none(), st.integers(0, 2500)),
                    cost=st.one_of(st.none(), st.integers(0, 6000).map(lambda n: n / 1e6)))
delays = st.lists(st.integers(0, 5), min_size=1, max_size=30)


@SOME
@given(name=st.sampled_from(sorted(ALGOS)), budget=budgets, order=delays)
def test_tokens_and_cost_never_pass_the_budget(name, budget, order):
    try: budget.check_admits_a_call()
    except ValueError as e:
        assert "cannot admit even one model call" in str(e)
        with pytest.raises(ValueError, match="cannot admit even one model call"): budgeted(name, budget, order)
        return
    out, client = budgeted(name, budget, order)
    assert_within(out, budget)
    assert client.calls == out.calls


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(ALGOS)), tokens=st.integers(40, 2500), a=delays, b=delays)
def test_a_budgeted_run_does_not_depend_on_the_completion_order(name, tokens, a, b):
    "Admission reads reservations, not which reply came first: any completion order refuses the same calls."
    first, _ = budgeted(name, Budget(tokens=tokens), a)
    second, _ = budgeted(name, Budget(tokens=tokens), b)
    assert (first.status, first.value, first.usage) == (second.status, second.value, second.usage)
    refused = lambda o: sorted(e.key for e in o.log if e.kind == "budget.exhausted")
    assert refused(first) == refused(second)


def test_the_issues_two_overruns():
    "SelfConsistency(samples=9) with Budget(tokens=1) spent 184 tokens and ended ok; Debate with 194 tokens used 552."
    with pytest.raises(ValueError, match=r"Budget\(tokens=1\) cannot admit even one model call: the smallest reserves 8 tokens"):
        budgeted("sc_separate", Budget(tokens=1))
    out, _ = budgeted("debate", Budget(tokens=194))
    assert out.status == Status.BUDGET_EXHAUSTED and out.state.exhausted == "tokens" and 0 < out.state.tokens <= 194
    assert out.value["answer"] is not None or out.calls < 3  # the best state so far is kept
    full, _ = budgeted("debate", None)
    assert full.state.tokens > 194  # the budget really cut it


def test_nine_samples_under_a_tight_budget_are_cut_not_overrun():
    "Calls that do not fit beside the calls in flight wait for them to settle, then take what is left; none overruns."
    out, client = budgeted("sc_separate", Budget(tokens=150))
    assert out.status == Status.BUDGET_EXHAUSTED and out.state.tokens <= 150
    requests = [e for e in out.log if e.kind == "llm.request"]
    assert 150 // requests[0].data["reserved"]["tokens"] < len(requests) < 9  # more than fit side by side at first
    assert all(8 <= r.max_tokens <= 37 for r in client.requests)  # a quarter of 150 sent as the cap, or what was left
    assert sum(1 for v in out.value["samples"] if v is not None) == client.calls


def test_cost_reservation_uses_the_price_table():
    out, client = budgeted("sc_separate", Budget(cost=0.002))
    assert out.status == Status.BUDGET_EXHAUSTED and out.state.exhausted == "cost" and out.state.cost <= 0.002
    costs = [e.data["reserved"]["cost"] for e in out.log if e.kind == "llm.request"]
    assert len(costs) == client.calls and sum(costs) <= 0.002
    spent = {e.key: e.data["result"]["usage"]["cost"] for e in out.log if e.kind == "llm.result"}
    held = {e.key: e.data["reserved"]["cost"] for e in out.log if e.kind == "llm.request"}
    assert all(0 < spent[k] <= held[k] for k in spent)  # each reply cost no more than its call reserved


def test_an_unpriced_model_is_admitted_only_while_under_the_cost():
    "Without a price the worst case is unknown: calls are admitted while spent + reserved < limit (not exact)."
    client = FakeLLMClient(lambda r: text("x", usage=Usage(prompt_tokens=1, completion_tokens=1, cost=0.01)))
    out = run(_go(SelfConsistency(samples=3, mode="separate"), client, Budget(cost=0.015)))
    assert out.status == Status.OK and client.calls == 3  # one batch, admitted before any cost was known
    assert all("cost" not in e.data["reserved"] for e in out.log if e.kind == "llm.request")


def test_calls_and_seconds_budgets_still_work():
    out, client = budgeted("sc_separate", Budget(calls=4))
    assert (out.status, out.state.exhausted, client.calls) == (Status.BUDGET_EXHAUSTED, "calls", 4)
    out, _ = budgeted("debate", Budget(seconds=60, tokens=5000))
    assert out.status == Status.OK


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(ALGOS)), tokens=st.integers(60, 2000), data=st.data())
def test_replay_resume_and_fork_of_a_budgeted_run(tmp_path_factory, name, tokens, data):
    budget = Budget(tokens=tokens)
    path = tmp_path_factory.mktemp("budget") / "run.jsonl"
    first, _ = budgeted(name, budget, log=path)
    answered = {e.key for e in first.log if e.kind == "llm.result"}
    again, client = budgeted(name, budget, replay=first.log)  # replay: every answer served, none asked
    assert (again.status, again.value, client.calls) == (first.status, first.value, 0)
    resumed, client = budgeted(name, budget, log=path, resume=True)  # resume in place: the same
    assert (resumed.status, resumed.value, client.calls, resumed.asked_keys) == (first.status, first.value, 0, [])
    at = data.draw(st.integers(0, len(first.log)), label="at")
    before = {e.key for e in first.log[:at] if e.kind == "llm.result"}
    make, fn = ALGOS[name]
    client = honest(fn)

    async def fork():
        async with Engine() as engine:
            LLMHandler(client).attach(engine)
            return await engine.fork(first, at=at)
    forked = run(fork())
    assert before <= set(forked.served_keys) and not before & set(forked.asked_keys)  # no answered call asked again
    assert (forked.status, forked.value) == (first.status, first.value) and set(forked.asked_keys) <= answered
    assert_within(forked, budget)


@settings(max_examples=30, deadline=None)
@given(budget=st.integers(60, 900), length=st.integers(1, 400), mode=st.sampled_from(["separate", "n"]))
def test_a_plain_scripted_model_that_talks_too_much_is_held_to_the_budget_too(budget, length, mode):
    "FakeLLMClient stops at max_tokens as a real model does, so replies of any length cannot break a token budget."
    long = FakeLLMClient(lambda r: " ".join(["word"] * length) + "\nAnswer: 12")

    async def go():
        async with Engine() as engine:
            LLMHandler(long).attach(engine)
            return await engine.run(SelfConsistency(samples=9, mode=mode), TASK, budget=Budget(tokens=budget))
    try: out = run(go())
    except ValueError as e:  # too small for one call: refused before the run, and says so
        assert "cannot admit even one model call" in str(e); return
    assert out.usage.total_tokens <= budget
    assert out.status in (Status.OK, Status.BUDGET_EXHAUSTED, Status.NO_SOLUTION)


@pytest.mark.parametrize("budget", [Budget(calls=20, call_tokens=6), Budget(seconds=60, call_tokens=6)])
def test_call_tokens_caps_every_reply_under_a_budget_of_calls_or_time_too(budget):
    "call_tokens is sent as each call's max_tokens when the budget limits no tokens or cost: a weak model's rambling stays short."
    client = honest(lambda request: " ".join(["word"] * 50))
    out = run(_go(SelfConsistency(samples=3, mode="separate"), client, budget))
    assert [r.max_tokens for r in client.requests] == [6, 6, 6]  # before: None, and 50 words a reply
    assert out.usage.completion_tokens == 18
    logged = [e.data["request"] for e in out.log if e.kind == "llm.request"]
    assert all("max_tokens" not in r for r in logged)  # the request as the algorithm made it: a replay still matches
    again = run(_go(SelfConsistency(samples=3, mode="separate"), FakeLLMClient(lambda r: 1 / 0), budget, replay=out.log))
    assert again.sent == {} and again.value == out.value


def test_a_calls_own_max_tokens_wins_over_call_tokens():
    from reasoning_kit.engine import Algorithm
    class Own(Algorithm):  # one call that names its own cap
        name = "own"
        def initial(self): return {}
        def apply(self, s, e): pass
        async def run(self, ctx): await ctx.llm("Say many words.", key="own", max_tokens=3)
        def result(self, s): return {}
    client = honest(lambda request: " ".join(["word"] * 50))
    run(_go(Own(), client, Budget(calls=5, call_tokens=6)))
    assert [r.max_tokens for r in client.requests] == [3]
