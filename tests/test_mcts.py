"""MCTS: bounds named, exact max_calls, budgets of k calls make k, identical searches under random completion orders,
nothing asked twice, every prefix folds (visits and values as backed up), replay sends nothing, kill -9 and resume
re-ask nothing answered, ties broken by id, stops (solved, explored), the fork story."""
import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.algos import MCTS
from reasoning_kit.algos.mcts import MCTSState, uct
from reasoning_kit.algos.tot import ScorerError
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, Status, fold_run
from reasoning_kit.effects.validate import ValidationHandler

from _crash import crash_then_resume
from _support import request_keys, run_scripted, user_of


def model(request):
    "Replies from the prompt and the seed: steps, answers (11 to 13, after one step), scores 0-9, failures on both sides."
    u = user_of(request); h = sum(map(ord, u)) + (request.seed or 0)
    if request.role == "evaluator":
        if h % 7 == 0: raise ConnectionError("evaluator down")
        return text(json.dumps({"score": h % 10}))
    if request.role == "reflector": return text(f"lesson {h % 4}")
    if h % 11 == 0: raise ConnectionError("proposer down")
    return text(f"FINAL: {h % 3 + 11}" if h % 3 == 0 and re.search(r"\n1\. ", u) else f"step {h % 5}")


def handlers():
    return [ValidationHandler({"is_12": lambda a, info: (a == "12", f"{a} is not 12")})]


def make():
    return MCTS(iterations=6, branching=3, depth=3, validator="is_12", reflect=True, stop_score=None)


def run_task(algo, fn=model, **kw):
    return run_scripted(algo, fn, task="6 x 2?", handlers=handlers(), **kw)


def steps_only(request):
    "Never an answer, never a failure: every iteration expands."
    if request.role == "evaluator": return text('{"score": %d}' % (len(user_of(request)) % 10))
    return text(f"step {request.seed % 97}")


CONFIGS = {
    "value": lambda: MCTS(iterations=5, branching=2, depth=3),
    "scorer": lambda: MCTS(iterations=5, branching=2, depth=3, scorer=lambda task, steps: len(steps[-1]) % 11),
    "check+reflect": lambda: MCTS(iterations=5, branching=3, depth=3, validator="is_12", reflect=True, stop_score=None),
    "scorer+check+reflect": lambda: MCTS(iterations=4, branching=2, depth=3, validator="is_12", reflect=True,
                                         scorer=lambda task, steps: 5.0, stop_score=None),
    "greedy": lambda: MCTS(iterations=6, branching=2, depth=4, exploration=0.0),
}


# --- bounds and max_calls ---------------------------------------------------------------------------


@pytest.mark.parametrize("kw, message", [
    (dict(iterations=0), "MCTS: iterations must be 1 to 100, got 0"),
    (dict(iterations=101), "MCTS: iterations must be 1 to 100, got 101"),
    (dict(iterations=2.5), "MCTS: iterations must be a whole number from 1 to 100, got 2.5"),
    (dict(branching=0), "MCTS: branching must be 1 to 10, got 0"),
    (dict(branching=11), "MCTS: branching must be 1 to 10, got 11"),
    (dict(depth=0), "MCTS: depth must be 1 to 10, got 0"),
    (dict(depth=11), "MCTS: depth must be 1 to 10, got 11"),
    (dict(iterations=100, branching=6), "MCTS: iterations * branching = 600 exceeds the limit of 500"),
    (dict(exploration=-0.5), "MCTS: exploration must be 0 to 10, got -0.5"),
    (dict(exploration="wide"), "MCTS: exploration must be a number from 0 to 10"),
    (dict(stop_score=11), "MCTS: stop_score must be 0 to 10, got 11"),
    (dict(temperature=2.5), "MCTS: temperature must be 0 to 2, got 2.5"),
    (dict(validator=""), "MCTS: validator must be a non-empty string or None"),
    (dict(scorer=3), "MCTS: scorer must be a function or None"),
    (dict(parse=3), "MCTS: parse must be a function or None"),
    (dict(reflect=1), "MCTS: reflect must be True or False"),
    (dict(reflect=True), "MCTS: reflect=True needs validator="),
    (dict(proposer_model=""), "MCTS: proposer_model must be a non-empty string or None"),
])
def test_bounds_rejected_at_construction_naming_the_parameter(kw, message):
    with pytest.raises(ValueError) as e:
        MCTS(**kw)
    assert message in str(e.value), str(e.value)


