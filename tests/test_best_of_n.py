"""BestOfN: the three verifiers and rules, bounds, exact max_calls and budgets, order independence, nothing asked
twice, every prefix folds, replay sends nothing, kill -9 and resume re-asks nothing answered."""
import json
import random

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.algos import BestOfN
from reasoning_kit.algos.best_of_n import BestOfNState, ScorerError, choose
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, Status, fold_run
from reasoning_kit.effects.validate import ValidationHandler

from _crash import crash_then_resume
from _support import request_keys, run_scripted, user_of

PATHS = ["6 x 2 = 12.\nAnswer: 12", "6 + 2 = 8.\nAnswer: 8", "Answer: 8", "Double 6: 12.\nAnswer: 12", "Answer: 11", "no idea"]


def model(request):
    "Samples a path with the request's seed; the judge likes shown work (an '=') and fails on one prompt in three."
    if request.role == "judge":
        shown = user_of(request)
        if sum(map(ord, shown)) % 3 == 0: raise ConnectionError("judge overloaded")
        return text(json.dumps({"score": (9 if "12" in shown else 3) if "=" in shown else 5}))
    if (request.seed or 0) % 7 == 0: raise ConnectionError("sampler overloaded")
    return text(random.Random(request.seed).choice(PATHS))


def handlers():
    return [ValidationHandler({"is_12": lambda a, info: (a == "12", f"{a} is not 12")})]


def make():
    return BestOfN(samples=8, mode="separate", aggregate="weighted_vote")


def run_task(algo, fn=model, **kw):
    return run_scripted(algo, fn, task="6 x 2?", handlers=handlers(), **kw)


VERIFIERS = ["llm", "is_12", lambda task, a: float(len(a)), None]


def algo_for(verifier, aggregate="best", samples=8, mode="separate"):
    return BestOfN(samples=samples, mode=mode, verifier=verifier, aggregate="vote" if verifier is None else aggregate)


# --- choosing --------------------------------------------------------------------------------------


def test_the_three_rules_on_one_set_of_candidates():
    answers, scores = ["8", "12", "8", "8", None], [2.0, 9.0, 3.0, 3.0, None]
    assert choose("best", answers, scores) == ("12", 1)
    assert choose("weighted_vote", answers, scores) == ("12", 1)  # 9 > 8
    assert choose("vote", answers, scores) == ("8", 2)  # the majority; its best-scored sample stands for it
    assert choose("weighted_vote", ["8", "12", "8"], [5.0, 9.0, 5.0]) == ("8", 0)


def test_a_check_picks_the_one_right_sample_the_majority_missed():
    it = iter(["Answer: 8", "Answer: 8", "Answer: 12", "Answer: 11"])
    out, client = run_task(BestOfN(samples=4, verifier="is_12"), lambda r: text(next(it)))
    assert out.status == Status.OK and out.value["answer"] == "12" and out.value["index"] == 2
    assert out.value["votes"] == {"8": 2, "12": 1, "11": 1} and out.value["score"] == 10.0
    assert out.calls == client.calls == 1
    assert out.state.algo.messages[0] == "8 is not 12"  # the check's message is kept for the failed sample


def test_candidates_without_an_answer_are_not_verified():
    it = iter(["", "Answer: 12", "  "])
    out, client = run_task(BestOfN(samples=3, mode="separate"), lambda r: text('{"score": 7}' if r.role == "judge" else next(it)))
    assert client.calls == 3 + 1 and out.value["candidates"][0] == {"text": "", "answer": None, "score": None}
    assert out.value["answer"] == "12" and out.value["score"] == 7.0


def test_a_malformed_judge_reply_scores_zero():
    out, _ = run_task(BestOfN(samples=2), lambda r: text("hmm" if r.role == "judge" else "Answer: 3"))
    assert out.state.algo.how == ["malformed", "malformed"] and out.value["score"] == 0.0 and out.value["answer"] == "3"


