"A log keeps appended events packed (issue 11): whatever goes in comes out the same, in the same order, and shared answers stay right."
import json
import pickle
import tempfile
from pathlib import Path

from hypothesis import given, settings, strategies as st

from reasoning_kit.core.events import Log, pack, unpack
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.engine import Engine, Results, fold_run
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
    from reasoning_kit.core.events import fold
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


# --- what a review found (each failed before its fix) ------------------------------------------------------------------
def containers(v):
    "Every dict and list inside `v`, `v` included."
    out = [v] if type(v) in (dict, list) else []
    for x in (v.values() if type(v) is dict else v if type(v) is list else ()): out += containers(x)
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["result", "n"]), jsonish, max_size=2), min_size=1, max_size=6))
def test_nothing_read_back_is_the_callers_own_dict_or_list(payloads):
    "Whatever shape the kind had last, a small dict or list is copied into the log, never kept by reference."
    log = Log()
    for p in payloads: log.append("demo.review", p)
    mine = {id(c) for p in payloads for c in containers(p)}
    for e, p in zip(log, payloads):
        assert e.data == p and not {id(c) for c in containers(e.data)} & mine


def test_a_payload_too_deep_to_pack_is_kept_whole_and_the_log_stays_in_step():
    log, deep = Log(), {}
    d = deep
    for _ in range(300): d["x"] = {}; d = d["x"]
    log.append("demo.deep", deep); log.append("demo.after", {"z": 3, "w": 4})
    assert log[0].data == deep and log[1].data == {"z": 3, "w": 4}


def test_keys_that_are_not_strings_come_back_as_they_went_in():
    log = Log()
    for d in [{1: "a"}, {True: "a"}, {1.5: "b"}, {"s": {0: 1}}]: log.append("demo.keys", d)
    assert [list(map(type, e.data)) for e in log][:3] == [[int], [bool], [float]]
    assert [e.data for e in log] == [{1: "a"}, {True: "a"}, {1.5: "b"}, {"s": {0: 1}}]


def test_a_listener_that_raises_leaves_nothing_held():
    import gc, weakref
    from reasoning_kit.core.events import packed_part
    class Leaf: pass
    log, leaf = Log(), Leaf(); ref = weakref.ref(leaf)
    def boom(e): raise RuntimeError("listener failed")
    log.subscribe(boom)
    data = {"x": leaf}
    try: log.append("demo.boom", data)
    except RuntimeError: pass
    assert packed_part(data, "x") is None
    del log, leaf, data; gc.collect()
    assert ref() is None


def test_an_error_with_no_text_is_still_an_error():
    import copy
    r = Results({"k": {"effect": "llm", "error": None}})
    assert "error" in r["k"] and "result" not in r["k"] and r["k"]["error"] is None
    from reasoning_kit.core.events import Event
    from reasoning_kit.engine import RunReducer
    red = RunReducer(); s = red.initial()
    red.apply(s, Event(kind="llm.request", key="q", data={"request": {}})); red.apply(s, Event(kind="llm.error", key="q", data={}))
    assert "error" in s.results["q"] and copy.deepcopy(s.results) == s.results


def test_past_the_limit_of_kept_shapes_events_are_kept_whole_not_given_a_shape_each():
    from reasoning_kit.core import _packed as E  # the shape table lives in the packed log's private module
    kept = dict(E._shapes)
    try:
        E._SHAPES_KEPT, limit = len(E._shapes), E._SHAPES_KEPT  # the table is full from now on
        log = Log()
        for i in range(50): log.append("demo.many", {f"id{i}": i})  # a new form each time
        heads = {id(h) for h in log.events._heads}
        assert len(heads) == 1 and [e.data for e in log] == [{f"id{i}": i} for i in range(50)]
    finally: E._SHAPES_KEPT = limit; E._shapes.clear(); E._shapes.update(kept)