@pytest.mark.parametrize("iterations, branching, depth", [(1, 1, 1), (4, 3, 3), (10, 2, 3), (3, 5, 2), (20, 1, 5)])
@pytest.mark.parametrize("coded", [False, True])
def test_max_calls_is_exact_when_every_iteration_expands(iterations, branching, depth, coded):
    algo = MCTS(iterations=iterations, branching=branching, depth=depth, scorer=(lambda t, s: 4) if coded else None)
    out, client = run_task(algo, steps_only)
    assert out.status == Status.OK and out.calls == client.calls == algo.max_calls
    expansions = min(iterations, sum(branching ** d for d in range(depth)))
    assert algo.max_calls == expansions * branching * (1 if coded else 2) and out.value["iterations"] == expansions
    assert out.value["stopped"] == ("explored" if expansions < iterations else "iterations")


@pytest.mark.parametrize("branching", [1, 3])
def test_max_calls_is_exact_when_answers_cost_more_than_steps(branching):
    "A code scorer with reflections: a failed answer costs two calls, a step one; one iteration of failed answers reaches the bound."
    algo = MCTS(iterations=1, branching=branching, depth=3, scorer=lambda t, s: 5, validator="is_12", reflect=True)
    out, client = run_task(algo, lambda r: text("wrong" if r.role == "reflector" else "FINAL: 8"))
    assert out.calls == client.calls == algo.max_calls == 2 * branching
    assert len(out.state.algo.reflections) == branching


@pytest.mark.parametrize("name", CONFIGS)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), run_seed=st.integers(0, 3))
def test_random_completion_orders_give_identical_searches(name, seed, run_seed):
    def once(seed):
        out, client = run_task(CONFIGS[name](), seed=seed, run_seed=run_seed)
        keys = request_keys(out) + request_keys(out, "validate")
        assert len(keys) == len(set(keys)) and client.calls == out.calls == len(request_keys(out))  # nothing asked twice
        assert out.calls <= CONFIGS[name]().max_calls
        domain = [(e.kind, e.data) for e in out.log if e.kind.startswith("mcts.")]
        return out.status, out.value, out.state.algo, out.calls, sorted(keys), domain
    assert once(seed) == once(0)


@pytest.mark.parametrize("calls", range(0, 14))
def test_a_budget_of_k_calls_makes_exactly_k(calls):
    out, client = run_task(make(), budget=Budget(calls=calls))
    full, _ = run_task(make())
    assert full.calls > 13
    assert out.status == Status.BUDGET_EXHAUSTED and out.calls == client.calls == calls
    assert out.value == make().result(fold_run(out.log).algo)
    assert out.state.algo.selections == full.state.algo.selections[:len(out.state.algo.selections)]  # the same search, cut short


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), calls=st.integers(1, 20))
def test_a_budget_cut_under_random_orders_is_the_same_cut(seed, calls):
    a, _ = run_task(make(), seed=seed, budget=Budget(calls=calls))
    b, _ = run_task(make(), budget=Budget(calls=calls))
    assert (a.status, a.value, a.calls, a.state.algo) == (b.status, b.value, b.calls, b.state.algo)


# --- prefixes, replay, resume ----------------------------------------------------------------------------


def test_every_prefix_folds_with_visits_that_add_up():
    algo = make()
    out, _ = run_task(algo)
    s = out.state.algo
    assert s.reflections and s.failures and any(n.how == "failed" for n in s.nodes.values())  # the run covers failures and reflections
    for k in range(len(out.log) + 1):
        st_ = fold_run(out.log[:k], algo).algo
        assert isinstance(st_, MCTSState)
        if k: assert fold_run(out.log[:k]).algo == st_
        for i, n in st_.nodes.items():  # a node's visits: its own evaluation (backed up) plus its children's visits
            own = int(i != "n" and n.visits > sum(st_.nodes[c].visits for c in n.children))
            assert n.visits == own + sum(st_.nodes[c].visits for c in n.children)
        algo.result(st_)
    assert algo.result(fold_run(out.log).algo) == out.value


@pytest.mark.parametrize("name", CONFIGS)
def test_replay_sends_nothing(name):
    first, _ = run_task(CONFIGS[name]())
    again, client = run_task(CONFIGS[name](), lambda r: 1 / 0, replay=first.log)
    assert client.calls == 0 and again.sent == {} and again.value == first.value and again.state.algo == first.state.algo


def test_resume_after_a_budget_cut_asks_only_the_rest():
    cut, _ = run_task(make(), budget=Budget(calls=9))
    resumed, client = run_task(make(), replay=cut.log)
    full, _ = run_task(make())
    assert resumed.value == full.value and client.calls == full.calls - 9


