"""TreeOfThoughts: the spec example, bounds, budget, order independence, replay, prefixes, the frozen
log, flaky models, parallel=False, min_score, code scorer, synthesis, per-role models and the paper's modes."""
import asyncio
import json
import re
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import pytest

from reasoning_kit.algos.tot import ThoughtNode, ToTState, TreeOfThoughts, parse_score
from reasoning_kit.core.events import Log
from reasoning_kit.models import FakeLLMClient, LLMHandler, LLMRequest, user
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, Engine, Status, fold_run

from _support import jittered, run

FIXTURES = Path(__file__).parent / "fixtures"
TASK = {"task": "Make 24 from 3, 3, 8, 8"}


def system_of(request) -> str:
    return next((m.content or "" for m in request.messages if m.role == "system"), "")


def user_of(request) -> str:
    return next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")


def spec_model(request):
    if "Rate how promising" in system_of(request):
        return text(json.dumps({"score": 10 if "FINAL" in user_of(request) else 6}))
    steps = user_of(request).count("\n1. ") + user_of(request).count("\n2. ")
    return text("FINAL: (8 / (3 - 8 / 3))" if steps >= 2 else "consider 8 / 3")


def depth_of(request) -> int:
    "How many steps the prompt lists (the default prompts number them)."
    return len(re.findall(r"\n\d+\. ", user_of(request)))


def last_step(request) -> str:
    "The last step the prompt lists."
    found = re.findall(r"\n\d+\. (.*)", user_of(request))
    return found[-1] if found else ""


def varied(request):
    "Distinct steps in a list (propose mode) or one step per sample, scores from the prompt's text: real choices."
    u = user_of(request)
    if request.role == "evaluator":
        if "Choice 1:" in u:  # vote: for the choice whose steps have the largest character sum
            blocks = re.split(r"Choice \d+:", u)[1:]
            return text(f"The best choice is {max(range(len(blocks)), key=lambda i: (sum(map(ord, blocks[i])) % 7, -i)) + 1}")
        return text(f"{sum(map(ord, u)) % 11}/10")
    d = depth_of(request)
    return text("\n".join(f"FINAL: {sum(map(ord, u)) % 5 + i}" if d >= 2 else f"step {sum(map(ord, u)) % 7}.{i}" for i in range(3)))


async def go(algo, model=spec_model, inp=TASK, **kw):
    client = model if isinstance(model, FakeLLMClient) else FakeLLMClient(model)
    async with Engine() as engine:
        LLMHandler(client).attach(engine)
        out = await engine.run(algo, inp, **kw)
    return out, client


def keys_of(out) -> list[str]:
    return [e.key for e in out.log if e.kind == "llm.request"]


# -- the specification's example (its printed line is checked by test_example.py) ------------------

def test_spec_example_result_tree_and_keys():
    out, client = run(go(TreeOfThoughts(depth=3, width=2, branching=2)))
    assert out.status == Status.OK
    assert out.value == {"answer": "(8 / (3 - 8 / 3))", "score": 10.0, "depth": 3, "explored": 6, "node": "n.1.1.1",
                         "path": ["consider 8 / 3", "consider 8 / 3", "FINAL: (8 / (3 - 8 / 3))"], "stopped": "final",
                         "beam": [{"node": "n.1.1.1", "answer": "(8 / (3 - 8 / 3))", "score": 10.0,
                                   "path": ["consider 8 / 3", "consider 8 / 3", "FINAL: (8 / (3 - 8 / 3))"]}]}
    s = out.state.algo
    assert isinstance(s, ToTState) and all(isinstance(n, ThoughtNode) for n in s.nodes.values())
    assert s.winner_path == ["n", "n.1", "n.1.1", "n.1.1.1"]
    assert [(i, n.reason, n.duplicate_of) for i, n in s.nodes.items() if n.status == "pruned"] == [
        ("n.2", "duplicate", "n.1"), ("n.1.2", "duplicate", "n.1.1"), ("n.1.1.2", "duplicate", "n.1.1.1")]
    assert sorted(keys_of(out)) == sorted(["tot/n.1/propose", "tot/n.2/propose", "tot/n.1/score",
                                           "tot/n.1.1/propose", "tot/n.1.2/propose", "tot/n.1.1/score",
                                           "tot/n.1.1.1/propose", "tot/n.1.1.2/propose", "tot/n.1.1.1/score"])
    assert client.calls == out.calls == 9
    roles = {r.role for r in client.requests}
    assert roles == {"proposer", "evaluator"}


