"""evaluate: order independence over many completion orders, failures confined to their row, the
budget per item, logs that fold back to each row, and compare."""
import asyncio
import json
import random
import zlib

import pytest

from reasoning_kit.algos import TreeOfThoughts
from reasoning_kit.sweep.eval import Report, compare, evaluate, evaluate_sync, on_answer
from reasoning_kit.core.events import Log
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.engine import Budget, Engine, fold_run
from reasoning_kit.tasks import game24

from _support import jittered, run

PUZZLES = game24.generate(12, seed=7)
CHECK = on_answer(game24.check)


def fallible(request):
    "game24.oracle with shuffled proposals and false 'impossible' for half the value prompts (decided by the prompt)."
    said, p = game24.oracle(request), request.messages[-1].content
    h = zlib.crc32(p.encode())
    if p.startswith("Evaluate if") and len(p.split("\n")[-2].split()) >= 3 and said == "sure" and h % 2 == 0:
        return "impossible"
    if p.rstrip().endswith("Possible next steps:"):
        lines = said.splitlines()
        random.Random(h).shuffle(lines)
        return "\n".join(lines)
    return said


def tot(width=2):
    return TreeOfThoughts(depth=4, width=width, branching=4, generate="propose", evaluate="value", n_evaluate=1,
                          stop_score=None, prompts=game24.prompts)


def factory(seed, fn=fallible, counter=None):
    rng = random.Random(seed)

    def make():
        client = jittered(fn, rng.randrange(1 << 30), max_delay=0.001)
        if counter is not None:
            counter.append(client)
        e = Engine()
        LLMHandler(client).attach(e)
        return e
    return make


def timeless(report: Report) -> dict:
    return report.model_dump(exclude={"rows": {"__all__": {"seconds"}}})


def test_report_does_not_depend_on_completion_order_or_concurrency():
    reference = None
    for seed, concurrency in [(0, 1), (1, 3), (2, 8), (3, 12), (4, 5)]:
        clients = []
        r = run(evaluate(factory(seed, counter=clients), tot(), PUZZLES, check=CHECK, concurrency=concurrency, progress=False))
        assert [row.index for row in r.rows] == list(range(len(PUZZLES)))
        assert sum(c.calls for c in clients) == sum(row.calls for row in r.rows)  # no call issued twice
        if reference is None:
            reference = timeless(r)
        assert timeless(r) == reference, (seed, concurrency)
    assert 0 < reference["accuracy"] <= 1


def test_shared_engine_gives_the_same_report_as_one_engine_per_item():
    async def shared():
        async with Engine() as e:
            LLMHandler(FakeLLMClient(fallible)).attach(e)
            return await evaluate(e, tot(), PUZZLES, check=CHECK, concurrency=6, progress=False)
    assert timeless(run(shared())) == timeless(run(evaluate(factory(9), tot(), PUZZLES, check=CHECK, progress=False)))


def test_a_failing_item_does_not_stop_the_others():
    broken = PUZZLES[3]

    def model(request):
        if f"Input: {broken}\n" in request.messages[-1].content:
            raise TimeoutError("model timed out")
        return fallible(request)

    def check(value, input):
        if input["task"] == PUZZLES[5]:
            raise ValueError("checker crashed")
        return CHECK(value, input)

    good = run(evaluate(factory(0), tot(), PUZZLES, check=CHECK, progress=False))
    r = run(evaluate(factory(0, model), tot(), PUZZLES, check=check, progress=False))
    assert r.rows[3].status == "failed" and not r.rows[3].correct and r.rows[3].error
    assert r.rows[5].error == "check: ValueError: checker crashed" and not r.rows[5].correct
    others = [i for i in range(len(PUZZLES)) if i not in (3, 5)]
    assert [r.rows[i].correct for i in others] == [good.rows[i].correct for i in others]
    assert [r.rows[i].value for i in others] == [good.rows[i].value for i in others]


def test_an_engine_that_cannot_be_made_fails_its_row_only():
    made = []

    def flaky_factory():
        made.append(1)
        if len(made) == 2:
            raise RuntimeError("no engine today")
        return factory(0)()

    r = run(evaluate(flaky_factory, tot(), PUZZLES[:4], check=CHECK, concurrency=1, progress=False))
    assert [row.status for row in r.rows].count("failed") >= 1
    assert r.rows[1].error == "RuntimeError: no engine today" and r.rows[1].calls == 0


def test_budget_is_per_item():
    for calls in (1, 4, 9):
        r = run(evaluate(factory(calls), tot(3), PUZZLES[:6], check=CHECK, budget=Budget(calls=calls), progress=False))
        assert all(row.calls <= calls for row in r.rows)
        assert all(row.status == "budget_exhausted" for row in r.rows)
        assert r.budget["calls"] == calls
    free = run(evaluate(factory(0), tot(3), PUZZLES[:6], check=CHECK, progress=False))
    assert max(row.calls for row in free.rows) > 9


def test_logs_fold_back_to_each_row(tmp_path):
    r = run(evaluate(factory(0), tot(), PUZZLES[:5], check=CHECK, logs_dir=tmp_path / "logs", progress=False))
    for row in r.rows:
        s = fold_run(Log.read(row.log))
        assert s.status == row.status and s.calls == row.calls
        assert tot().result(s.algo) == row.value


def test_report_json_round_trip_and_totals():
    r = run(evaluate(factory(0), tot(), PUZZLES[:6], check=CHECK, progress=False))
    d = json.loads(r.model_dump_json())
    assert d["accuracy"] == sum(row["correct"] for row in d["rows"]) / 6
    assert d["mean_calls"] == sum(row["calls"] for row in d["rows"]) / 6
    assert sum(d["statuses"].values()) == 6
    assert Report.model_validate(d).rows == r.rows


