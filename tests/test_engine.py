"""The engine's guarantees under load: order independence, budgets under parallel calls, replay,
resume after a real crash, and the log file format."""
import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.core.events import Log, LogFormatError
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Algorithm, Budget, EffectFailed, Engine, Status, fold_run

from _support import run, run_scripted, system_of


class Levels(Algorithm):
    """Three levels of `width` parallel calls; each level's prompt depends on the whole previous
    level, and the state keeps every answer by key."""
    name = "test_levels"

    def __init__(self, width: int = 6, levels: int = 3):
        self.width, self.levels = width, levels

    def initial(self):
        return {"answers": {}, "levels": []}

    def apply(self, s, e):
        if e.kind == "levels.answered": s["answers"][e.data["key"]] = e.data["text"]
        elif e.kind == "levels.done": s["levels"].append(e.data["summary"])

    async def run(self, ctx):
        summary = "start"
        for lv in range(self.levels):
            keys = [f"lv/{lv}/{i}" for i in range(self.width)]
            replies = await ctx.gather(*[ctx.llm(f"{summary} #{i}", key=k) for i, k in enumerate(keys)],
                                       return_exceptions=True)
            ok = [(k, r.text) for k, r in zip(keys, replies) if not isinstance(r, Exception)]
            for k, t in ok: ctx.emit("levels.answered", key=k, text=t)
            summary = "|".join(sorted(t for _, t in ok))[:60]
            ctx.emit("levels.done", summary=summary)

    def result(self, s):
        return {"levels": s["levels"], "n": len(s["answers"])}


def answer(req):
    p = req.messages[-1].content
    return text(f"{len(p)}:{p[-2:]}")


def ticked(fn, delays) -> FakeLLMClient:
    """A FakeLLMClient running `fn` where the i-th call yields to the loop `delays[i]` times before
    answering, so parallel calls complete in an order hypothesis chooses (no clock involved)."""
    count = iter(range(10**9))

    async def model(request):
        i = next(count)
        for _ in range(delays[i % len(delays)] if delays else 0): await asyncio.sleep(0)
        return fn(request)

    return FakeLLMClient(model)


def _levels(seed, budget=None, replay=None, width=6, delays=None):
    if delays is not None:
        return run_scripted(Levels(width=width), ticked(answer, delays), input={}, budget=budget, replay=replay)
    return run_scripted(Levels(width=width), answer, seed=seed, input={}, budget=budget, replay=replay)


def _order(out):
    return [e.key for e in out.log if e.kind == "llm.result"]


orders = st.lists(st.integers(0, 6), min_size=18, max_size=18)  # per call: how long it takes, in loop turns
SOME = settings(max_examples=30, deadline=None)
BASE, _ = _levels(None, delays=[0] * 18)


@SOME
@given(delays=orders)
def test_random_completion_orders_do_not_change_anything(delays):
    out, model = _levels(None, delays=delays)
    assert BASE.status == Status.OK and BASE.value["n"] == 18
    assert out.value == BASE.value
    assert out.state.algo == BASE.state.algo
    assert fold_run(out.log).algo == BASE.state.algo
    assert out.state.results == BASE.state.results
    assert (out.calls, model.calls) == (18, 18)
    keys = [r.messages[-1].content for r in model.requests]
    assert len(keys) == len(set(keys)), "a model call was issued twice"


def test_the_ticks_do_change_the_completion_order():
    "Guards the property above: different delays really do reorder the answers."
    a, _ = _levels(None, delays=[0] * 18)
    b, _ = _levels(None, delays=list(range(6, 0, -1)) * 3)
    assert _order(a) != _order(b) and a.value == b.value


@SOME
@given(limit=st.integers(0, 17), delays=orders)
def test_parallel_calls_never_exceed_the_call_budget(limit, delays):
    out, model = _levels(None, budget=Budget(calls=limit), delays=delays)
    assert model.calls == limit == out.calls  # the limit itself, not just agreement between runs
    assert len(out.asked_keys) == limit
    assert out.status == Status.BUDGET_EXHAUSTED
    assert out.state.exhausted == "calls"
    assert out.value["n"] == limit  # best state so far: every answer that was paid for is in the state
    same, _ = _levels(None, budget=Budget(calls=limit), delays=[0] * 18)
    assert out.value == same.value  # and what the budget admits does not depend on the order