# -- bounds and cost --------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, message", [
    (dict(width=5, branching=6), "width * branching = 30 exceeds the limit of 25"),
    (dict(depth=9), "TreeOfThoughts: depth must be 1 to 8, got 9"),
    (dict(depth=0), "TreeOfThoughts: depth must be 1 to 8, got 0"),
    (dict(width=0), "TreeOfThoughts: width must be 1 to 25, got 0"),
    (dict(branching=-1), "TreeOfThoughts: branching must be 1 to 25, got -1"),
    (dict(generate="propose", branching=26), "TreeOfThoughts: branching must be 1 to 25, got 26"),
    (dict(depth=True), "TreeOfThoughts: depth must be a whole number from 1 to 8, got True"),
    (dict(n_evaluate=0), "TreeOfThoughts: n_evaluate must be 1 to 20, got 0"),
    (dict(n_evaluate=50), "TreeOfThoughts: n_evaluate must be 1 to 20, got 50"),
    (dict(stop_score=10.5), "stop_score = 10.5 is outside the 0-10 score scale"),
    (dict(min_score=-0.1), "min_score = -0.1 is outside the 0-10 score scale"),
    (dict(generate="propse"), "TreeOfThoughts: generate must be one of 'sample', 'sample_n', 'propose', got 'propse'"),
    (dict(evaluate="score"), "TreeOfThoughts: evaluate must be one of 'value', 'vote', got 'score'"),
    (dict(select="top"), "TreeOfThoughts: select must be one of 'greedy', 'sample', got 'top'"),
    (dict(parallel="no"), "TreeOfThoughts: parallel must be True or False, got 'no'"),
    (dict(synthesize="yes"), "TreeOfThoughts: synthesize must be True or False, got 'yes'"),
    (dict(scorer=5), "scorer must be a function"),
    (dict(scorer=lambda t, p: 1, evaluate="vote"), "cannot be combined with evaluate='vote'"),
    (dict(temperature=-1), "TreeOfThoughts: temperature must be 0 to 2, got -1"),
    (dict(temperature="hot"), "TreeOfThoughts: temperature must be a number from 0 to 2 or None, got 'hot'"),
    (dict(proposer_prompt=3), "TreeOfThoughts: proposer_prompt must be a non-empty string or None"),
    (dict(evaluator_model=""), "TreeOfThoughts: evaluator_model must be a non-empty string or None"),
    (dict(prompts={"value_promt": str}), "unknown prompt hooks ['value_promt']"),
    (dict(score_scale=0), "score_scale = 0 must be a positive number"),
    (dict(score_scale="10"), "score_scale = '10' must be a positive number"),
])
def test_bounds_rejected_with_a_message_naming_the_bound(kw, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        TreeOfThoughts(**kw)


def test_the_largest_configurations_are_accepted():
    assert TreeOfThoughts(depth=8, width=5, branching=5, synthesize=True).max_calls == 401
    assert TreeOfThoughts(depth=1, width=25, branching=1).max_calls == 50
    assert TreeOfThoughts(depth=1, width=1, branching=25, stop_score=None).max_calls == 50
    # propose mode: one call per beam node, keeping up to `branching` steps of its list (the paper's Game of 24 setting)
    paper = TreeOfThoughts(depth=4, width=5, branching=25, generate="propose", evaluate="value", n_evaluate=3,
                           select="greedy", stop_score=None)
    assert paper.max_calls == (1 + 5 + 5 + 5) * (1 + 25)  # the root alone at level 1, then a beam of 5


@pytest.mark.parametrize("kw, expected", [
    (dict(depth=3, width=2, branching=2), 24),
    (dict(), 3 * 2 * 3 * 2),
    (dict(generate="sample_n"), (1 + 2 + 2) * (1 + 3)),
    (dict(generate="propose"), (1 + 2 + 2) * (1 + 3)),
    (dict(evaluate="vote"), 3 * 2 * 3 + 3),
    (dict(generate="propose", evaluate="vote", synthesize=True), (1 + 2 + 2) + 3 + 1),
    (dict(scorer=lambda t, p: 5), 3 * 2 * 3),
    (dict(synthesize=True, n_evaluate=5), 3 * 2 * 3 * 2 + 1),
])
def test_max_calls_per_mode(kw, expected):
    assert TreeOfThoughts(**kw).max_calls == expected


@pytest.mark.parametrize("kw", [
    dict(), dict(generate="sample_n"), dict(generate="propose"), dict(evaluate="vote"), dict(generate="propose", evaluate="vote"),
    dict(generate="propose", synthesize=True, stop_score=None), dict(depth=4, width=5, branching=5, generate="propose", stop_score=None),
])
def test_calls_never_exceed_max_calls(kw):
    algo = TreeOfThoughts(**kw)
    out, client = run(go(algo, varied))
    assert out.status == Status.OK
    assert client.calls == out.calls <= algo.max_calls


# -- budget -----------------------------------------------------------------------------------------

def test_budget_cut_off_returns_the_best_so_far():
    out, client = run(go(TreeOfThoughts(depth=3, width=2, branching=2), budget=Budget(calls=5)))
    assert (out.status, out.calls, client.calls, out.state.exhausted) == (Status.BUDGET_EXHAUSTED, 5, 5, "calls")
    assert out.value["answer"] == "consider 8 / 3" and out.value["score"] == 6.0 and out.value["node"] == "n.1"
    assert out.state.algo.nodes["n.1.1"].status == "proposed"  # paid for, recorded, never evaluated


@pytest.mark.parametrize("calls", range(0, 22))
def test_every_budget_ends_cleanly_with_a_readable_result(calls):
    algo = TreeOfThoughts(depth=3, width=2, branching=3, generate="propose", stop_score=None)
    full, _ = run(go(algo, varied))
    out, client = run(go(TreeOfThoughts(depth=3, width=2, branching=3, generate="propose", stop_score=None), varied,
                         budget=Budget(calls=calls)))
    assert client.calls == out.calls <= calls
    if calls >= full.calls:
        assert out.status == Status.OK and out.value == full.value
    else:
        assert out.status == Status.BUDGET_EXHAUSTED
        assert set(out.value) == {"answer", "score", "path", "depth", "explored", "node", "stopped", "beam"}
        if out.value["node"] is not None:  # the best node found so far, with its chain
            assert out.value["path"] == out.state.algo.steps(out.value["node"])
        assert fold_run(out.log).algo == out.state.algo


def test_budget_during_the_first_level_reads_the_best_scored_candidate():
    out, _ = run(go(TreeOfThoughts(depth=2, width=2, branching=3, generate="propose"), varied, budget=Budget(calls=3)))
    s = out.state.algo
    scored = [i for i in s.candidates if s.nodes[i].score is not None]
    assert out.status == Status.BUDGET_EXHAUSTED and len(scored) == 2
    assert out.value["node"] == max(scored, key=lambda i: (s.nodes[i].score, -int(i.split(".")[1])))


# -- order independence, no call twice, prefixes, replay --------------------------------------------

CONFIGS = {
    "spec": (lambda: TreeOfThoughts(depth=3, width=2, branching=2), spec_model),
    "propose": (lambda: TreeOfThoughts(depth=3, width=2, branching=3, generate="propose", min_score=2, stop_score=None), varied),
    "sampled": (lambda: TreeOfThoughts(depth=3, width=3, branching=3, generate="propose", select="sample", stop_score=None), varied),
    "vote": (lambda: TreeOfThoughts(depth=3, width=2, branching=3, generate="propose", evaluate="vote", n_evaluate=3, stop_score=None), varied),
    "value_n": (lambda: TreeOfThoughts(depth=2, width=4, branching=3, generate="propose", n_evaluate=3, synthesize=True), varied),
}


def _content(request) -> tuple:
    return (request.role, request.n, tuple((m.role, m.content) for m in request.messages))


def assert_no_call_twice(out, client, algo):
    """What the model received is what the log says was asked, and nothing was asked twice: every evaluator
    request is distinct (a candidate is scored once), and a proposer request repeats only as the `branching`
    separate samples of one node in sample mode."""
    assert client.calls == len(client.requests) == out.calls, "the model received a different number of calls than the log records"
    logged = Counter(_content(LLMRequest.model_validate(e.data["request"])) for e in out.log if e.kind == "llm.request")
    received = Counter(_content(r) for r in client.requests)
    assert received == logged, "the model received requests the log does not record (or missed some)"
    for content, times in received.items():
        limit = algo.branching if content[0] == "proposer" and algo.generate == "sample" else 1
        assert times <= limit, f"a {content[0]} call was issued {times} times: {content[2][-1][1][:80]!r}"


def test_the_no_call_twice_check_can_fail():
    "A run replayed into a second run's client doubles what that client received: the check catches it."
    make, fn = CONFIGS["propose"]
    out, client = run(go(make(), fn))
    assert_no_call_twice(out, client, make())
    twice = FakeLLMClient(fn)
    for r in client.requests * 2: run(twice.complete(r))
    with pytest.raises(AssertionError, match="different number of calls"):
        assert_no_call_twice(out, twice, make())
    doubled = SimpleNamespace(calls=out.calls, requests=client.requests[:-1] + client.requests[:1])
    with pytest.raises(AssertionError, match="does not record"):
        assert_no_call_twice(out, doubled, make())


@pytest.mark.parametrize("name", list(CONFIGS))
def test_completion_order_changes_nothing(name):
    make, fn = CONFIGS[name]
    outs = [run(go(make(), jittered(fn, seed))) for seed in range(12)]
    first, _ = outs[0]
    assert first.status == Status.OK
    for out, client in outs:
        assert out.value == first.value
        assert out.state.algo == first.state.algo
        assert out.calls == first.calls == client.calls
        assert_no_call_twice(out, client, make())
        assert [e.kind for e in out.log if e.kind.startswith("tot.")] == [e.kind for e in first.log if e.kind.startswith("tot.")]


def test_parallel_false_issues_calls_one_at_a_time_with_the_same_result():
    def tracked():
        live = {"now": 0, "max": 0}

        async def model(request):
            live["now"] += 1; live["max"] = max(live["max"], live["now"])
            await asyncio.sleep(0.001)
            live["now"] -= 1
            return varied(request)
        return FakeLLMClient(model), live

    seq_client, seq = tracked()
    par_client, par = tracked()
    kw = dict(depth=3, width=2, branching=3, stop_score=None)
    one, _ = run(go(TreeOfThoughts(parallel=False, **kw), seq_client))
    many, _ = run(go(TreeOfThoughts(parallel=True, **kw), par_client))
    assert seq["max"] == 1 and par["max"] > 1
    assert one.value == many.value and one.state.algo == many.state.algo and one.calls == many.calls


def test_parallel_false_stops_issuing_at_the_budget():
    out, client = run(go(TreeOfThoughts(depth=3, width=2, branching=3, parallel=False, generate="propose"), varied, budget=Budget(calls=2)))
    assert (out.status, client.calls) == (Status.BUDGET_EXHAUSTED, 2)


def test_prefixes_fold_to_the_state_the_stepper_shows():
    make, fn = CONFIGS["propose"]
    out, _ = run(go(make(), fn))
    log = out.log
    algo = TreeOfThoughts.from_config(out.state.config)
    previous_nodes = 0
    for k in range(len(log) + 1):
        st = fold_run(log[:k], algo).algo
        assert fold_run(log[:k]).algo == (st if k else None)  # the log alone says which algorithm to fold with
        assert len(st.nodes) >= previous_nodes; previous_nodes = len(st.nodes)
        algo.result(st)  # readable at every step
        if k and log[k - 1].kind == "tot.selected":
            assert st.beam == log[k - 1].data["beam"]
            assert all(st.nodes[i].status in ("kept", "final") for i in st.beam)
            assert st.winner is None
        if k and log[k - 1].kind == "tot.level_started":
            assert st.level == log[k - 1].data["level"] and st.candidates == log[k - 1].data["carried"]
    assert fold_run(log).algo == out.state.algo
    assert fold_run(log[:0], algo).algo == ToTState()


def test_replay_calls_the_model_zero_times():
    make, fn = CONFIGS["value_n"]
    first, _ = run(go(make(), fn))
    again, silent = run(go(make(), fn, replay=first.log))
    assert silent.calls == 0 and again.sent == {} and again.served["llm"] == first.calls
    assert again.value == first.value and again.state.algo == first.state.algo


def test_a_budget_cut_run_resumes_from_its_log():
    make, fn = CONFIGS["propose"]
    full, _ = run(go(make(), fn))
    cut, _ = run(go(make(), fn, budget=Budget(calls=7)))
    resumed, client = run(go(make(), fn, replay=cut.log))
    assert resumed.value == full.value and resumed.state.algo == full.state.algo
    assert client.calls == full.calls - 7 and resumed.served["llm"] == 7


def test_sampled_selection_is_seeded():
    make, fn = CONFIGS["sampled"]
    beams = {}
    for seed in range(6):
        a, _ = run(go(make(), fn, seed=seed))
        b, _ = run(go(make(), jittered(fn, 99), seed=seed))
        assert a.state.algo == b.state.algo
        beams[seed] = a.state.algo.winner_path
    assert len({tuple(v) for v in beams.values()}) > 1  # the seed matters


# -- the frozen log ---------------------------------------------------------------------------------

FROZEN = FIXTURES / "tot_v0.1.jsonl"
EXPECTED = FIXTURES / "tot_v0.1.expected.json"


def _frozen_run():
    "The run frozen in the fixture: duplicates, a failed proposal, a malformed score, min_score and beam pruning, synthesis."
    scores = {"a": "score: 6", "b": "4/10", "oops": "I am not sure.", "c": '{"score": 8}', "d": "30%",
              "FINAL: 8 * 3": "0.7/1", "FINAL: 24": '{"score": 10}'}

    def model(request):
        if request.role == "synthesizer": return text("FINAL: 24")
        if request.role == "evaluator": return text(scores[last_step(request)])
        if last_step(request) == "b": raise RuntimeError("proposer down")
        return text({"": "a\nb\nb\noops", "a": "c\nd\nFINAL: 8 * 3"}.get(last_step(request), "FINAL: 24"))
    return run(go(TreeOfThoughts(depth=3, width=2, branching=4, generate="propose", min_score=1, synthesize=True), model))


def _snapshot(out):
    return {"value": out.value, "state": json.loads(json.dumps(asdict(out.state.algo), default=lambda m: m.model_dump()))}


def freeze():
    "Write the fixture (once, by hand: `python tests/test_tot.py`); the tests then compare against it."
    out, _ = _frozen_run()
    out.log.write(FROZEN)
    EXPECTED.write_text(json.dumps(_snapshot(out), indent=1) + "\n")


def test_frozen_log_folds_to_the_same_state():
    log = Log.read(FROZEN)
    state = fold_run(log)
    algo = TreeOfThoughts.from_config(state.config)
    got = {"value": algo.result(state.algo), "state": _snapshot(SimpleNamespace(value=None, state=state))["state"]}
    expected = json.loads(EXPECTED.read_text())
    assert got["value"] == expected["value"]
    assert got["state"] == expected["state"]
    assert state.status == "ok"


def test_the_frozen_run_is_still_what_the_code_does():
    out, _ = _frozen_run()
    assert _snapshot(out) == json.loads(EXPECTED.read_text())
    s = out.state.algo
    reasons = {n.reason for n in s.nodes.values()}
    assert {"duplicate", "min_score", "beam_capacity"} <= reasons
    assert s.failures and s.synthesized == "24" and out.value["answer"] == "24"
    assert any(n.how == "malformed" for n in s.nodes.values())


# -- degraded models --------------------------------------------------------------------------------

def test_a_flaky_evaluator_degrades_the_search():
    def model(request):
        u = user_of(request)
        if request.role == "evaluator":
            if "FINAL" in u: return text("9" if "step 2" in u else "8")
            if last_step(request) == "step 0": raise RuntimeError("evaluator timed out")
            if last_step(request) == "step 1": return text("hmm, hard to say")
            return text("8")
        return text("\n".join(["step 0", "step 1", "step 2"]) if depth_of(request) == 0 else "FINAL: 5")
    out, _ = run(go(TreeOfThoughts(depth=2, width=2, branching=3, generate="propose"), model))
    s = out.state.algo
    assert out.status == Status.PARTIAL and out.value["answer"] == "5"
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named
    assert [(s.nodes[i].how, s.nodes[i].score) for i in ("n.1", "n.2", "n.3")] == [("failed", None), ("malformed", 0.0), ("parsed", 8.0)]
    assert s.nodes["n.3"].status == "kept" and s.winner_path[:2] == ["n", "n.3"]
    # the failed call skips its candidate (it never enters the beam, though width 2 had room); the malformed one counts 0
    assert (s.nodes["n.1"].status, s.nodes["n.1"].reason) == ("pruned", "evaluation_failed")
    assert s.nodes["n.2"].status == "kept" and "n.1" not in s.beam and s.children("n.1") == []
    assert [e.data for e in out.log if e.kind == "tot.evaluation_failed"] == [
        {"node": "n.1", "level": 1, "error": "RuntimeError: evaluator timed out"}]


def test_a_failed_evaluation_never_enters_the_beam_even_alone():
    "width 1, two candidates: the one whose evaluation failed would win on tree order with a score of 0; it is skipped."
    def model(request):
        if request.role == "evaluator":
            if last_step(request) == "first": raise RuntimeError("evaluator down")
            return text('{"score": 0}')
        return text("first\nsecond" if depth_of(request) == 0 else "FINAL: 3")
    out, _ = run(go(TreeOfThoughts(depth=1, width=1, branching=2, generate="propose"), model))
    s = out.state.algo
    assert s.beam == ["n.2"] and out.value["node"] == "n.2" and s.nodes["n.1"].reason == "evaluation_failed"
    assert out.status == Status.PARTIAL
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named


def test_every_evaluation_of_a_level_failing_ends_with_an_empty_beam():
    "Proposals were usable, so the run does not fail: it stops as min_score would, with the last beam's best."
    def model(request):
        if request.role == "evaluator":
            if depth_of(request) == 2: raise RuntimeError("evaluator down")
            return text("6")
        return text("a step")
    out, _ = run(go(TreeOfThoughts(depth=3, width=1, branching=1), model))
    s = out.state.algo
    assert (out.status, s.stopped, out.value["node"], out.value["answer"]) == (Status.PARTIAL, "empty_beam", "n.1", "a step")
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named
    assert (s.nodes["n.1.1"].status, s.nodes["n.1.1"].reason) == ("pruned", "evaluation_failed")
    first, _ = run(go(TreeOfThoughts(depth=3, width=1, branching=1), lambda r: (_ for _ in ()).throw(RuntimeError("down"))
                      if r.role == "evaluator" else text("a step")))
    assert first.status == Status.NO_SOLUTION and first.state.algo.stopped == "empty_beam" and first.value["answer"] is None
    assert [e.data for e in first.log if e.kind == "tot.empty_beam"] == [{"level": 1, "evaluation_failed": 1}]


def test_a_failed_vote_skips_the_new_candidates_and_carried_answers_keep_their_score():
    def model(request):
        if request.role == "evaluator":
            if "go on" in user_of(request) and "FINAL: 2" in user_of(request): raise RuntimeError("voter down")
            return text("The best choice is 2")  # level 1: "go on" gets the vote, the answer "FINAL: 1" waits in the beam
        return text("FINAL: 1\ngo on" if depth_of(request) == 0 else "FINAL: 2")
    out, _ = run(go(TreeOfThoughts(depth=2, width=2, branching=2, generate="propose", evaluate="vote", stop_score=None), model))
    s = out.state.algo
    assert (s.nodes["n.2.1"].status, s.nodes["n.2.1"].reason, s.nodes["n.2.1"].score) == ("pruned", "evaluation_failed", None)
    assert (s.nodes["n.1"].score, s.nodes["n.1"].status) == (0.0, "final")  # the carried answer keeps its level-1 score
    assert out.status == Status.PARTIAL and out.value["answer"] == "1" and s.beam == ["n.1"]
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named


def test_failed_proposals_are_skipped():
    calls = {"n": 0}

    def model(request):
        if request.role == "proposer":
            calls["n"] += 1
            if "Write the first step" in user_of(request) and calls["n"] % 2: raise RuntimeError("rate limited")
            return text("FINAL: 1" if depth_of(request) else "think")
        return text("7")
    out, _ = run(go(TreeOfThoughts(depth=2, width=2, branching=3, parallel=False), model))
    s = out.state.algo
    assert out.status == Status.PARTIAL and out.value["answer"] == "1"
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named
    assert [f["parent"] for f in s.failures] == ["n", "n"] and all("rate limited" in f["error"] for f in s.failures)
    assert "n.1" not in s.nodes and "n.2" in s.nodes  # ids stay positional: a failed sample leaves a gap


def test_a_level_without_usable_proposals_fails_clearly():
    def model(request):
        if request.role == "proposer" and depth_of(request) == 1: raise RuntimeError("down")
        return text("6" if request.role == "evaluator" else "a step")
    out, _ = run(go(TreeOfThoughts(depth=3, width=2, branching=2), model))
    assert out.status == Status.FAILED
    assert "level 2 has no usable proposals (2 calls failed or came back empty)" in out.error
    assert out.state.algo.stopped == "no_thoughts"
    assert out.value["answer"] == "a step" and out.value["node"] == "n.1"  # best so far
    assert [e.kind for e in out.log if e.kind.startswith("tot.")][-1] == "tot.no_thoughts"


def test_empty_replies_are_not_thoughts():
    out, _ = run(go(TreeOfThoughts(depth=1, width=1, branching=2), lambda r: text("   ")))
    assert out.status == Status.FAILED and "level 1 has no usable proposals" in out.error
    assert out.value["answer"] is None


def test_missing_task_is_a_clear_error():
    out, client = run(go(TreeOfThoughts(), spec_model, inp={"question": "?"}))
    assert out.status == Status.FAILED and "needs input['task']" in out.error and client.calls == 0


# -- pruning, stopping, winners ---------------------------------------------------------------------

def test_min_score_prunes_even_when_the_beam_has_room():
    def model(request):
        if request.role == "evaluator": return text("2" if "weak" in user_of(request) else "6")
        return text("strong\nweak" if depth_of(request) == 0 else "FINAL: done")
    out, _ = run(go(TreeOfThoughts(depth=2, width=5, branching=2, generate="propose", min_score=3), model))
    s = out.state.algo
    assert (s.nodes["n.2"].status, s.nodes["n.2"].reason) == ("pruned", "min_score")
    assert s.nodes["n.1"].status == "kept" and "n.2.1" not in s.nodes
    pruned = [e.data for e in out.log if e.kind == "tot.pruned"]
    assert pruned[0] == {"node": "n.2", "reason": "min_score", "score": 2.0}


def test_min_score_can_empty_the_beam():
    def model(request):
        if request.role == "evaluator": return text("2" if depth_of(request) == 2 else "6")
        return text("a step")
    out, _ = run(go(TreeOfThoughts(depth=3, width=1, branching=1, min_score=5), model))
    assert out.status == Status.OK and out.state.algo.stopped == "empty_beam"
    assert out.value["node"] == "n.1" and out.value["answer"] == "a step"  # the last level that kept something
    first, _ = run(go(TreeOfThoughts(depth=3, width=1, branching=1, min_score=7), model))
    assert first.status == Status.NO_SOLUTION and first.value["answer"] is None and first.value["explored"] == 1


def test_stop_score_stops_early_and_none_disables_it():
    def model(request):
        return text("9.5/10" if request.role == "evaluator" else f"step at depth {depth_of(request)}")
    early, _ = run(go(TreeOfThoughts(depth=3, width=1, branching=1, stop_score=9.0), model))
    assert early.state.algo.stopped == "stop_score" and early.value["depth"] == 1 and early.calls == 2
    assert [e.data["reason"] for e in early.log if e.kind == "tot.solved"] == ["stop_score"]
    full, _ = run(go(TreeOfThoughts(depth=3, width=1, branching=1, stop_score=None), model))
    assert full.state.algo.stopped == "last_level" and full.value["depth"] == 3 and full.calls == 6
    assert full.value["answer"] == "step at depth 2"  # no complete answer: the winner's last step


def test_a_complete_answer_waits_in_the_beam_and_is_not_expanded():
    def model(request):
        u = user_of(request)
        if request.role == "evaluator": return text({"FINAL: 41": "7", "explore": "8"}.get(last_step(request), "3"))
        return text("explore\nFINAL: 41" if depth_of(request) == 0 else "dead end")
    out, _ = run(go(TreeOfThoughts(depth=3, width=2, branching=2, generate="propose", stop_score=None), model))
    s = out.state.algo
    assert out.value["answer"] == "41" and out.value["node"] == "n.2" and out.value["score"] == 7.0
    assert s.children("n.2") == []  # a complete answer is never expanded
    started = [e.data for e in out.log if e.kind == "tot.level_started"]
    assert started[1] == {"level": 2, "frontier": ["n.1"], "carried": ["n.2"]}
    assert s.nodes["n.2"].status == "final" and s.nodes["n.1.1"].status == "kept"


def test_greedy_ties_break_in_tree_order():
    out, _ = run(go(TreeOfThoughts(depth=1, width=2, branching=4, generate="propose"),
                    lambda r: text("5" if r.role == "evaluator" else "a\nb\nc\nd")))
    assert out.state.algo.beam == ["n.1", "n.2"]
    assert [e.data["node"] for e in out.log if e.kind == "tot.pruned"] == ["n.3", "n.4"]


# -- scorer, synthesis, models per role, modes, hooks -----------------------------------------------

def test_a_code_scorer_replaces_every_evaluator_call():
    seen = []

    async def scorer(task, path):
        seen.append(tuple(path))
        return 10 if path[-1].startswith("FINAL") else 4.5 if path[-1].endswith("0") else 0
    out, client = run(go(TreeOfThoughts(depth=3, width=2, branching=3, generate="propose", scorer=scorer), varied))
    s = out.state.algo
    assert {r.role for r in client.requests} == {"proposer"} and not any(k.endswith("/score") for k in keys_of(out))
    assert {n.how for n in s.nodes.values() if n.how} == {"code"} and {4.5, 0.0} <= {n.score for n in s.nodes.values()}
    assert out.value["score"] == 10.0 and out.value["answer"].isdigit()
    assert len(seen) == len([n for n in s.nodes.values() if n.how]) and all(len(p) == 1 for p in seen[:3])


def test_a_scorer_that_raises_fails_the_run_and_keeps_the_best_so_far():
    def scorer(task, path): raise ZeroDivisionError("bug in my scorer")
    out, client = run(go(TreeOfThoughts(scorer=scorer), spec_model))
    assert out.status == Status.FAILED and "bug in my scorer" in out.error
    assert "scorer scorer raised ZeroDivisionError on node n.1" in out.error
    # three proposals were paid for: the result is read from the state (the first unscored one), not lost
    assert client.calls == 3
    assert (out.value["answer"], out.value["path"], out.value["node"], out.value["score"]) == ("consider 8 / 3", ["consider 8 / 3"], "n.1", None)


def test_a_scorer_failing_on_a_later_level_keeps_the_last_beam():
    def scorer(task, path):
        if len(path) == 2: raise KeyError("missing")
        return 6
    out, _ = run(go(TreeOfThoughts(depth=3, width=2, branching=2, stop_score=None, scorer=scorer), spec_model))
    assert out.status == Status.FAILED and out.value["node"] == "n.1" and out.value["score"] == 6.0


@pytest.mark.parametrize("value", [50, 10.5, -1, "0.7", "7", None, True, float("nan"), [7]])
def test_a_scorer_must_return_a_number_from_0_to_10(value):
    def my_scorer(task, path): return value
    out, _ = run(go(TreeOfThoughts(depth=2, width=1, branching=1, scorer=my_scorer), spec_model))
    assert out.status == Status.FAILED
    assert f"scorer my_scorer returned {value!r} for node n.1; a scorer returns a number from 0 to 10" in out.error
    assert out.value["answer"] == "consider 8 / 3" and out.value["score"] is None


@pytest.mark.parametrize("value", [0, 0.7, 7, 10, 10.0])
def test_a_scorers_number_is_taken_as_it_is(value):
    out, _ = run(go(TreeOfThoughts(depth=1, width=1, branching=1, scorer=lambda t, p: value), spec_model))
    assert out.status == Status.OK and out.value["score"] == float(value) and out.state.algo.nodes["n.1"].how == "code"


def test_synthesis_writes_the_answer_in_one_more_call():
    def model(request):
        if request.role == "synthesizer":
            assert "\n3. FINAL: (8 / (3 - 8 / 3))" in user_of(request)
            return text("8 / (3 - 8/3) = 24")
        return spec_model(request)
    algo = TreeOfThoughts(depth=3, width=2, branching=2, synthesize=True)
    out, client = run(go(algo, model))
    assert algo.max_calls == 25 and out.calls == 10
    assert out.value["answer"] == "8 / (3 - 8/3) = 24" and out.state.algo.synthesized == "8 / (3 - 8/3) = 24"
    assert keys_of(out)[-1] == "tot/n.1.1.1/synthesize" and client.requests[-1].role == "synthesizer"


def test_a_failed_synthesis_keeps_the_raw_answer():
    def model(request):
        if request.role == "synthesizer": raise RuntimeError("no")
        return spec_model(request)
    out, _ = run(go(TreeOfThoughts(depth=3, width=2, branching=2, synthesize=True), model))
    assert out.status == Status.PARTIAL and out.value["answer"] == "(8 / (3 - 8 / 3))"
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named
    assert [e.data for e in out.log if e.kind == "tot.synthesized"] == [{"node": "n.1.1.1", "answer": None, "error": "RuntimeError: no"}]


def test_each_role_goes_to_its_own_model():
    big = FakeLLMClient(lambda r: spec_model(r) if r.role != "synthesizer" else text("done"))
    small = FakeLLMClient(spec_model)
    algo = TreeOfThoughts(depth=3, width=2, branching=2, synthesize=True, proposer_model="big-model",
                          evaluator_model="small-model", synthesizer_model="big-model", temperature=0.7)
    async def main():
        async with Engine() as engine:
            LLMHandler(routes={"big-model": big, "small-model": small}).attach(engine)
            return await engine.run(algo, TASK)
    out = run(main())
    assert out.status == Status.OK and out.value["answer"] == "done"
    assert {(r.role, r.model) for r in small.requests} == {("evaluator", "small-model")}
    assert {(r.role, r.model) for r in big.requests} == {("proposer", "big-model"), ("synthesizer", "big-model")}
    assert (small.calls, big.calls) == (3, 7) and {r.temperature for r in big.requests + small.requests} == {0.7}


def test_role_routes_without_model_strings():
    proposer, evaluator = FakeLLMClient(spec_model), FakeLLMClient(spec_model)
    async def main():
        async with Engine() as engine:
            LLMHandler(routes={"proposer": proposer, "evaluator": evaluator}).attach(engine)
            return await engine.run(TreeOfThoughts(depth=3, width=2, branching=2), TASK)
    out = run(main())
    assert out.value["score"] == 10.0 and (proposer.calls, evaluator.calls) == (6, 3)


def test_propose_mode_one_call_lists_the_steps():
    out, client = run(go(TreeOfThoughts(depth=2, width=2, branching=3, generate="propose", stop_score=None), varied))
    s = out.state.algo
    expands = [k for k in keys_of(out) if k.endswith("/expand")]
    first_beam = next(e.data["beam"] for e in out.log if e.kind == "tot.selected")
    assert expands == ["tot/n/expand", *[f"tot/{i}/expand" for i in first_beam]]
    assert len(s.children("n")) == 3 and all("List up to 3" in user_of(r) for r in client.requests if r.role == "proposer")
    assert all("one per line" in system_of(r) for r in client.requests if r.role == "proposer")


def test_propose_mode_keeps_at_most_branching_lines():
    out, _ = run(go(TreeOfThoughts(depth=1, width=1, branching=2, generate="propose"),
                    lambda r: text("5" if r.role == "evaluator" else "1. a\n2. b\n3. c\n4. d")))
    assert [n.text for n in out.state.algo.nodes.values()][1:] == ["a", "b"]


def test_sample_n_mode_one_call_with_n_samples():
    counter = iter(range(1000))
    def model(request):
        return text("6") if request.role == "evaluator" else text(f"idea {next(counter)}")
    out, client = run(go(TreeOfThoughts(depth=2, width=2, branching=3, generate="sample_n", stop_score=None), model))
    props = [r for r in client.requests if r.role == "proposer"]
    assert [r.n for r in props] == [3, 3, 3] and len(out.state.algo.nodes) == 1 + 3 + 6
    assert keys_of(out)[0] == "tot/n/expand"


def test_vote_mode_one_call_per_level_and_shares_of_votes():
    def model(request):
        if request.role == "evaluator":
            assert "Choice 1:" in user_of(request) and "best choice is K" in system_of(request)
            return text("The best choice is 2") if request.n and "Choice 3" in user_of(request) else text("best choice is 1")
        return text("x\ny\nz" if depth_of(request) == 0 else "FINAL: from " + user_of(request).split("\n1. ")[1].split("\n")[0])
    out, client = run(go(TreeOfThoughts(depth=2, width=1, branching=3, generate="propose", evaluate="vote", n_evaluate=4, stop_score=None), model))
    s = out.state.algo
    votes = [r for r in client.requests if r.role == "evaluator"]
    assert [r.n for r in votes] == [4, 4] and [k for k in keys_of(out) if "vote" in k] == ["tot/level.1/vote", "tot/level.2/vote"]
    assert [(s.nodes[i].votes, s.nodes[i].score) for i in ("n.1", "n.2", "n.3")] == [(0, 0.0), (4, 10.0), (0, 0.0)]
    assert out.value["answer"] == "from y"


def test_vote_mode_votes_again_on_carried_answers():
    def model(request):
        u = user_of(request)
        if request.role == "evaluator":
            blocks = re.split(r"Choice \d+:", u)[1:]
            pick = next((i for i, b in enumerate(blocks) if "FINAL: 2" in b), None)
            if pick is None: pick = next(i for i, b in enumerate(blocks) if "go on" in b)
            return text(f"The best choice is {pick + 1}")
        return text("FINAL: 1\ngo on" if depth_of(request) == 0 else "FINAL: 2")
    out, _ = run(go(TreeOfThoughts(depth=2, width=2, branching=2, generate="propose", evaluate="vote", stop_score=None), model))
    s = out.state.algo
    votes = [e.data for e in out.log if e.kind == "tot.evaluated"]
    assert [v["node"] for v in votes] == ["n.1", "n.2", "n.1", "n.2.1"]  # the carried answer n.1 is voted on again
    assert out.value["answer"] == "2" and s.nodes["n.1"].status == "final"


def test_prompt_hooks_plug_in_without_subclassing():
    hooks = {
        "step_prompt": lambda task, path: LLMRequest(messages=[user(f"<{task}> after {len(path)} steps")], stop=["\n"]),
        "value_prompt": lambda task, path: [user(f"judge {path[-1]}")],
        "parse_value": lambda task, path, texts: 10.0 if texts[0] == "yes" else 0.0,
        "final_answer": lambda step: step[len("ANSWER "):] if step.startswith("ANSWER ") else None,
    }
    def model(request):
        u = request.messages[-1].content
        if u.startswith("judge"): return text("yes" if "ANSWER" in u else "no")
        return text("ANSWER 42" if "after 1 steps" in u else "warm up")
    out, client = run(go(TreeOfThoughts(depth=3, width=1, branching=1, prompts=hooks, min_score=0), model))
    assert out.value["answer"] == "42" and out.value["depth"] == 2
    first = client.requests[0]
    assert first.stop == ["\n"] and first.role == "proposer" and [m.role for m in first.messages] == ["user"]
    ns = SimpleNamespace(**hooks)
    again, _ = run(go(TreeOfThoughts(depth=3, width=1, branching=1, prompts=ns), model))
    assert again.value == out.value


def test_system_prompt_overrides():
    seen = []
    def model(request):
        seen.append((request.role, system_of(request)))
        return spec_model(request) if request.role == "proposer" else text("10")
    run(go(TreeOfThoughts(depth=1, width=1, branching=1, synthesize=True, proposer_prompt="P!", evaluator_prompt="E!",
                          synthesizer_prompt="S!"), model))
    assert seen == [("proposer", "P!"), ("evaluator", "E!"), ("synthesizer", "S!")]


def test_config_round_trips_through_the_log():
    algo = TreeOfThoughts(depth=4, width=3, branching=2, stop_score=None, min_score=2.5, generate="propose", evaluate="vote",
                          select="sample", n_evaluate=5, synthesize=True, temperature=0.5, evaluator_model="m",
                          prompts={"value_prompt": str})
    again = TreeOfThoughts.from_config(algo.config())
    assert "prompts" not in algo.config() and "scorer" not in TreeOfThoughts(scorer=len).config()  # functions are not logged
    assert again.config() == algo.config() | {"prompts": None} and again.max_calls == algo.max_calls


# -- parse_score ------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, score", [
    ("7", 7.0), ("7/10", 7.0), ("40%", 4.0), ('{"score": 7}', 7.0), ("Score = 8/10, a good step", 8.0), ("**9**", 9.0),
    ("3/5", 6.0), ("1", 1.0), ("0", 0.0),
    # a number is read on the 0-10 scale as written: 1.0 is 1, 0.7 is 0.7, never 10 and 7
    ("1.0", 1.0), ('{"score": 1.0}', 1.0), ('{"score": 1}', 1.0), ("0.7", 0.7), ("score: 0.7", 0.7), ('{"score": 0.7}', 0.7),
    ('{"score": 9.0}', 9.0), ('{"score": "1.0"}', 1.0),
    # ... unless the reply says its scale
    ("0.7/1", 7.0), ("score: 0.7 out of 1", 7.0), ("7 out of 10", 7.0), ("Rating: 3 out of 5", 6.0), ('{"score": "0.7/1"}', 7.0),
    ("1.0/1", 10.0), ("70.5%", 7.05), ("2 out of 1", None), ("5 out of 0", None),
    ("10", 10.0), ("7.5", 7.5), ('Reasoning...\n```json\n{"score": 6, "why": "ok"}\n```', 6.0), ("rating: 95%", 9.5),
    ("11", None), ("-1", None), ("12/10", None), ("7/0", None), ("200%", None), ("promising", None), ("", None), (None, None),
    ('{"score": "high"}', None), ('{"grade": 7}', None),
])
def test_parse_score(reply, score):
    assert parse_score(reply) == score


