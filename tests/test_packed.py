"A log keeps appended events packed (issue 11): whatever goes in comes out the same, in the same order, and shared answers stay right."
import json
import pickle
import tempfile
from pathlib import Path

from hypothesis import given, settings, strategies as st

from reasoning_kit.events import Log, pack, unpack
from reasoning_kit.llm import FakeLLMClient, LLMHandler
from reasoning_kit.runtime import Engine, Results, fold_run
from reasoning_kit.algos import SelfConsistency, TreeOfThoughts

text = st.text(max_size=6)
leaf = st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False) | text
jsonish = st.recursive(leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(text, c, max_size=4), max_leaves=12)
oddities = st.recursive(leaf | st.tuples(leaf) | st.sets(st.integers(0, 3), max_size=2),  # not JSON: kept as leaves, as they are
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.integers(0, 3) | text, c, max_size=3), max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(jsonish, min_size=1, max_size=6), st.sampled_from([None, "demo.same", "demo.other"]))
def test_every_value_comes_back_the_same_with_its_keys_in_order(values, kind):
    "Packed one after another under one kind (so the last shape is tried first and often misses), each comes back exactly."
    leaves, shapes = [], []
    for v in values:
        start = len(leaves); shapes.append((pack(v, leaves, kind), start))
    for v, (shape, start) in zip(values, shapes):
        back = unpack(shape, leaves, start)
        assert back == v and json.dumps(back) == json.dumps(v)  # json.dumps keeps key order: so must unpack


@settings(max_examples=40, deadline=None)
@given(oddities)
def test_values_that_are_not_json_are_kept_as_they_are(v):
    leaves = []; back = unpack(pack(v, leaves, "demo.odd"), leaves)
    assert back == v and type(back) is type(v)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a.b", "a.c", "llm.result"]), st.dictionaries(text, jsonish, max_size=3),
                          st.none() | text), max_size=12))
def test_a_log_gives_back_what_was_appended_and_writes_what_it_holds(appends):
    with tempfile.TemporaryDirectory() as d:
        log = Log(path=Path(d) / "run.jsonl")
        told = []; log.subscribe(told.append)
        returned = [log.append(kind, data, key=key) for kind, data, key in appends]
        log.close()
        assert list(log) == returned == told and [e.seq for e in log] == list(range(len(appends)))
        assert [log[i] for i in range(-len(log), 0)] == returned and log[1:3] == returned[1:3]
        assert (Path(d) / "run.jsonl").read_text() == log.to_jsonl()  # the file streamed as it went, byte for byte
        assert Log.read(Path(d) / "run.jsonl").events == log.events
        assert pickle.loads(pickle.dumps(log.events)) == log.events


def test_a_packed_event_cannot_be_changed_through_what_is_read():
    log = Log(); log.append("demo.said", {"text": "hi", "tags": ["a"]})
    log[0].data["tags"].append("changed"); log[0].data["text"] = "changed"
    assert log[0].data == {"text": "hi", "tags": ["a"]}


def run(alg, task="Make 24 from 4 9 10 13.", **kw):
    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lambda r, k: "7" if k.endswith("/score") else f"step {k}")).attach(engine)
            return await engine.run(alg, {"task": task, "question": task}, **kw)
    import asyncio
    return asyncio.run(go())


def test_answers_shared_with_the_log_read_as_the_answers_folded_from_the_file():
    "A live run's results point into its log's leaves; folding the written file gives the same answers as plain dicts."
    with tempfile.TemporaryDirectory() as d:
        out = run(TreeOfThoughts(depth=2, width=2, branching=3, stop_score=None), log=Path(d) / "tot.jsonl")
        assert type(out.state.results) is Results and len(out.state.results) == out.calls
        shared = [a._shape is not None for a in out.state.results.values()]
        assert all(shared), "a live run's answers should share the log's packed leaves"
        again = fold_run(Log.read(Path(d) / "tot.jsonl"))
        assert again.results == out.state.results and again.algo == out.state.algo
        assert pickle.loads(pickle.dumps(out.state)).results == out.state.results


def test_a_replay_reads_packed_answers_and_gives_the_same_run():
    live = run(SelfConsistency(samples=4))
    again = run(SelfConsistency(samples=4), replay=live.log)
    assert again.value == live.value and again.sent == {} and again.state.results == live.state.results


def test_a_fold_pauses_the_collector_and_always_gives_it_back():
    import gc
    from reasoning_kit.events import fold
    class Boom:
        def initial(self): return []
        def apply(self, s, e):
            s.append(gc.isenabled())
            if e.data.get("boom"): raise RuntimeError("boom")
    log = Log(); log.append("demo.said", {}); log.append("demo.said", {"boom": True})
    assert gc.isenabled()
    try: fold(log, Boom())
    except RuntimeError: pass
    assert gc.isenabled(), "a reducer that raises must not leave the collector off"
    assert fold(log[:1], Boom()) == [False]  # paused while folding
    gc.disable()
    try: fold(log[:1], Boom()); assert not gc.isenabled()  # a caller who turned it off keeps it off
    finally: gc.enable()
