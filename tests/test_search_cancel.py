"""Cancelling a BestOfN or an MCTS run at any point, with real asyncio cancellation (tests/test_cancel.py's harness):
run.finished is the last event, in memory and on disk; no task outlives the run; asyncio has nothing to warn about."""
import asyncio
import gc
import json
import warnings

from hypothesis import given, settings, strategies as st

import test_cancel
from reasoning_kit.algos import BestOfN, MCTS

from _support import user_of


def bon_model(request):
    if request.role == "judge":
        if sum(map(ord, user_of(request))) % 5 == 0: raise ConnectionError("the judge is down")
        return json.dumps({"score": sum(map(ord, user_of(request))) % 11})
    return f"Answer: {(request.seed or 0) % 3 + 11}"


def mcts_model(request):
    u = user_of(request)
    if request.role == "evaluator":
        if sum(map(ord, u)) % 6 == 0: raise ConnectionError("the evaluator is down")
        return json.dumps({"score": sum(map(ord, u)) % 10})
    return f"FINAL: {(request.seed or 0) % 3 + 11}" if "1. " in u and (request.seed or 0) % 2 else f"step {(request.seed or 0) % 7}"


SEARCH = {"best_of_n": (lambda: BestOfN(samples=5, mode="separate", aggregate="weighted_vote"), bon_model),
          "mcts": (lambda: MCTS(iterations=4, branching=2, depth=3, stop_score=None), mcts_model)}


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(SEARCH)), delays=st.lists(st.integers(0, 6), min_size=1, max_size=12),
       at=st.integers(1, 40), how=st.sampled_from(["run.cancel", "outside"]))
def test_cancel_at_any_point_leaves_nothing_behind(tmp_path_factory, name, delays, at, how):
    test_cancel.ALGOS.update(SEARCH)  # the harness looks the algorithm up by name
    path = tmp_path_factory.mktemp("cancel") / "run.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, state, events = asyncio.run(test_cancel.cancelled_run(name, delays, at, how, path))
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, (RuntimeWarning, ResourceWarning))], [str(w.message) for w in caught]
    if at < len(events):  # the cancel came before the run ended: it ended cancelled, keeping what was logged
        assert state.status == "cancelled" and state.pending.keys() <= {e.key for e in events if e.kind == "llm.request"}
    if how == "run.cancel": assert out.status.value == state.status and out.log.events == events
