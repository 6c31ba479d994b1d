"""GenerateTestRepair: bounds, repairs, candidates, drop-outs, budget, order independence, prefixes, replay, fixture,
extract_answer. The runs test with tasks.game24's check_24 (its own tests are in test_game24.py)."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.algos.generate_test_repair import GenerateTestRepair, extract_answer
from reasoning_kit.core.events import Timeline
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, RunReducer, Status, fold_run
from reasoning_kit.tasks.game24 import check_24
from reasoning_kit.effects.validate import ValidationHandler

from _support import check_fixture, read_fixture, request_keys, run_scripted, write_fixture

TASK = "Make 24 from 3, 3, 8, 8"
RIGHT = "Answer: 8 / (3 - 8 / 3)"
# Candidate i asks with seed Random(f"{run seed}:gtr/{i}").randrange(2**31) (Context.rng); a scripted model
# reads the candidate back from it. test_each_candidate_has_its_own_seed checks that this stays true.
SEEDS = {random.Random(f"0:gtr/{i}").randrange(2**31): i for i in range(8)}


def candidate(request) -> int:
    return SEEDS[request.seed]


def attempt_no(request) -> int:
    return sum(m.role == "assistant" for m in request.messages)


def per_candidate(plan):
    "A model following `plan[candidate][attempt]`; a missing entry repeats the last; an Exception entry is raised."
    def model(request):
        steps = plan[candidate(request)]
        step = steps[min(attempt_no(request), len(steps) - 1)]
        if isinstance(step, Exception):
            raise step
        return text(step)
    return model


def learner(request):
    "Wrong sum first; told it is not 24, gives the right expression."
    if request.role == "repairer" and "not 24" in request.messages[-1].content:
        return text(RIGHT)
    return text("Answer: 8 + 8 + 3 + 3")


# Three candidates: 0 never gets it, 1 gets it on its 2nd repair, 2 on its 3rd; 1 wins at attempt 2.
MIXED = {0: ["Answer: 8 + 8 + 3 + 3"], 1: ["Answer: 8 * 3", "8 * 3 * 3", RIGHT], 2: ["oops", "Answer: 3 + 3", "3 * 8", RIGHT]}


def run_task(algorithm, model, checks=None, **kw):
    "`run_scripted` on TASK with a ValidationHandler holding `checks` (the Game of 24 check by default; False: none)."
    handlers = () if checks is False else [ValidationHandler(checks or {"24": check_24})]
    return run_scripted(algorithm, model, task=TASK, handlers=handlers, **kw)


def domain(out):
    return [(e.kind, e.data) for e in out.log if e.kind.startswith("generate_test_repair.")]


# --- bounds --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kw,message", [
    ({"max_repairs": -1}, "max_repairs must be 0 to 10"),
    ({"max_repairs": 11}, "max_repairs must be 0 to 10"),
    ({"max_repairs": 1.5}, "max_repairs must be a whole number from 0 to 10, got 1.5"),
    ({"max_repairs": True}, "GenerateTestRepair: max_repairs must be a whole number from 0 to 10, got True"),  # True is not 1
    ({"candidates": False}, "GenerateTestRepair: candidates must be a whole number from 1 to 8, got False"),
    ({"temperature": -1}, "GenerateTestRepair: temperature must be 0 to 2, got -1"),
    ({"extract": None}, "GenerateTestRepair: extract must be a function, got None"),
    ({"generator_prompt": ""}, "GenerateTestRepair: generator_prompt must be a non-empty string"),
    ({"candidates": 0}, "candidates must be 1 to 8"),
    ({"candidates": 9}, "candidates must be 1 to 8"),
    ({"repair_prompt": "Try again."}, "repair_prompt must contain {message}"),
])
def test_bounds_are_rejected_naming_the_bound(kw, message):
    with pytest.raises(ValueError, match=message):
        GenerateTestRepair("24", **kw)


@pytest.mark.parametrize("validator", ["", None, 3])
def test_validator_must_name_a_check(validator):
    with pytest.raises(ValueError, match="GenerateTestRepair: validator must be a non-empty string"):
        GenerateTestRepair(validator)


@pytest.mark.parametrize("k,r", [(1, 0), (1, 3), (3, 2), (8, 10)])
def test_max_calls_is_known_at_construction(k, r):
    assert GenerateTestRepair("24", candidates=k, max_repairs=r).max_calls == k * (1 + r)


def test_missing_handler_or_check_fails_before_any_model_call():
    out, client = run_task(GenerateTestRepair("24"), learner, checks=False)
    assert out.status == Status.FAILED and "attach a ValidationHandler" in out.error and client.calls == 0
    out, client = run_task(GenerateTestRepair("42"), learner)
    assert out.status == Status.FAILED and "no check named '42'; known: ['24']" in out.error and client.calls == 0


def test_missing_task_fails_with_a_clear_error():
    out, _ = run_scripted(GenerateTestRepair("24"), learner, input={"puzzle": "3 3 8 8"},
                          handlers=[ValidationHandler({"24": check_24})])
    assert out.status == Status.FAILED and "needs input['task']" in out.error


# --- one candidate --------------------------------------------------------------------------------


def test_failure_message_drives_the_repair():
    out, client = run_task(GenerateTestRepair("24"), learner)
    assert out.status == Status.OK
    assert out.value == {"answer": "8 / (3 - 8 / 3)", "passed": True, "attempts": 2,
                         "failures": ["8 + 8 + 3 + 3 = 22, not 24"], "candidate": 0}
    assert request_keys(out) == ["gtr/0/0/draft", "gtr/0/1/repair"]
    assert request_keys(out, "validate") == ["gtr/0/0/test", "gtr/0/1/test"]
    assert [r.role for r in client.requests] == ["generator", "repairer"]
    repair = client.requests[1]
    assert [m.role for m in repair.messages] == ["system", "user", "assistant", "user"]
    assert "8 + 8 + 3 + 3 = 22, not 24" in repair.messages[-1].content
    assert repair.messages[2].content == "Answer: 8 + 8 + 3 + 3"  # the model sees its whole reply, the check the extracted answer
    assert out.state.algo.winner == {"candidate": 0, "attempt": 1, "answer": "8 / (3 - 8 / 3)"}


def test_first_draft_passing_costs_one_call():
    out, client = run_task(GenerateTestRepair("24"), lambda r: text(RIGHT))
    assert out.value["passed"] and out.value["attempts"] == 1 and out.value["failures"] == [] and client.calls == 1


def test_never_passing_is_no_solution_with_the_last_attempt_and_every_failure():
    out, client = run_task(GenerateTestRepair("24", max_repairs=3),
                           lambda r: text(f"Answer: 8 + 8 + 3 + {attempt_no(r) + 3}"))
    assert out.status == Status.NO_SOLUTION
    assert out.value == {"answer": "8 + 8 + 3 + 6", "passed": False, "attempts": 4, "candidate": 0,
                         "failures": ["8 + 8 + 3 + 3 = 22, not 24"] + [f"8 + 8 + 3 + {n} uses 3, {n}, 8, 8, but the numbers are 3, 3, 8, 8: use each exactly once"
                                                                         for n in (4, 5, 6)]}
    assert client.calls == 4 == GenerateTestRepair("24", max_repairs=3).max_calls
    assert domain(out)[-1] == ("generate_test_repair.exhausted", {"attempts": 4})
    assert [d["attempt"] for k, d in domain(out) if k == "generate_test_repair.repair_requested"] == [1, 2, 3]


def test_zero_repairs_is_a_single_tested_attempt():
    out, client = run_task(GenerateTestRepair("24", max_repairs=0), learner)
    assert out.status == Status.NO_SOLUTION and out.value["attempts"] == 1 and client.calls == 1
    assert not any(k == "generate_test_repair.repair_requested" for k, _ in domain(out))


def test_a_bare_false_check_still_asks_for_a_repair():
    checks = {"km": lambda answer, ctx: "km" in answer}
    out, client = run_task(GenerateTestRepair("km"), lambda r: text("42 km" if attempt_no(r) else "42"), checks=checks)
    assert out.value == {"answer": "42 km", "passed": True, "attempts": 2, "failures": [""], "candidate": 0}
    assert "(the check gave no details)" in client.requests[1].messages[-1].content


def test_custom_extract_prompts_models_and_temperature_reach_the_requests():
    algo = GenerateTestRepair("24", generator_prompt="Solve it.", repair_prompt="Wrong: {message}", extract=lambda s: s.split("=>")[-1],
                              temperature=0.7, generator_model="cheap", repairer_model="strong")
    out, client = run_task(algo, lambda r: text("thinking => " + ("8 / (3 - 8 / 3)" if attempt_no(r) else "24")))
    assert out.value["passed"] and out.value["failures"][0].startswith("24 uses 24")
    assert [(r.model, r.temperature) for r in client.requests] == [("cheap", 0.7), ("strong", 0.7)]
    assert client.requests[0].messages[0].content == "Solve it."
    assert client.requests[1].messages[-1].content.startswith("Wrong: 24 uses 24")
    assert fold_run(out.log).config["repair_prompt"] == "Wrong: {message}"


# --- several candidates ------------------------------------------------------------------------------


def test_each_candidate_has_its_own_seed_for_all_its_attempts():
    out, client = run_task(GenerateTestRepair("24", candidates=3, max_repairs=2), per_candidate(MIXED))
    by_key = {e.key: e.data["request"].get("seed") for e in out.log if e.kind == "llm.request"}
    for key, seed in by_key.items():
        assert SEEDS[seed] == int(key.split("/")[1]), key


def test_lowest_numbered_passing_candidate_wins_and_failed_ones_are_repaired_in_parallel():
    out, client = run_task(GenerateTestRepair("24", candidates=3, max_repairs=3), per_candidate(MIXED))
    assert out.status == Status.OK
    assert out.value["answer"] == "8 / (3 - 8 / 3)" and out.value["candidate"] == 1 and out.value["attempts"] == 9
    assert sorted(request_keys(out)) == sorted(f"gtr/{i}/{a}/{'draft' if a == 0 else 'repair'}" for i in range(3) for a in range(3))
    s = out.state.algo
    assert [(a["candidate"], a["attempt"], a["passed"]) for a in s.attempts] == [
        (i, a, (i, a) == (1, 2)) for a in range(3) for i in range(3)]
    assert len(s.conversations) == 3 and all(len(c) == 2 + 2 * 3 - 1 for c in s.conversations)
    assert len(out.value["failures"]) == 8


def test_two_candidates_passing_at_once_the_lower_number_wins():
    plan = {0: ["Answer: 3 * 8"], 1: [RIGHT], 2: ["Answer: (8 / (3 - 8 / 3))"]}
    out, _ = run_task(GenerateTestRepair("24", candidates=3), per_candidate(plan))
    assert out.value["candidate"] == 1 and out.value["answer"] == "8 / (3 - 8 / 3)" and out.value["attempts"] == 3


def test_a_candidate_whose_call_fails_drops_out_and_is_never_asked_again():
    plan = {0: [ConnectionError("down")], 1: ["Answer: 3 * 8", "Answer: 3 + 8", RIGHT]}
    out, client = run_task(GenerateTestRepair("24", candidates=2, max_repairs=3), per_candidate(plan))
    assert out.status == Status.PARTIAL and out.value["candidate"] == 1 and out.value["attempts"] == 3
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named
    assert out.state.algo.dropped == [{"candidate": 0, "attempt": 0, "error": "ConnectionError: down"}]
    assert [k for k in request_keys(out) if k.startswith("gtr/0/")] == ["gtr/0/0/draft"]
    assert client.calls == 4


def test_every_candidate_failing_fails_the_run_with_the_error():
    out, _ = run_task(GenerateTestRepair("24", candidates=2), lambda r: 1 / 0)
    assert out.status == Status.FAILED and "every candidate's model call failed" in out.error and "ZeroDivisionError" in out.error
    assert len(out.state.algo.dropped) == 2


def test_a_broken_check_fails_the_run_but_keeps_the_attempt():
    def broken(answer, ctx):
        raise RuntimeError("checker crashed")

    out, _ = run_task(GenerateTestRepair("24"), learner, checks={"24": broken})
    assert out.status == Status.FAILED and "checker crashed" in out.error
    assert out.value == {"answer": "8 + 8 + 3 + 3", "passed": False, "attempts": 1, "failures": [], "candidate": 0}
    assert out.state.algo.attempts[0]["passed"] is None


# --- budget -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("calls", range(0, 8))
def test_budget_cut_off_reads_the_result_from_the_partial_state(calls):
    algo = GenerateTestRepair("24", candidates=3, max_repairs=3)
    out, client = run_task(algo, per_candidate(MIXED), budget=Budget(calls=calls))
    assert out.status == Status.BUDGET_EXHAUSTED and out.state.exhausted == "calls"
    assert out.calls == client.calls == calls == out.value["attempts"]
    assert out.value["passed"] is False and len(out.value["failures"]) == calls
    assert fold_run(out.log).algo == out.state.algo
    if calls:  # the latest attempt of the lowest-numbered candidate that got that far
        assert out.value["candidate"] == 0 and out.value["answer"] == extract_answer(MIXED[0][0])


def test_a_pass_in_the_cut_level_is_kept():
    out, _ = run_task(GenerateTestRepair("24", candidates=3, max_repairs=3), per_candidate(MIXED), budget=Budget(calls=8))
    assert out.status == Status.BUDGET_EXHAUSTED and out.value["passed"] and out.value["candidate"] == 1


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_budget_cut_is_order_independent(seed):
    def once(seed):
        out, client = run_task(GenerateTestRepair("24", candidates=3, max_repairs=3), per_candidate(MIXED),
                               budget=Budget(calls=5), seed=seed)
        return (out.status, out.value, out.state.algo, out.calls, client.calls, domain(out))
    got = once(seed)
    assert got == once(0) and got[3] <= 5 and got[4] <= 5  # the budget's limit itself


def test_resume_after_a_budget_cut_calls_only_what_is_missing():
    algo = GenerateTestRepair("24", candidates=3, max_repairs=3)
    cut, _ = run_task(algo, per_candidate(MIXED), budget=Budget(calls=4))
    full, _ = run_task(algo, per_candidate(MIXED))
    resumed, client = run_task(algo, per_candidate(MIXED), replay=cut.log)
    assert resumed.served["llm"] == 4 and client.calls == full.calls - 4
    assert (resumed.status, resumed.value, resumed.state.algo) == (full.status, full.value, full.state.algo)


# --- order independence, no call twice ------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_completion_orders_give_identical_results_state_and_calls(seed):
    def once(seed):
        out, client = run_task(GenerateTestRepair("24", candidates=3, max_repairs=3), per_candidate(MIXED), seed=seed)
        ks = request_keys(out)
        assert len(ks) == len(set(ks)) == client.calls == out.calls
        return (out.status, out.value, out.state.algo, out.calls, domain(out))
    assert once(seed) == once(0)


def test_no_model_call_is_issued_twice_even_for_identical_drafts():
    out, client = run_task(GenerateTestRepair("24", candidates=4, max_repairs=2), lambda r: text("Answer: 1"))
    dumped = [r.model_dump_json() for r in client.requests]
    assert len(dumped) == len(set(dumped)) == out.calls == 12


# --- prefixes, replay, fixture -----------------------------------------------------------------------------


def test_every_prefix_folds_to_a_state_the_stepper_can_draw():
    out, _ = run_task(GenerateTestRepair("24", candidates=3, max_repairs=3), per_candidate(MIXED))
    algo = GenerateTestRepair("24", candidates=3, max_repairs=3)
    timeline = Timeline(out.log, RunReducer(algo), every=7)
    previous = algo.initial()
    for k in range(len(out.log) + 1):
        s = fold_run(out.log[:k], algo).algo
        assert s == timeline.state_at(k).algo
        if k:
            assert s == fold_run(out.log[:k]).algo  # the algorithm found through run.started
            algo.result(s)  # the result reads any prefix
        assert len(s.attempts) >= len(previous.attempts)
        for before, now in zip(previous.attempts, s.attempts):  # a verdict, once shown, never changes
            assert before["passed"] is None or before == now
        e = out.log[k - 1] if k else None
        if e is not None and e.kind == "generate_test_repair.generated":  # an attempt is shown before its verdict
            assert s.attempts[-1]["answer"] == e.data["answer"] and s.attempts[-1]["passed"] is None
        if e is not None and e.kind == "generate_test_repair.tested":
            assert s.attempts[-1]["passed"] == e.data["passed"] and s.attempts[-1]["message"] == e.data["message"]
        previous = s
    assert previous == out.state.algo


def test_replay_calls_the_model_zero_times():
    first, _ = run_task(GenerateTestRepair("24", candidates=3, max_repairs=3), per_candidate(MIXED))
    again, client = run_task(GenerateTestRepair("24", candidates=3, max_repairs=3), lambda r: 1 / 0, replay=first.log)
    assert client.calls == 0 and again.sent == {} and again.served == {"llm": first.calls, "validate": first.calls}
    assert (again.status, again.value, again.state.algo) == (first.status, first.value, first.state.algo)


FIXTURE_ALGO = dict(candidates=3, max_repairs=3)


def make_fixture():  # run once by hand (python tests/test_generate_test_repair.py) to write the frozen v0.1 log
    out, _ = run_task(GenerateTestRepair("24", **FIXTURE_ALGO), per_candidate(MIXED))
    write_fixture("generate_test_repair", out)


def test_frozen_v0_1_log_keeps_folding_to_the_same_state():
    check_fixture("generate_test_repair", GenerateTestRepair)  # status, state and result


def test_frozen_log_replays_without_the_model():
    log, expected = read_fixture("generate_test_repair")
    out, client = run_task(GenerateTestRepair("24", **FIXTURE_ALGO), lambda r: 1 / 0, replay=log)
    assert client.calls == 0 and out.status.value == expected["status"]
    assert out.value == expected["result"]


# --- extract_answer -----------------------------------------------------------


@pytest.mark.parametrize("reply,answer", [
    ("```python\ndef f():\n    return 1\n```", "def f():\n    return 1"),
    ("Try:\n```\nA\n```\nor\n```\nB\n```", "A"),
    ("Reasoning...\nAnswer: 8 / (3 - 8 / 3)", "8 / (3 - 8 / 3)"),
    ("**Final answer:** 42", "42"),
    ("answer = 7\nAnswer: 8", "8"),
    ("  just this  ", "just this"),
    ("", ""),
])
def test_extract_answer(reply, answer):
    assert extract_answer(reply) == answer


if __name__ == "__main__":
    make_fixture()