def test_a_code_verifier_that_breaks_fails_the_run_naming_it():
    def picky(task, answer): return 11
    out, _ = run_task(BestOfN(samples=2, verifier=picky), model)
    assert out.status == Status.FAILED and "verifier picky returned 11 for sample" in out.error
    out, _ = run_task(BestOfN(samples=2, verifier=lambda t, a: 1 / 0), lambda r: text("Answer: 1"))
    assert out.status == Status.FAILED and "ZeroDivisionError on sample 0" in out.error
    assert issubclass(ScorerError, ValueError)


def test_a_missing_check_fails_the_run():
    out, _ = run_scripted(BestOfN(samples=2, verifier="nope"), lambda r: text("Answer: 1"), task="?", handlers=handlers())
    assert out.status == Status.FAILED and "no check named 'nope'" in out.error and out.calls == 0


def test_parse_overrides_the_default_reading():
    out, _ = run_task(BestOfN(samples=2, verifier=None, aggregate="vote", parse=lambda t: t[-1]), lambda r: text("Answer: 12"))
    assert out.value["answer"] == "2"


# --- bounds and max_calls -------------------------------------------------------------------------


@pytest.mark.parametrize("kw, message", [
    (dict(samples=0), "BestOfN: samples must be 1 to 100, got 0"),
    (dict(samples=101), "BestOfN: samples must be 1 to 100, got 101"),
    (dict(samples=2.0), "BestOfN: samples must be a whole number from 1 to 100, got 2.0"),
    (dict(aggregate="mean"), "BestOfN: aggregate must be one of 'best', 'weighted_vote', 'vote', got 'mean'"),
    (dict(mode="batch"), "BestOfN: mode must be one of 'n', 'separate', got 'batch'"),
    (dict(verifier=None), "BestOfN: verifier=None scores nothing, so aggregate must be 'vote', got 'best'"),
    (dict(verifier=""), "BestOfN: verifier must be a check name"),
    (dict(verifier=7), "BestOfN: verifier must be a check name"),
    (dict(temperature=-1), "BestOfN: temperature must be 0 to 2, got -1"),
    (dict(parse="x"), "BestOfN: parse must be a function or None"),
    (dict(judge_prompt=""), "BestOfN: judge_prompt must be a non-empty string or None"),
    (dict(sampler_model=3), "BestOfN: sampler_model must be a non-empty string or None"),
])
def test_bounds_rejected_at_construction_naming_the_parameter(kw, message):
    with pytest.raises(ValueError) as e:
        BestOfN(**kw)
    assert message in str(e.value), str(e.value)


@pytest.mark.parametrize("verifier", range(len(VERIFIERS)))
@pytest.mark.parametrize("mode", ["n", "separate"])
@pytest.mark.parametrize("samples", [1, 5])
def test_max_calls_is_exact(verifier, mode, samples):
    algo = algo_for(VERIFIERS[verifier], samples=samples, mode=mode)
    out, client = run_task(algo, lambda r: text('{"score": 6}' if r.role == "judge" else "6 x 2 = 12\nAnswer: 12"))
    assert out.status == Status.OK and out.calls == client.calls == algo.max_calls
    assert algo.max_calls == (1 if mode == "n" else samples) + (samples if VERIFIERS[verifier] == "llm" else 0)


@pytest.mark.parametrize("calls", range(0, 16))
def test_a_budget_of_k_calls_makes_exactly_k_and_keeps_what_they_bought(calls):
    full, _ = run_task(make(), lambda r: text('{"score": 6}' if r.role == "judge" else random.Random(r.seed).choice(PATHS[:5])))
    out, client = run_task(make(), lambda r: text('{"score": 6}' if r.role == "judge" else random.Random(r.seed).choice(PATHS[:5])),
                           budget=Budget(calls=calls))
    assert out.status == Status.BUDGET_EXHAUSTED and out.calls == client.calls == calls
    s = out.state.algo
    assert sum(t is not None for t in s.texts) == min(calls, 8) and sum(x is not None for x in s.scores) == max(0, calls - 8)
    assert [a for a in s.answers if a] == [a for a in full.state.algo.answers if a][:min(calls, 8)]  # the same draws, cut short
    assert out.value == make().result(fold_run(out.log).algo)