@SOME
@given(cut=st.integers(0, 200), delays=orders)
def test_any_prefix_of_a_log_resumes_to_the_same_run(cut, delays):
    "Resume from any prefix (a run that died at any event): same result, no answered call asked again."
    cut = min(cut, len(BASE.log))
    prefix = Log(BASE.log[:cut])
    answered = {e.key for e in prefix if e.kind == "llm.result"}
    again, model = _levels(None, replay=prefix, delays=delays)
    assert again.value == BASE.value and again.state.algo == BASE.state.algo
    assert sorted(again.served_keys) == sorted(answered)
    assert model.calls == 18 - len(answered) and set(again.asked_keys).isdisjoint(answered)


def test_token_budget_stops_issuing_once_spent():
    out, model = _levels(0, budget=Budget(tokens=30))
    assert out.status == Status.BUDGET_EXHAUSTED and out.state.exhausted == "tokens"
    # each call reserves 17 tokens before it is admitted: a prompt estimated at 10 ("start #0": 3 of framing,
    # 4 for the message, 3 for its 8 characters) and 7 completion tokens (a quarter of 30). So one call of
    # each level fits beside what was spent at first; the others wait for the calls in flight to settle (their real
    # usage is known then), and are admitted in order while they fit: six calls, and the budget is never passed
    assert model.calls == 6 and out.usage.total_tokens == 17 <= 30
    reserved = [e.data["reserved"] for e in out.log if e.kind == "llm.request"]
    assert reserved[:5] == [{"tokens": 17, "max_tokens": 7}] * 5
    assert all(r.max_tokens == 7 for r in model.requests)  # the cap is sent to the model: a real bound


def test_time_budget_is_recorded_and_obeyed_on_replay():
    async def go():
        async def slow(req):
            await asyncio.sleep(0.05); return text("x")
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(slow)).attach(engine)
            first = await engine.run(Levels(width=2), {}, budget=Budget(seconds=0.08))
            fast = FakeLLMClient(lambda r: text("x"))
            engine.handlers.clear(); LLMHandler(fast).attach(engine)
            same = await engine.run(Levels(width=2), {}, budget=Budget(seconds=0.08), replay=first.log)
            more = await engine.run(Levels(width=2), {}, budget=Budget(seconds=60), replay=first.log)
        return first, same, more, fast
    first, same, more, fast = run(go())
    assert first.state.exhausted == "seconds"
    assert (same.status, same.value, same.calls) == (first.status, first.value, first.calls)
    assert more.status == Status.OK and more.value["n"] == 6
    # the replay under the same budget called nothing; the one with more time asked only what was never answered
    # (the calls abandoned in flight when time ran out, and everything after them)
    assert fast.calls == 6 - len([v for v in first.state.results.values() if "result" in v])


def test_replay_serves_answered_keys_and_calls_nothing():
    out, _ = _levels(3)
    again, model = _levels(4, replay=out.log)
    assert model.calls == 0 and again.served == {"llm": 18} and again.sent == {}
    assert again.value == out.value and again.state.algo == out.state.algo


def test_replay_with_a_changed_request_calls_the_model_again():
    out, _ = _levels(3, width=2)
    wider, model = _levels(3, replay=out.log, width=3)
    # level 0's first two prompts are unchanged; every later prompt depends on the new level 0
    assert wider.served == {"llm": 2} and model.calls == 9 - 2


def test_failed_calls_are_logged_and_the_run_goes_on():
    def flaky(req):
        if req.messages[-1].content.endswith("#3"): raise ConnectionError("dropped")
        return answer(req)

    out, _ = run_scripted(Levels(width=4), flaky, input={})
    errors = [e for e in out.log if e.kind == "llm.error"]
    assert out.status == Status.PARTIAL and len(errors) == 3  # it went on, and says it went on without three calls
    assert "ConnectionError: dropped" in errors[0].data["error"]
    assert out.value["n"] == 9 and list(out.failed_calls) == [e.key for e in errors]
    assert out.error.startswith("3 model calls failed for good") and errors[0].key in out.error


CRASHING_RUN = textwrap.dedent("""
    import asyncio, os, sys
    sys.path.insert(0, {tests!r})
    from test_engine import Levels, answer
    from reasoning_kit.models import FakeLLMClient, LLMHandler
    from reasoning_kit.engine import Engine

    calls = 0
    def model(req):
        global calls
        calls += 1
        if calls == 11: os._exit(3)   # the process dies in the middle of the second level
        return answer(req)

    async def main():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(model)).attach(engine)
            await engine.run(Levels(), {{}}, log={log!r})
    asyncio.run(main())
""")