FULL, _ = run_scripted(make(), model, task="6 x 2?", handlers=handlers())


@settings(max_examples=5, deadline=None)
@given(kill_at=st.integers(1, FULL.calls))
def test_kill_9_then_resume_asks_nothing_answered_again(tmp_path_factory, kill_at):
    path = tmp_path_factory.mktemp("crash") / "run.jsonl"
    answered, out, client = crash_then_resume(path, "test_mcts", kill_at, make, model, handlers)
    assert out.status == FULL.status and out.value == FULL.value
    assert set(out.asked_keys).isdisjoint(answered) and client.calls == FULL.calls - len(answered)


# --- the search itself ---------------------------------------------------------------------------------


def test_ties_break_by_node_id_and_unvisited_nodes_come_first():
    out, _ = run_task(MCTS(iterations=4, branching=3, depth=3), lambda r: text('{"score": 5}' if r.role == "evaluator" else "step"))
    assert [p[-1] for p in out.value["selections"]] == ["n", "n.1", "n.2", "n.3"]  # the same value: the least visited, then id
    s = MCTSState(); MCTS().apply(s, out.log.events[0])
    for e in out.log: MCTS().apply(s, e)
    assert uct(s, "n.1.1", 1.0) > 0 and s.nodes["n"].visits == 12


def test_a_verified_answer_stops_the_search():
    out, _ = run_task(MCTS(iterations=10, branching=2, depth=3, validator="is_12"),
                      lambda r: text('{"score": 6}' if r.role == "evaluator" else "FINAL: 12" if "1. " in user_of(r) else "step"))
    assert out.value["stopped"] == "solved" and out.value["answer"] == "12" and out.value["iterations"] == 2
    assert out.value["score"] == 10.0 and out.value["path"][-1] == "FINAL: 12"


def test_reflections_reach_later_proposals():
    out, client = run_task(MCTS(iterations=3, branching=2, depth=3, validator="is_12", reflect=True),
                           lambda r: text("add less" if r.role == "reflector" else '{"score": 6}' if r.role == "evaluator"
                                          else "FINAL: 8" if "1. " in user_of(r) else "step"))
    assert out.state.algo.reflections == ["add less"] * 4 and [p[-1] for p in out.value["selections"]] == ["n", "n.1", "n.2"]
    later = [user_of(r) for r in client.requests if r.role == "proposer"][-1]
    assert later.endswith("Lessons from earlier wrong answers:\n- add less")  # said once, however often it was learnt


def test_a_missing_check_and_a_broken_scorer_fail_clearly():
    out, _ = run_scripted(MCTS(validator="nope"), model, task="?", handlers=handlers())
    assert out.status == Status.FAILED and "no check named 'nope'" in out.error and out.calls == 0
    out, _ = run_task(MCTS(scorer=lambda t, s: 12), steps_only)
    assert out.status == Status.FAILED and "scorer <lambda> returned 12 for node n.1" in out.error
    assert issubclass(ScorerError, ValueError)


def test_differences_tell_where_two_searches_parted():
    a, _ = run_task(make())
    b, _ = run_task(make(), run_seed=2)
    lines = make().differences(a.state.algo, b.state.algo)
    assert any(re.fullmatch(r"iteration \d+ selected n[.\d]+ instead of n[.\d]*", l) for l in lines) or \
        any(l.startswith("n.") and " scored " in l for l in lines)
    assert make().differences(a.state.algo, a.state.algo) == []


def test_prompt_hooks_replace_the_defaults_and_unknown_ones_are_refused():
    class Hooks:
        def step_prompt(self, task, path): return f"NEXT after {len(path)} steps: {task}"
        def final_answer(self, step): return step[4:] if step.startswith("ANS ") else None
    seen = []
    def fn(request):
        seen.append(user_of(request))
        if request.role == "evaluator": return text('{"score": 5}')
        return text("ANS 12" if "after 1 steps" in user_of(request) else "go on")
    out, _ = run_task(MCTS(iterations=2, branching=1, depth=3, prompts=Hooks()), fn)
    assert out.value["answer"] == "12" and any(s.startswith("NEXT after 0 steps") for s in seen)
    by_dict, _ = run_task(MCTS(iterations=2, branching=1, depth=3, prompts={"step_prompt": Hooks().step_prompt,
                                                                              "final_answer": Hooks().final_answer}), fn)
    assert by_dict.value == out.value
    with pytest.raises(ValueError, match=r"MCTS: unknown prompt hooks \['propose_prompt'\]"):
        MCTS(prompts={"propose_prompt": len})