@pytest.mark.parametrize("reply, score", [
    ("0.7", 7.0), ("1.0", 10.0), ("1", 10.0), ('{"score": 0.95}', 9.5), ("score: 0.3", 3.0), ("0", 0.0),
    ("7/10", 7.0), ("40%", 4.0), ("0.7 out of 1", 7.0),  # an explicit scale wins over the option
    ("7", None), ('{"score": 7}', None), ("1.5", None),  # outside 0-1: malformed
])
def test_parse_score_on_a_0_1_scale(reply, score):
    assert parse_score(reply, scale=1) == score


def test_parse_score_rejects_a_bad_scale():
    with pytest.raises(ValueError, match="scale = 0 must be a positive number"):
        parse_score("7", scale=0)


def test_a_model_always_answering_score_1_0_does_not_stop_the_search():
    "The default evaluator prompt asks for JSON 0-10; {\"score\": 1.0} is a low score, not a perfect one."
    def model(request):
        return text('{"score": 1.0}') if request.role == "evaluator" else text(f"step {depth_of(request)}")
    out, _ = run(go(TreeOfThoughts(), model))
    assert out.state.algo.stopped == "last_level" and out.value["score"] == 1.0 and out.value["depth"] == 3


def test_score_scale_reads_an_evaluator_that_answers_0_to_1():
    def model(request):
        if request.role == "evaluator":
            assert "to 1 (certainly right" in system_of(request) and "<0-1>" in system_of(request)
            return text('{"score": 0.95}' if "FINAL" in user_of(request) else '{"score": 0.6}')
        return spec_model(request)
    algo = TreeOfThoughts(depth=3, width=2, branching=2, score_scale=1.0)
    out, _ = run(go(algo, model))
    assert out.value["answer"] == "(8 / (3 - 8 / 3))" and out.value["score"] == 9.5 and out.state.algo.nodes["n.1"].score == 6.0
    assert TreeOfThoughts.from_config(algo.config()).score_scale == 1.0
    # a prompts object without parse_value still gets the scale; the default prompt at scale 10 is unchanged
    hooked, _ = run(go(TreeOfThoughts(depth=3, width=2, branching=2, score_scale=1, prompts={"synthesize_prompt": None}), model))
    assert hooked.value == out.value


