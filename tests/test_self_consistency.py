"""SelfConsistency: both modes, bounds, budget, order independence, failures, prefixes, replay, fixture."""

import itertools
import json
import random

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.algos.self_consistency import SelfConsistency, SelfConsistencyState
from reasoning_kit.core.events import Timeline
from reasoning_kit.models import FakeLLMClient
from reasoning_kit.models.fake import reply, text
from reasoning_kit.engine import Budget, RunReducer, Status, fold_run

from _support import check_fixture, read_fixture, request_keys, run_scripted, write_fixture

PATHS = ["6 x 2 = 12.\nAnswer: 12", "6 + 2 = 8.\nAnswer: 8", "Double 6: 12.\nAnswer: 12", "Answer: 11", "**Answer:** 12."]


def seeded(request):
    "Samples one path with the request's seed: the same request always gets the same reply."
    return text(random.Random(request.seed).choice(PATHS))


def cycling():
    it = itertools.cycle(PATHS)
    return lambda request: text(next(it))


def run_task(algorithm, model, **kw):
    "`run_scripted` on the task 6 x 2?"
    return run_scripted(algorithm, model, task="6 x 2?", **kw)


# --- both modes --------------------------------------------------------------------------------


def test_mode_n_is_one_request_with_n_samples():
    out, client = run_task(SelfConsistency(samples=5), cycling())
    assert out.status == Status.OK
    assert out.value == {"answer": "12", "votes": {"12": 3, "8": 1, "11": 1}, "samples": ["12", "8", "12", "11", "12"],
                         "agreement": 0.6, "texts": PATHS}
    assert out.calls == client.calls == SelfConsistency(samples=5).max_calls == 1
    request = client.requests[0]
    assert (request.n, request.temperature, request.role) == (5, 0.7, "sampler")
    assert request_keys(out) == ["sc/samples"]
    assert "Answer:" in request.messages[0].content and request.messages[1].content == "6 x 2?"


def test_mode_separate_is_one_seeded_request_per_sample():
    out, client = run_task(SelfConsistency(samples=9, mode="separate"), seeded)
    assert out.calls == client.calls == SelfConsistency(samples=9, mode="separate").max_calls == 9
    assert sorted(request_keys(out)) == sorted(f"sc/sample/{i}" for i in range(9))
    seeds = [r.seed for r in client.requests]
    assert len(set(seeds)) == 9 and all(r.n == 1 for r in client.requests)  # distinct requests
    assert sum(out.value["votes"].values()) == 9
    # the seeds come from the run's seed: a new run seed draws new samples, the same one the same
    again, c2 = run_task(SelfConsistency(samples=9, mode="separate"), seeded)
    other, c3 = run_task(SelfConsistency(samples=9, mode="separate"), seeded, run_seed=1)
    assert [r.seed for r in c2.requests] == seeds and [r.seed for r in c3.requests] != seeds
    assert again.value == out.value


def test_both_modes_agree_on_the_same_samples():
    n_mode, _ = run_task(SelfConsistency(samples=5), cycling())
    separate, _ = run_task(SelfConsistency(samples=5, mode="separate"), cycling())
    assert n_mode.value == separate.value


def test_one_sample_is_just_chain_of_thought():
    out, _ = run_task(SelfConsistency(samples=1), lambda r: text("Answer: 12"))
    assert out.value == {"answer": "12", "votes": {"12": 1}, "samples": ["12"], "agreement": 1.0, "texts": ["Answer: 12"]}


def test_ties_go_to_the_first_answer_in_sample_order():
    it = itertools.cycle(["Answer: 8", "Answer: 12", "Answer: 12", "Answer: 8"])
    out, _ = run_task(SelfConsistency(samples=4), lambda r: text(next(it)))
    assert (out.value["answer"], out.value["votes"], out.value["agreement"]) == ("8", {"8": 2, "12": 2}, 0.5)


def test_samples_without_an_answer_do_not_vote():
    it = itertools.cycle(["", "Answer: 7", "  "])
    out, _ = run_task(SelfConsistency(samples=3), lambda r: text(next(it)))
    assert out.value == {"answer": "7", "votes": {"7": 1}, "samples": [None, "7", None], "agreement": 1.0,
                         "texts": ["", "Answer: 7", "  "]}
    out, _ = run_task(SelfConsistency(samples=3), lambda r: text(""))
    assert out.status == Status.NO_SOLUTION and out.value["answer"] is None and out.value["agreement"] is None