def test_a_run_that_died_resumes_from_its_log(tmp_path):
    log_path = tmp_path / "run.jsonl"
    script = CRASHING_RUN.format(tests=str(Path(__file__).parent), log=str(log_path))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    # simulate the worst case too: the crash cut the last line in half
    raw = log_path.read_text()
    log_path.write_text(raw + '{"seq": 999, "kind": "llm.req')
    with pytest.raises(LogFormatError, match=r"run.jsonl:\d+: truncated"):
        Log.read(log_path)
    died = Log.read(log_path, repair=True)
    state = fold_run(died)
    # level 1's six calls were all in flight; four had answered when the fifth killed the process
    assert len(state.results) == 10 and sorted(state.pending) == ["lv/1/4", "lv/1/5"]

    resumed, model = _levels(0, replay=log_path)
    full, _ = _levels(1)
    assert resumed.status == Status.OK
    assert resumed.value == full.value and resumed.state.algo == full.state.algo
    assert model.calls == 18 - 10 and resumed.served == {"llm": 10}


def test_log_file_round_trip_and_refusal_to_overwrite(tmp_path):
    out, _ = _levels(2)
    p = out.log.write(tmp_path / "a.jsonl")
    back = Log.read(p)
    assert back.events == out.log.events
    assert fold_run(back).algo == out.state.algo
    with pytest.raises(FileExistsError, match="already holds a log"):
        Log(path=p)


def test_a_corrupt_line_is_named(tmp_path):
    out, _ = _levels(2, width=1)
    lines = out.log.to_jsonl().splitlines()
    lines[4] = "#" + lines[4][1:]
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogFormatError, match=r"bad.jsonl:5: not valid JSON"):
        Log.read(p)


def test_bad_input_gets_a_clear_error():
    async def go():
        async with Engine() as engine:
            with pytest.raises(TypeError, match="input must be a dict"):
                engine.start(Levels(), ["not", "a", "dict"])
            with pytest.raises(TypeError, match="expected an Algorithm"):
                engine.start("Levels", {})
            out = await engine.run(Levels(), {})  # no LLM handler attached
            assert out.status == Status.FAILED and "no handler attached for 'llm'" in out.error
    run(go())


def test_cost_budget_uses_the_reported_dollars():
    from reasoning_kit.models import Usage

    def priced(req):
        return text("x", usage=Usage(prompt_tokens=10, completion_tokens=1, cost=0.01))

    out, model = run_scripted(Levels(width=6), priced, input={}, budget=Budget(cost=0.05))
    # level 0 is admitted whole before any cost is known (6 x $0.01); level 1 sees $0.06 >= $0.05
    assert out.status == Status.BUDGET_EXHAUSTED and out.state.exhausted == "cost"
    assert model.calls == 6 and out.usage.cost == pytest.approx(0.06) and out.usage.prompt_tokens == 60


def test_a_replayed_level_is_admitted_like_the_original():
    "Replayed answers arrive at once; the budget must still decide as it did when they were in flight."
    first, _ = _levels(0, budget=Budget(tokens=30))
    again, model = _levels(0, budget=Budget(tokens=30), replay=first.log)
    assert (again.value, again.calls, model.calls) == (first.value, first.calls, 0)


def test_run_sync_for_scripts():
    engine = Engine()
    LLMHandler(FakeLLMClient(answer)).attach(engine)
    out = engine.run_sync(Levels(width=2), {})
    assert out.status == Status.OK and out.value["n"] == 6


class AskAgain(Algorithm):
    "Asks the same key three times, one after another: one call, one answer (or one error)."
    name = "test_ask_again"

    async def run(self, ctx):
        out = []
        for _ in range(3):
            try: out.append((await ctx.llm("same", key="k")).text)
            except EffectFailed as e: out.append(e.error)
        ctx.emit("again.done", texts=out)

    def initial(self): return {}
    def apply(self, s, e):
        if e.kind == "again.done": s["texts"] = e.data["texts"]
    def result(self, s): return s