if __name__ == "__main__":
    freeze()


# -- a scripted model that reads the effect key (contract item 4): sibling samples can differ ---------------

def test_a_two_argument_script_tells_identical_sibling_requests_apart_by_key():
    def by_key(request, key):  # key: "tot/n.1.2/propose" for a step, "tot/n.1.2/score" for its value
        node = key.split("/")[1]
        if request.role == "evaluator": return text(json.dumps({"score": 9.5 if node.endswith(".3") else 5}))
        return text(f"step from {node}")
    tot = TreeOfThoughts(depth=2, width=2, branching=3, stop_score=None)
    out, client = run(go(tot, FakeLLMClient(by_key)))
    s = out.state.algo
    assert out.status == Status.OK
    root_kids = s.children("n")
    assert [s.nodes[i].text for i in root_kids] == ["step from n.1", "step from n.2", "step from n.3"]
    assert not any(n.reason == "duplicate" for n in s.nodes.values())  # a one-argument script would make them duplicates
    assert s.beam[0].endswith(".3") and out.value["answer"] == f"step from {s.beam[0]}"
    one_arg, _ = run(go(tot, FakeLLMClient(lambda r: text("same step") if r.role != "evaluator" else text('{"score": 5}'))))
    assert sum(n.reason == "duplicate" for n in one_arg.state.algo.nodes.values()) > 0