def test_parser_is_overridable_by_argument_and_by_subclass():
    it = lambda: itertools.cycle(["twelve => 12.0", "=> 12", "=> 8"])  # noqa: E731
    parse = lambda t: str(float(t.rsplit("=>", 1)[-1])) if t and "=>" in t else None  # noqa: E731
    by_arg, _ = run_task(SelfConsistency(samples=3, parse=parse), (lambda c: lambda r: text(next(c)))(it()))
    assert by_arg.value["votes"] == {"12.0": 2, "8.0": 1}

    class Numeric(SelfConsistency):
        def parse_answer(self, text):
            return parse(text)

    by_subclass, _ = run_task(Numeric(samples=3), (lambda c: lambda r: text(next(c)))(it()))
    assert by_subclass.value == by_arg.value


def test_custom_prompt_is_the_system_prompt():
    out, client = run_task(SelfConsistency(samples=2, sampler_prompt="Q: 1+1? A: 2. Answer: 2\nNow you."), cycling())
    assert client.requests[0].messages[0].content.startswith("Q: 1+1?")


# --- bounds --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kw, message", [
    (dict(samples=0), "SelfConsistency: samples must be 1 to 100, got 0"),
    (dict(samples=101), "SelfConsistency: samples must be 1 to 100, got 101"),
    (dict(samples=3.0), "SelfConsistency: samples must be a whole number from 1 to 100, got 3.0"),
    (dict(samples=True), "SelfConsistency: samples must be a whole number from 1 to 100, got True"),
    (dict(mode="parallel"), "SelfConsistency: mode must be one of 'n', 'separate', got 'parallel'"),
    (dict(temperature=-0.1), "SelfConsistency: temperature must be 0 to 2, got -0.1"),
    (dict(temperature=2.01), "SelfConsistency: temperature must be 0 to 2, got 2.01"),
    (dict(temperature="hot"), "SelfConsistency: temperature must be a number from 0 to 2 or None, got 'hot'"),
    (dict(sampler_prompt=3), "SelfConsistency: sampler_prompt must be a non-empty string or None"),
    (dict(parse="x"), "SelfConsistency: parse must be a function or None"),
])
def test_bounds_rejected_at_construction(kw, message):
    with pytest.raises(ValueError) as e:
        SelfConsistency(**kw)
    assert message in str(e.value), str(e.value)


@pytest.mark.parametrize("samples", [1, 2, 100])
@pytest.mark.parametrize("mode", ["n", "separate"])
def test_max_calls_is_exact(samples, mode):
    algo = SelfConsistency(samples=samples, mode=mode)
    out, client = run_task(algo, seeded)
    assert out.calls == client.calls == algo.max_calls == (1 if mode == "n" else samples)
    assert len(out.value["samples"]) == samples


def test_missing_task_fails_clearly():
    out, _ = run_scripted(SelfConsistency(), seeded, input={})
    assert out.status == Status.FAILED and "input['task']" in out.error


# --- budget ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("calls", range(0, 7))
def test_budget_cut_off_in_separate_mode_keeps_the_samples_paid_for(calls):
    out, client = run_task(SelfConsistency(samples=7, mode="separate"), seeded, budget=Budget(calls=calls))
    assert out.status == Status.BUDGET_EXHAUSTED and out.calls == client.calls == calls
    s = out.state.algo
    assert not s.voted and sum(t is not None for t in s.texts) == calls
    assert out.value["samples"][calls:] == [None] * (7 - calls)
    full, _ = run_task(SelfConsistency(samples=7, mode="separate"), seeded)
    assert out.value["samples"][:calls] == full.value["samples"][:calls]  # the same draws, cut short
    assert sum(out.value["votes"].values()) == calls
    assert out.value == SelfConsistency().result(fold_run(out.log).algo)


def test_budget_cut_off_in_mode_n():
    out, client = run_task(SelfConsistency(samples=5), seeded, budget=Budget(calls=0))
    assert out.status == Status.BUDGET_EXHAUSTED and client.calls == 0
    assert out.value == {"answer": None, "votes": {}, "samples": [None] * 5, "agreement": None, "texts": [None] * 5}


