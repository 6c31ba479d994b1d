"""Tree of Thoughts as beam search with a step scorer (a process reward model): `scorer=` is called once per new
step with (task, steps so far) and its 0-10 score ranks the beam; no evaluator call is made, max_calls counts only
proposals, the scores are logged (the fold never needs the scorer; being code, a replay runs it again), an
asynchronous scorer runs the same way, and a reward model served as a model is the evaluator (logged, replayed). Also: the pictures of BestOfN and MCTS in the HTML export."""
import asyncio
import random
import re

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.algos import BestOfN, MCTS, TreeOfThoughts
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, Status, fold_run

from _support import request_keys, run_scripted, user_of

STEPS = ["add 6 and 2", "multiply 6 by 2", "FINAL: 12", "FINAL: 8", "halve 6"]


def proposer(request):
    "Lists three next steps, drawn from the prompt (the same prompt, the same list); no answer as a first step."
    u = user_of(request)
    pool = STEPS if "Steps so far" in u else [s for s in STEPS if not s.startswith("FINAL")]
    return text("\n".join(random.Random(sum(map(ord, u))).sample(pool, 3)))


class PRM:
    "A process reward model as a code scorer: it scores each step given the chain before it, and counts its calls."
    def __init__(self): self.calls = []

    def __call__(self, task, steps):
        self.calls.append(tuple(steps))
        last = steps[-1]
        return 10.0 if last == "FINAL: 12" else 7.0 if "multiply" in last else 1.0 if "8" in last else 4.0


class AsyncPRM(PRM):
    "The same reward model behind an asynchronous endpoint (awaited by the search)."
    async def __call__(self, task, steps):
        await asyncio.sleep(random.random() / 1000)
        return super().__call__(task, steps)


def tot(scorer, **kw):
    return TreeOfThoughts(depth=3, width=2, branching=3, generate="propose", scorer=scorer, stop_score=None, **kw)


def test_a_step_scorer_replaces_the_evaluator_calls_and_ranks_the_beam():
    prm = PRM()
    out, client = run_scripted(tot(prm), proposer, task="6 x 2?")
    assert out.status == Status.OK
    assert all(r.role == "proposer" for r in client.requests)  # not one evaluator call
    assert out.calls == client.calls <= tot(prm).max_calls == 1 + 2 + 2  # proposals only: one call per beam node and level
    s = out.state.algo
    scored = [n for n in s.nodes.values() if n.how == "code"]
    assert scored and len(prm.calls) == len(scored)  # one scorer call per new, distinct step
    for level in range(1, 4):  # the beam at each level is the best-scored steps (ties by proposal order)
        nodes = [n for n in s.nodes.values() if n.depth == level and n.score is not None]
        kept = [n for n in nodes if n.status in ("kept", "final")]
        if kept: assert min(n.score for n in kept) >= max((n.score for n in nodes if n.status == "pruned"), default=0)
    if any(n.text == "FINAL: 12" for n in s.nodes.values()):  # once proposed, the best-scored step of its level ends the search
        assert out.value["answer"] == "12" and out.value["score"] == 10.0 and s.stopped == "final"


def test_the_scores_are_logged_so_the_fold_needs_no_scorer_and_replay_no_model():
    prm = PRM()
    first, _ = run_scripted(tot(prm), proposer, task="6 x 2?")
    again_prm = PRM()
    again, client = run_scripted(tot(again_prm), lambda r: 1 / 0, task="6 x 2?", replay=first.log)
    assert client.calls == 0 and again.value == first.value and again.state.algo == first.state.algo
    assert again_prm.calls == prm.calls  # code, not an effect: a replay runs it again, and it says the same
    assert fold_run(first.log).algo == first.state.algo  # the fold needs no scorer: the scores are in the events


def test_a_reward_model_endpoint_as_the_evaluator_is_logged_and_replayed():
    def served(request):
        if request.model != "prm": return proposer(request)
        return text(str(PRM()(None, [re.findall(r"\n\d+\. (.*)", user_of(request))[-1]])))
    algo = tot(None, evaluator_model="prm")
    first, client = run_scripted(algo, served, task="6 x 2?")
    code, _ = run_scripted(tot(PRM()), proposer, task="6 x 2?")
    assert first.value == code.value and [n.score for n in first.state.algo.nodes.values()] == [n.score for n in code.state.algo.nodes.values()]
    assert {r.model for r in client.requests if r.role == "evaluator"} == {"prm"} and first.calls <= algo.max_calls
    again, silent = run_scripted(algo, lambda r: 1 / 0, task="6 x 2?", replay=first.log)
    assert silent.calls == 0 and again.value == first.value


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_an_async_reward_model_gives_the_same_search_in_any_completion_order(seed):
    def once(seed):
        out, client = run_scripted(tot(AsyncPRM()), proposer, task="6 x 2?", seed=seed)
        keys = request_keys(out)
        assert len(keys) == len(set(keys)) == client.calls
        return out.value, out.state.algo, sorted(keys)
    assert once(seed) == once(0) == (lambda o: (o[0], o[1], o[2]))(once(1))


def test_a_scorer_that_is_not_a_reward_fails_naming_the_node():
    out, _ = run_scripted(tot(lambda task, steps: 11), proposer, task="6 x 2?")
    assert out.status == Status.FAILED and "returned 11 for node n.1" in out.error


@pytest.mark.parametrize("calls", [0, 1, 2])
def test_a_budget_counts_only_proposals(calls):
    assert run_scripted(tot(PRM()), proposer, task="6 x 2?")[0].calls > 2
    out, client = run_scripted(tot(PRM()), proposer, task="6 x 2?", budget=Budget(calls=calls))
    assert out.status == Status.BUDGET_EXHAUSTED and out.calls == client.calls == calls


# --- the pictures of the new searches in the HTML export -------------------------------------------------


def test_best_of_n_and_mcts_export_as_html_with_their_own_pictures(tmp_path):
    from reasoning_kit.effects.validate import ValidationHandler
    from reasoning_kit.viz import Stepper, save_html
    from reasoning_kit.viz.views import view_for
    bon, _ = run_scripted(BestOfN(samples=4, verifier=lambda t, a: a == "12"), lambda r: text("Answer: 12"), task="6 x 2?")
    mcts, _ = run_scripted(MCTS(iterations=3, branching=2, depth=2, validator="ok"),
                           lambda r: text('{"score": 6}' if r.role == "evaluator" else "FINAL: 12" if "1. " in user_of(r) else "step"),
                           task="6 x 2?", handlers=[ValidationHandler({"ok": lambda a, info: a == "12"})])
    for out, name, mark in ((bon, "best_of_n", "summed"), (mcts, "mcts", "N=")):
        assert view_for(name).name == name and view_for(name).say is not None
        s = Stepper(out); assert mark in s.picture(len(s) - 1)  # the last step's picture the widget and the page draw (the page ships it compressed)
        page = save_html(out, tmp_path / f"{name}.html").read_text()
        assert "rkReady" in page and "Traceback" not in page