# -- duplicates="zero": the paper's code keeps a repeated chain as a candidate valued 0 (no call) --------------

def test_duplicates_zero_keeps_repeats_scored_0_without_a_call_and_prune_drops_them():
    def repeats(request):
        if request.role == "evaluator": return text('{"score": 7}')
        return text("a\nb\na")  # the model lists "a" twice
    calls = {}
    for mode in ("prune", "zero"):
        tot = TreeOfThoughts(depth=2, width=3, branching=3, generate="propose", stop_score=None, duplicates=mode)
        out, client = run(go(tot, repeats))
        s = out.state.algo
        assert out.status == Status.OK and out.calls <= tot.max_calls
        dup = s.nodes["n.3"]
        assert dup.duplicate_of == "n.1"
        if mode == "prune": assert (dup.status, dup.reason) == ("pruned", "duplicate") and "n.3" not in s.candidates
        else: assert (dup.score, dup.how) == (0.0, "duplicate") and s.nodes["n.3"].status == "kept"  # fills the beam's third place
        assert not any(e.key == "tot/n.3/score" for e in out.log if e.kind == "llm.request")  # a repeat is never scored by a call
        calls[mode] = out.calls
    assert calls["zero"] == calls["prune"] + 1  # the kept repeat is expanded: one more proposal call, as the paper's code spends
    with pytest.raises(ValueError, match="TreeOfThoughts: duplicates must be one of 'prune', 'zero', got 'keep'"):
        TreeOfThoughts(duplicates="keep")