def test_resume_after_cut_off_sends_only_the_missing_samples():
    algo = SelfConsistency(samples=7, mode="separate")
    cut, _ = run_task(algo, seeded, budget=Budget(calls=3))
    resumed, client = run_task(algo, seeded, replay=cut.log)
    full, _ = run_task(algo, seeded)
    assert client.calls == 4 and resumed.served == {"llm": 3}
    assert resumed.value == full.value and resumed.state.algo == full.state.algo


# --- order independence and no call twice ----------------------------------------------------------


def flaky_seeded(request):
    if request.seed % 4 == 0:
        raise ConnectionError("overloaded")
    return seeded(request)


@pytest.mark.parametrize("samples, model, budget", [(9, seeded, None), (16, flaky_seeded, None), (12, seeded, 7)])
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_completion_orders_give_identical_runs(samples, model, budget, seed):
    def once(seed):
        out, client = run_task(SelfConsistency(samples=samples, mode="separate"), model, seed=seed,
                               budget=Budget(calls=budget) if budget else None)
        keys = request_keys(out)
        assert len(keys) == len(set(keys)) == client.calls == out.calls  # no model call issued twice
        assert out.calls == (budget or samples)  # a budget is the limit itself
        domain = [(e.kind, e.data) for e in out.log if e.kind.startswith("self_consistency.")]
        return (out.status, out.value, out.state.algo, out.calls, sorted(keys), domain)
    assert once(seed) == once(0)


# --- failures ---------------------------------------------------------------------------------------


def test_failed_samples_are_skipped():
    out, client = run_task(SelfConsistency(samples=16, mode="separate"), flaky_seeded)
    s = out.state.algo
    assert out.status == Status.PARTIAL and s.failed and "overloaded" in next(iter(s.failed.values()))
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named
    assert sum(out.value["votes"].values()) + len(s.failed) == 16
    assert all(out.value["samples"][i] is None for i in s.failed)
    assert client.calls == 16  # a failed sample is not retried


def test_every_sample_failing_fails_the_run():
    for mode in ("n", "separate"):
        out, _ = run_task(SelfConsistency(samples=3, mode=mode), lambda r: 1 / 0)
        assert out.status == Status.FAILED and "every sample failed" in out.error
        assert sorted(out.state.algo.failed) == [0, 1, 2]


def test_a_reply_with_fewer_choices_than_asked_counts_what_came():
    class Capped(FakeLLMClient):  # a provider that caps n at 3
        async def complete(self, request, call=None):  # the one client signature
            r = await super().complete(request, call)
            return r.model_copy(update={"choices": r.choices[:3]})

    out, _ = run_scripted(SelfConsistency(samples=5), Capped(lambda r: reply("Answer: 12")), task="?")
    assert out.status == Status.OK and out.value["samples"] == ["12", "12", "12", None, None]
    assert sorted(out.state.algo.failed) == [3, 4] and "only 3 of 5" in out.state.algo.failed[3]
    assert out.value["agreement"] == 1.0


# --- prefixes, replay, fixture -----------------------------------------------------------------------


def test_every_prefix_folds_to_a_state_the_stepper_can_draw():
    algo = SelfConsistency(samples=9, mode="separate")
    out, _ = run_task(algo, flaky_seeded)
    timeline = Timeline(out.log, RunReducer(algo), every=4)
    arrived = 0
    for k in range(len(out.log) + 1):
        s = fold_run(out.log[:k], algo).algo
        assert isinstance(s, SelfConsistencyState) and timeline.state_at(k).algo == s
        if k:
            assert fold_run(out.log[:k]).algo == s
            arrived += out.log[k - 1].kind == "self_consistency.sampled"
        assert sum(t is not None for t in s.texts) == arrived
        assert sum(s.votes.values()) == sum(a is not None for a in s.answers)  # the tally so far
        res = algo.result(s)
        assert set(res) == {"answer", "votes", "samples", "agreement", "texts"}
        assert res["answer"] == (s.answer if s.voted else s.leader)
    assert fold_run(out.log).algo == out.state.algo