def test_compare_needs_the_same_tasks():
    a = run(evaluate(factory(0), tot(1), PUZZLES[:6], check=CHECK, progress=False, label="narrow"))
    b = run(evaluate(factory(0), tot(4), PUZZLES[:6], check=CHECK, progress=False, label="wide"))
    c = compare(a, b)
    assert c.labels == ("narrow", "wide") and "accuracy" in str(c) and "mean calls" in str(c)
    assert c.only_first == [i for i in range(6) if a.rows[i].correct and not b.rows[i].correct]
    with pytest.raises(ValueError, match="same tasks"):
        compare(a, run(evaluate(factory(0), tot(1), PUZZLES[1:7], check=CHECK, progress=False)))


def test_progress_line_and_sync_entry_point(capsys):
    r = evaluate_sync(factory(0), tot(1), PUZZLES[:3], check=CHECK, label="tiny")
    err = capsys.readouterr().err
    assert "tiny: 3/3 done" in err and f"{sum(x.correct for x in r.rows)} correct" in err
    evaluate_sync(factory(0), tot(1), PUZZLES[:3], check=CHECK, progress=False)
    assert capsys.readouterr().err == ""


def test_rows_read_answer_with_fallback_for_old_logs():
    from reasoning_kit.sweep.eval import answer_of
    assert answer_of({"answer": "a", "candidate": "c"}) == "a"
    assert answer_of({"candidate": "c"}) == "c" and answer_of({"text": "t"}) == "t" and answer_of({}) is None
    r = run(evaluate(factory(0), tot(), PUZZLES[:4], check=CHECK, progress=False))
    assert [row.answer for row in r.rows] == [row.value.get("answer") for row in r.rows]
    assert CHECK({"candidate": r.rows[0].value.get("answer")}, r.rows[0].input) == r.rows[0].correct


def test_engine_factory_may_take_the_item():
    seen = []

    def per_item(item):
        seen.append(item["task"])
        return factory(0)()
    r = run(evaluate(per_item, tot(), PUZZLES[:5], check=CHECK, progress=False))
    assert sorted(seen) == sorted(PUZZLES[:5]) and len(r.rows) == 5
    ref = run(evaluate(factory(0), tot(), PUZZLES[:5], check=CHECK, progress=False))
    assert timeless(r) == timeless(ref)


def test_cache_hits_are_counted_apart_from_model_calls():
    from types import SimpleNamespace
    from reasoning_kit.sweep.eval import _cached
    from reasoning_kit.core.events import Event
    ev = lambda **d: Event(kind="llm.result", data={"result": {}, **d})
    assert _cached(SimpleNamespace(log=[ev(served="cache"), ev(), ev(served="cache", replayed=True)])) == 1
    assert _cached(SimpleNamespace(cached=3, log=[])) == 3
    answers = {}

    class Caching(FakeLLMClient):
        async def complete(self, request, call=None):
            k = request.messages[-1].content
            if k in answers and call is not None:
                call.mark_served("cache")
                return answers[k]
            answers[k] = await super().complete(request, call)
            return answers[k]

    def make():
        e = Engine()
        LLMHandler(Caching(fallible)).attach(e)
        return e
    r = run(evaluate(make, tot(), PUZZLES[:4], check=CHECK, concurrency=1, progress=False))
    assert r.total_cached > 0 and r.total_calls + r.total_cached == sum(
        sum(1 for e in o.log if e.kind == "llm.result") for o in r.outcomes)


def test_top1_and_any_of_beam_from_the_beam():
    from reasoning_kit.sweep.eval import _beam
    ok = lambda v, i: v["answer"] == "right"
    assert _beam(ok, {"answer": "wrong", "beam": [{"answer": "wrong"}, {"answer": "right"}]}, {}) == (False, True)
    assert _beam(ok, {"answer": "right", "beam": [{"answer": "right"}]}, {}) == (True, True)
    assert _beam(ok, {"answer": "right"}, {}) == (None, None)
    r = run(evaluate(factory(0), tot(3), PUZZLES[:6], check=CHECK, progress=False))
    if any("beam" in row.value for row in r.rows):
        assert r.any_of_beam >= r.top1 and all(row.any_of_beam >= row.top1 for row in r.rows if row.top1 is not None)
    else:
        assert r.top1 is None and r.any_of_beam is None


def test_failed_items_are_counted_beside_accuracy_and_a_dead_configuration_is_flagged(capsys):
    "A model that always raises: every run fails; the report, the progress line and compare say so."
    def broken(request): raise IndexError("nothing scripted")
    dead = evaluate_sync(factory(0, fn=broken), tot(1), PUZZLES[:3], check=CHECK, label="dead")
    assert "dead: 3/3 done, 0 correct, 3 failed" in capsys.readouterr().err
    assert (dead.failed, dead.errored, dead.all_failed, dead.accuracy) == (3, 0, True, 0.0)
    assert "3 failed, 0 errored" in repr(dead) and "ALL 3 ITEMS FAILED, first: " in repr(dead)
    alive = evaluate_sync(factory(0, fn=game24.oracle), tot(1), PUZZLES[:3], check=CHECK, progress=False)
    assert (alive.failed, alive.all_failed) == (0, False) and "FAILED" not in repr(alive)
    assert compare(dead, alive).metrics["failed"] == ("3", "0")
    picky = evaluate_sync(factory(0, fn=game24.oracle), tot(1), PUZZLES[:2], check=lambda v, i: 1 / 0, progress=False)
    assert (picky.failed, picky.errored, picky.all_failed) == (0, 2, True)