def test_ties_go_to_the_child_of_the_better_parent_as_in_the_papers_code():
    "The paper sorts a level's candidates by value keeping their order, and they come best parent first."
    def model(request):
        u = user_of(request)
        if request.role == "evaluator": return text("8" if u.rstrip().endswith("b\n\nHow promising is the last step?") and depth_of(request) == 1
                                                     else "6" if depth_of(request) == 1 else "5")
        return text("a\nb" if depth_of(request) == 0 else "c\nd")
    algo = TreeOfThoughts(depth=2, width=2, branching=2, generate="propose", stop_score=None)
    out, _ = run(go(algo, model))
    s = out.state.algo
    assert [e.data["beam"] for e in out.log if e.kind == "tot.selected"] == [["n.2", "n.1"], ["n.2.1", "n.2.2"]]
    assert s.nodes["n.1.1"].reason == "beam_capacity" and s.nodes["n.2.1"].score == s.nodes["n.1.1"].score == 5.0


def test_a_hook_that_keeps_every_line_gets_every_line_as_a_step_as_the_papers_code():
    "The paper's code splits a proposal reply on newlines and keeps every line, empty ones too; a hook can do the same."
    def model(request):
        if request.role == "evaluator": return text("5")
        return text("a\n\nb\n")  # 4 lines: 'a', '', 'b', ''
    verbatim = {"parse_steps": lambda task, path, text, k: text.split("\n")[:k]}
    out, client = run(go(TreeOfThoughts(depth=1, width=5, branching=25, generate="propose", duplicates="zero",
                                        prompts=verbatim, stop_score=None), model))
    s = out.state.algo
    assert [s.nodes[i].text for i in s.children("n")] == ["a", "", "b", ""]
    assert s.nodes["n.4"].duplicate_of == "n.2" and s.nodes["n.4"].score == 0.0  # a repeat scores 0 without a call
    assert client.calls == out.calls == 1 + 3
    default, _ = run(go(TreeOfThoughts(depth=1, width=5, branching=25, generate="propose", stop_score=None), model))
    assert [default.state.algo.nodes[i].text for i in default.state.algo.children("n")] == ["a", "b"]  # the default drops empty lines