def test_replay_calls_the_model_zero_times():
    for algo in (SelfConsistency(samples=5), SelfConsistency(samples=8, mode="separate")):
        first, _ = run_task(algo, flaky_seeded if algo.mode == "separate" else cycling())
        again, client = run_task(algo, lambda r: 1 / 0, replay=first.log)
        assert client.calls == 0 and again.sent == {}
        assert again.value == first.value and again.state.algo == first.state.algo


def make_fixture():  # run once by hand to write the frozen v0.1 log
    out, _ = run_task(SelfConsistency(samples=8, mode="separate"), flaky_seeded)
    write_fixture("self_consistency", out)


def test_frozen_v0_1_log_keeps_folding_to_the_same_state():
    texts = read_fixture("self_consistency")[1]["state"]["texts"]  # the result now shows each sample's raw reply
    state, expected = check_fixture("self_consistency", SelfConsistency, {"result": {"texts": texts}})  # status, state and result
    assert expected["state"]["failed"] and expected["state"]["voted"]  # the fixture covers a failed sample and the vote


def test_frozen_log_replays_without_the_model():
    log, expected = read_fixture("self_consistency")
    out, client = run_task(SelfConsistency(samples=8, mode="separate"), lambda r: 1 / 0, replay=log)
    assert client.calls == 0
    assert json.loads(json.dumps(out.value)) == {**expected["result"], "texts": expected["state"]["texts"]}




# --- real replies --------------------------------------------------------------------------------

SMALL_MODEL = ["3 + 8 = 11", "3 + 8 equals 11", "To add 3 and 8, count on from 8: 9, 10, 11. So the sum is 11.",
               "The answer is **11**.", "Your answer is 14.", "Eleven.", "١١", "Answer: 11.0 apples"]


@pytest.mark.parametrize("mode", ["n", "separate"])
def test_votes_count_normalised_answers_and_keep_the_raw_replies(mode):
    it = itertools.cycle(SMALL_MODEL)
    out, _ = run_task(SelfConsistency(samples=8, mode=mode), lambda r: text(next(it)))
    assert (out.value["answer"], out.value["votes"]) == ("11", {"11": 7, "14": 1})
    assert out.value["texts"] == SMALL_MODEL and out.value["samples"][4] == "14"
    assert out.value["agreement"] == 7 / 8


def test_a_parse_function_is_used_as_given_and_kind_is_checked():
    it = itertools.cycle(["Answer: 11", "Answer: 11.0"])
    out, _ = run_task(SelfConsistency(samples=2, parse=lambda t: t.split(":")[1].strip()), lambda r: text(next(it)))
    assert out.value["votes"] == {"11": 1, "11.0": 1}  # parse= overrides: no normalisation behind its back
    words = itertools.cycle(["Answer: Paris.", "paris", "The capital is PARIS!"])
    out, _ = run_task(SelfConsistency(samples=3, kind="word"), lambda r: text(next(words)))
    assert out.value["votes"] == {"paris": 3}
    with pytest.raises(ValueError, match="kind must be one of"):
        SelfConsistency(kind="integer")
    with pytest.raises(ValueError, match="units must be True or False"):
        SelfConsistency(units="yes")


# --- what a reply concludes, per question (issue 43) ---------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(0, 3), st.sampled_from(["separate", "n"]))
def test_replies_that_only_restate_the_question_do_not_vote_for_an_operand(a, b, restating, mode):
    "SmolLM2 on 'What is 6 + 7?' answered 7 with two votes: 'To add 6 + 7, you simply add them together.' twice."
    replies = [f"To add {a} + {b}, you simply add them together."] * restating + ["I like sums."] + [f"{a} + {b} = {a + b}"] * (4 - restating)
    it = iter(replies)
    out, _ = run_scripted(SelfConsistency(samples=5, mode=mode), lambda r: text(next(it)),
                          task=f"What is {a} + {b}?")
    # the restatements abstain (no operand votes) and so does the sentence (most answers are numbers)
    assert out.value["answer"] == str(a + b) and out.value["votes"] == {str(a + b): 4 - restating}
    again, silent = run_scripted(SelfConsistency(samples=5, mode=mode), lambda r: 1 / 0, task=f"What is {a} + {b}?", replay=out.log)
    assert silent.calls == 0 and again.value == out.value