# --- order independence, nothing twice, prefixes, replay, resume -------------------------------------


@pytest.mark.parametrize("verifier", range(len(VERIFIERS)))
@pytest.mark.parametrize("budget", [None, 9])
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), aggregate=st.sampled_from(["best", "weighted_vote"]))
def test_random_completion_orders_give_identical_runs(verifier, budget, seed, aggregate):
    def once(seed):
        out, client = run_task(algo_for(VERIFIERS[verifier], aggregate), seed=seed, budget=Budget(calls=budget) if budget else None)
        keys = request_keys(out) + request_keys(out, "validate")
        assert len(keys) == len(set(keys)) and client.calls == out.calls == len(request_keys(out))  # nothing asked twice
        domain = [(e.kind, e.data) for e in out.log if e.kind.startswith("best_of_n.")]
        return out.status, out.value, out.state.algo, out.calls, sorted(keys), domain
    assert once(seed) == once(0)


def test_every_prefix_folds_and_reads_as_a_result():
    algo = make()
    out, _ = run_task(algo)
    assert out.state.algo.failed and out.state.algo.unscored  # the run covers a failed sample and a failed judge call
    for k in range(len(out.log) + 1):
        s = fold_run(out.log[:k], algo).algo
        assert isinstance(s, BestOfNState)
        if k: assert fold_run(out.log[:k]).algo == s  # the algorithm rebuilt from the log's config folds the same
        res = algo.result(s)
        assert res["answer"] == choose(algo.aggregate, s.answers, s.scores)[0] if s.settings else res["answer"] is None
    assert algo.result(fold_run(out.log).algo) == out.value


@pytest.mark.parametrize("verifier", range(len(VERIFIERS)))
def test_replay_sends_nothing(verifier):
    algo = algo_for(VERIFIERS[verifier])
    first, _ = run_task(algo)
    again, client = run_task(algo, lambda r: 1 / 0, replay=first.log)
    assert client.calls == 0 and again.sent == {} and again.value == first.value and again.state.algo == first.state.algo


def test_resume_after_a_budget_cut_asks_only_the_rest():
    cut, _ = run_task(make(), budget=Budget(calls=8))
    resumed, client = run_task(make(), replay=cut.log)
    full, _ = run_task(make())
    assert resumed.value == full.value and client.calls == full.calls - 8


def test_differences_say_what_changed_in_best_of_n_words():
    a, _ = run_task(make())
    b, _ = run_task(make(), run_seed=3)
    lines = make().differences(a.state.algo, b.state.algo)
    assert lines and all(l.startswith(("sample ", "chose sample")) for l in lines)
    assert make().differences(a.state.algo, a.state.algo) == []


FULL, _ = run_scripted(make(), model, task="6 x 2?", handlers=handlers())


@settings(max_examples=5, deadline=None)
@given(kill_at=st.integers(1, FULL.calls))
def test_kill_9_then_resume_asks_nothing_answered_again(tmp_path_factory, kill_at):
    path = tmp_path_factory.mktemp("crash") / "run.jsonl"
    answered, out, client = crash_then_resume(path, "test_best_of_n", kill_at, make, model, handlers)
    assert out.status == FULL.status and out.value == FULL.value
    assert set(out.asked_keys).isdisjoint(answered) and client.calls == FULL.calls - len(answered)


def test_a_verifier_name_is_checked_as_soon_as_it_can_be():
    "What can never be a check name fails at construction; a name with no check fails at run start, before any call (issue 43)."
    import pytest
    for bad in ("LLM", " llm", "is_12\n", "x" * 101):
        with pytest.raises(ValueError, match="BestOfN: verifier="):
            BestOfN(verifier=bad)
    out, client = run_scripted(BestOfN(verifier="nosuch", samples=2), lambda r: text("Answer: 12"), task="6 x 2?")
    assert out.status == Status.FAILED and client.calls == 0 and "'nosuch'" in out.error and "\n" not in out.error