def test_finals_expand_runs_every_level_as_the_papers_breadth_first_search():
    "The paper's BFS has no complete answers: every node of the beam is expanded and the search runs all its levels."
    def model(request):
        if request.role == "evaluator": return text("9" if "FINAL" in last_step(request) else "5")
        return text("FINAL: 24\nstep" if depth_of(request) == 0 else "FINAL: 25\nmore")
    kw = dict(depth=3, width=2, branching=2, generate="propose", stop_score=None)
    kept, _ = run(go(TreeOfThoughts(**kw), model))
    assert kept.state.algo.stopped == "final" and kept.value["answer"] == "24" and kept.calls == 1 + 2
    algo = TreeOfThoughts(**kw, finals="expand")
    out, client = run(go(algo, model))
    s = out.state.algo
    assert s.stopped == "last_level" and s.children("n.1") == ["n.1.1", "n.1.2"]  # the complete answer was expanded
    assert [e.data["carried"] for e in out.log if e.kind == "tot.level_started"] == [[], [], []]
    assert out.calls == client.calls == (1 + 2 + 2) * (1 + 2) == algo.max_calls
    assert out.log[0].data["config"]["finals"] == "expand" and s.settings["finals"] == "expand"
    with pytest.raises(ValueError, match="finals must be one of 'keep', 'expand', got 'stop'"):
        TreeOfThoughts(finals="stop")