@pytest.mark.parametrize("fails", [False, True])
def test_a_key_asked_again_after_it_answered_is_not_asked_twice(fails):
    def model(req):
        if fails: raise RuntimeError("down")
        return text("once")
    client = FakeLLMClient(model)
    out, _ = run_scripted(AskAgain(), client)
    assert client.calls == 1 and out.calls == 1
    assert out.value["texts"] == (["RuntimeError: down"] * 3 if fails else ["once"] * 3)


def test_the_time_budget_bounds_calls_in_flight():
    "A call still unanswered when the time runs out is abandoned; a replay under the same budget does the same."
    async def slow(req):
        await asyncio.sleep(0.5 if "#1" in req.messages[-1].content else 0.01)
        return answer(req)

    async def go(budget, replay=None):
        client = FakeLLMClient(slow)
        async with Engine() as engine:
            LLMHandler(client).attach(engine)
            t0 = asyncio.get_running_loop().time()
            out = await engine.run(Levels(width=2), {}, budget=budget, replay=replay)
            return out, client, asyncio.get_running_loop().time() - t0

    out, client, _ = run(go(Budget(seconds=0.1)))
    assert out.status == Status.BUDGET_EXHAUSTED
    assert list(out.state.pending) == ["lv/0/1"] and out.value["n"] == 1
    refusal = next(e for e in out.log if e.kind == "budget.exhausted")
    assert refusal.key == "lv/0/1" and refusal.data["in_flight"] is True

    same, client2, _ = run(go(Budget(seconds=0.1), replay=out.log))
    assert client2.calls == 0 and same.value == out.value and same.state.pending == out.state.pending
    assert same.state.issued == out.state.issued and same.status == out.status

    more, client3, _ = run(go(Budget(seconds=30), replay=out.log))
    assert more.status == Status.OK and more.value["n"] == 6 and client3.calls == 5  # lv/0/0 was served from the log


def test_a_started_run_says_when_it_is_done():
    async def go():
        gate = asyncio.Event()

        async def held(req):
            await gate.wait(); return answer(req)
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(held)).attach(engine)
            r = engine.start(Levels(width=1, levels=1), {})
            await asyncio.sleep(0)
            before = r.done
            gate.set()
            out = await r
            return before, r.done, out
    before, after, out = run(go())
    assert (before, after, out.status) == (False, True, Status.OK)


def test_cache_answers_are_logged_as_served_and_not_counted():
    class Half:
        "Answers every other call 'from a cache'."
        def __init__(self): self.n = 0
        async def complete(self, request, call=None):
            self.n += 1
            if self.n % 2 == 0: call.mark_served("cache")
            return answer(request)

    async def go():
        async with Engine() as engine:
            LLMHandler(Half()).attach(engine)
            out = await engine.run(Levels(width=4, levels=1), {})
            again = await engine.run(Levels(width=4, levels=1), {}, replay=out.log)
            return out, again
    out, again = run(go())
    assert (out.calls, out.state.cached, out.sent, out.cached) == (2, 2, {"llm": 2}, {"llm": 2})
    assert len(out.asked_keys) == 2 and len(out.cached_keys) == 2
    assert [e.data.get("served") for e in out.log if e.kind == "llm.result"].count("cache") == 2
    assert fold_run(out.log).calls == 2
    # a replay keeps the mark, so the replayed run counts the same model calls
    assert again.calls == 2 and sorted(again.served_keys) == ["lv/0/0", "lv/0/1", "lv/0/2", "lv/0/3"]


def test_lost_calls_are_named_in_one_order_whatever_order_they_failed_in():
    "Two agents' calls fail for good in an order the seeded latencies choose; the run's closing event is the same for every order."
    from reasoning_kit.algos import Debate
    from reasoning_kit.models.fake import text

    def model(request):
        persona = system_of(request)
        if "[A]" in persona or "[B]" in persona: raise RuntimeError(f"down for {persona[:3]}")
        return text("Answer: 12")

    finished, errors = set(), set()
    for seed in range(8):
        out, _ = run_scripted(Debate(agents=3, rounds=0, judge=False, personas=["[A] a", "[B] b", "[C] c"]), model, task="6 x 2?", seed=seed)
        assert out.status.value == "partial" and list(out.failed_calls) == sorted(out.failed_calls), out.failed_calls
        finished.add(json.dumps(out.log[-1].data, sort_keys=True)); errors.add(out.error)
    assert len(finished) == 1 and len(errors) == 1, errors