# -- what a small model writes -------------------------------------------------------------------------

@pytest.mark.parametrize("reply, score", [
    ("Score: 7/10", 7.0), ("I'd rate this 8", 8.0), ("**9**", 9.0), ("This step is promising. **8**", 8.0),
    ("I would rate this step an 8 out of 10.", 8.0), ("I would give it a 7.", 7.0), ("Overall: 7/10", 7.0),
    ("The step is correct.\n\n**Score:** 9", 9.0), ("A solid step, so 8.", 8.0), ("Promising: 80%", 8.0),
    ("3 + 8 = 11 is correct, so I rate it 9", 9.0), ("I'd rate it 12", None), ("It uses 8/3 well.", None),
])
def test_parse_score_reads_a_small_models_spelling(reply, score):
    assert parse_score(reply) == score


def test_proposals_are_read_without_preamble_labels_or_markdown():
    from reasoning_kit.algos.tot import ToTPrompts
    reply = "Sure! Here are 3 possible next steps:\n\n1. **Step 1:** 8 / 3 = 8/3\n- Option 2: 3 * 8 = 24\n\n**3 + 3 = 6**\n```"
    assert ToTPrompts().parse_steps("t", [], reply, 5) == ["8 / 3 = 8/3", "3 * 8 = 24", "3 + 3 = 6"]
    assert ToTPrompts().final_answer("**FINAL:** (8 / (3 - 8 / 3))") == "(8 / (3 - 8 / 3))"
    assert ToTPrompts().final_answer("FINAL: (8 / (3 - 8 / 3))") == "(8 / (3 - 8 / 3))"
