"""GeneratorCritic: bounds, LLM and check critics, NO_SOLUTION, budget, order independence, failures, prefixes, replay, fixture."""

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.algos.generator_critic import CRITIC_SYSTEM, GeneratorCritic, parse_verdict
from reasoning_kit.core.events import Timeline
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, RunReducer, Status, fold_run
from reasoning_kit.effects.validate import ValidationHandler

from _support import check_fixture, read_fixture, request_keys, run_scripted, system_of, write_fixture

TASK = "How far is it from A to B?"


def is_critic(request) -> bool:
    return request.role == "critic"


def unit_model(request):
    "Generator says 42 until told about the unit; the critic wants 'km'."
    if is_critic(request):
        return text("ACCEPT" if "km" in request.messages[-1].content else "REVISE\nState the unit (km).")
    told = any("State the unit" in (m.content or "") for m in request.messages)
    return text("42 km" if told else "42")


def slow_learner(request):
    "Three rounds: 42, then 42 km, then 42 km (about 26 miles); the critic wants both units."
    if is_critic(request):
        answer = request.messages[-1].content.split("Answer to review:\n", 1)[1]
        if "km" not in answer:
            return text('```json\n{"accept": false, "feedback": "Give the unit."}\n```')
        if "miles" not in answer:
            return text("The unit is there but readers in the US want miles too.\nVerdict: REVISE")
        return text("**ACCEPT**")
    feedback = " ".join(m.content for m in request.messages[2:] if m.role == "user")
    if "miles" in feedback:
        return text("42 km (about 26 miles)")
    return text("42 km" if "unit" in feedback else "42")


def run_task(algorithm, model, checks=None, **kw):
    "`run_scripted` on TASK, with a ValidationHandler holding `checks` when given."
    return run_scripted(algorithm, model, task=TASK, handlers=[ValidationHandler(checks)] if checks else (), **kw)


def domain(out):
    return [(e.kind, e.data) for e in out.log if e.kind.startswith("generator_critic.")]


# --- bounds -----------------------------------------------------------------------------------


@pytest.mark.parametrize("rounds", [0, -1, 11, 100])
def test_max_rounds_out_of_bounds_is_rejected_naming_the_bound(rounds):
    with pytest.raises(ValueError, match="GeneratorCritic: max_rounds must be 1 to 10"):
        GeneratorCritic(max_rounds=rounds)


@pytest.mark.parametrize("kw, message", [
    ({"max_rounds": True}, "GeneratorCritic: max_rounds must be a whole number from 1 to 10, got True"),  # True is not 1
    ({"max_rounds": 2.5}, "GeneratorCritic: max_rounds must be a whole number from 1 to 10, got 2.5"),
    ({"generator_prompt": ""}, "GeneratorCritic: generator_prompt must be a non-empty string"),
    ({"critic_prompt": None}, "GeneratorCritic: critic_prompt must be a non-empty string"),
    ({"parse": "ACCEPT"}, "GeneratorCritic: parse must be a function"),
    ({"temperature": 3}, "GeneratorCritic: temperature must be 0 to 2, got 3"),
    ({"critic_model": 4}, "GeneratorCritic: critic_model must be a non-empty string or None"),
])
def test_bad_arguments_name_the_parameter_and_what_it_accepts(kw, message):
    with pytest.raises(ValueError) as e:
        GeneratorCritic(**kw)
    assert message in str(e.value), str(e.value)




def test_other_construction_errors_name_the_problem():
    with pytest.raises(ValueError, match="revise_prompt must contain {feedback}"):
        GeneratorCritic(revise_prompt="Please try again.")
    with pytest.raises(ValueError, match="GeneratorCritic: validator must be a non-empty string or None"):
        GeneratorCritic(validator="")


@pytest.mark.parametrize("rounds", [1, 3, 10])
def test_max_calls_is_known_at_construction(rounds):
    assert GeneratorCritic(max_rounds=rounds).max_calls == 2 * rounds
    assert GeneratorCritic("unit", max_rounds=rounds).max_calls == rounds


def test_missing_task_fails_with_a_clear_error():
    out, _ = run_scripted(GeneratorCritic(), unit_model, input={"question": "?"})
    assert out.status == Status.FAILED and "needs input['task']" in out.error


# --- happy paths --------------------------------------------------------------------------------


def test_llm_critic_accepts_after_a_revision():
    out, client = run_task(GeneratorCritic(), unit_model)
    assert out.status == Status.OK
    assert out.value == {"answer": "42 km", "rounds": 2, "accepted": True, "critiques": ["State the unit (km)."]}
    assert out.calls == client.calls == 4
    assert request_keys(out) == ["gc/1/generator", "gc/1/critic", "gc/2/generator", "gc/2/critic"]
    assert [r.role for r in client.requests] == ["generator", "critic", "generator", "critic"]


def test_generator_keeps_one_conversation_and_critic_reviews_fresh():
    out, client = run_task(GeneratorCritic(max_rounds=5), slow_learner)
    assert out.value == {"answer": "42 km (about 26 miles)", "rounds": 3, "accepted": True,
                         "critiques": ["Give the unit.", "The unit is there but readers in the US want miles too."]}
    last_generator = [r for r in client.requests if r.role == "generator"][-1]
    assert [m.role for m in last_generator.messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m.content for m in last_generator.messages if m.role == "assistant"] == ["42", "42 km"]
    for r in client.requests:
        if is_critic(r):  # the critic sees only the task and the answer under review
            assert [m.role for m in r.messages] == ["system", "user"] and system_of(r) == CRITIC_SYSTEM
            assert r.messages[1].content.startswith(f"Task:\n{TASK}\n\nAnswer to review:\n")
    assert out.state.algo.messages == [m.model_dump(mode="json", exclude_defaults=True) for m in last_generator.messages] + \
        [{"role": "assistant", "content": "42 km (about 26 miles)"}]


def test_first_draft_accepted_costs_two_calls():
    out, client = run_task(GeneratorCritic(), lambda r: text("ACCEPT" if is_critic(r) else "42 km"))
    assert out.value == {"answer": "42 km", "rounds": 1, "accepted": True, "critiques": []}
    assert client.calls == 2


def test_check_as_critic_only_the_generator_calls_the_model():
    checks = {"unit": lambda answer, ctx: ("km" in answer, "State the unit (km).")}
    out, client = run_task(GeneratorCritic("unit"), unit_model, checks=checks)
    assert out.value == {"answer": "42 km", "rounds": 2, "accepted": True, "critiques": ["State the unit (km)."]}
    assert client.calls == out.calls == 2 and all(r.role == "generator" for r in client.requests)
    assert [e.key for e in out.log if e.kind == "validate.request"] == ["gc/1/validate", "gc/2/validate"]
    assert [v["by"] for v in out.state.algo.verdicts] == ["unit", "unit"]


def test_models_per_role_are_set_on_the_requests():
    out, client = run_task(GeneratorCritic(generator_model="big", critic_model="small"), unit_model)
    assert {(r.role, r.model) for r in client.requests} == {("generator", "big"), ("critic", "small")}


def test_custom_prompts_are_used_and_logged():
    algo = GeneratorCritic(generator_prompt="Be brief.", critic_prompt="Judge harshly.", revise_prompt="Fix: {feedback}")

    def model(r):
        if system_of(r) == "Judge harshly.":
            return text("ACCEPT" if "km" in r.messages[-1].content else "REVISE: unit")
        return text("42 km" if r.messages[-1].content == "Fix: unit" else "42")

    out, client = run_task(algo, model)
    assert out.value["accepted"] and out.value["answer"] == "42 km"
    assert fold_run(out.log).config["revise_prompt"] == "Fix: {feedback}"


def test_parse_override_and_bare_bool_parsers():
    def model(r):
        if is_critic(r):
            return text("yes" if "km" in r.messages[-1].content else "no, the unit")
        return text("42 km" if len(r.messages) > 2 else "42")

    out, _ = run_task(GeneratorCritic(parse=lambda t: t.startswith("yes")), model)
    assert out.value == {"answer": "42 km", "rounds": 2, "accepted": True, "critiques": ["no, the unit"]}


def test_rejection_without_feedback_still_asks_for_a_revision():
    def model(r):
        if is_critic(r):
            return text("REVISE" if r.messages[-1].content.endswith("\n42") else "ACCEPT")
        return text("42 km" if len(r.messages) > 2 else "42")

    out, client = run_task(GeneratorCritic(), model)
    assert out.value["critiques"] == [""] and out.value["accepted"]
    assert "gave no details" in [r for r in client.requests if r.role == "generator"][-1].messages[-1].content


# --- NO_SOLUTION, budget, failures -------------------------------------------------------------


def test_never_accepted_is_no_solution_with_the_last_answer_and_every_critique():
    def model(r):
        if is_critic(r):
            return text(f"REVISE: still wrong ({r.messages[-1].content[-1]})")
        return text(f"draft {len(r.messages) // 2}")

    out, client = run_task(GeneratorCritic(max_rounds=3), model)
    assert out.status == Status.NO_SOLUTION
    assert out.value == {"answer": "draft 3", "rounds": 3, "accepted": False,
                         "critiques": ["still wrong (1)", "still wrong (2)", "still wrong (3)"]}
    assert client.calls == 6 == GeneratorCritic(max_rounds=3).max_calls
    assert domain(out)[-1] == ("generator_critic.exhausted", {"rounds": 3})
    # no revision is asked for after the last round
    assert [d["round"] for k, d in domain(out) if k == "generator_critic.revision_requested"] == [2, 3]


@pytest.mark.parametrize("calls,expected", [
    (0, {"answer": None, "rounds": 0, "accepted": False, "critiques": []}),
    (1, {"answer": "42", "rounds": 1, "accepted": False, "critiques": []}),
    (2, {"answer": "42", "rounds": 1, "accepted": False, "critiques": ["State the unit (km)."]}),
    (3, {"answer": "42 km", "rounds": 2, "accepted": False, "critiques": ["State the unit (km)."]}),
])
def test_budget_cut_off_reads_the_result_from_the_partial_state(calls, expected):
    out, client = run_task(GeneratorCritic(), unit_model, budget=Budget(calls=calls))
    assert out.status == Status.BUDGET_EXHAUSTED and out.state.exhausted == "calls"
    assert out.value == expected
    assert out.calls == client.calls == calls
    assert fold_run(out.log).algo == out.state.algo


def test_enough_budget_is_not_exhausted():
    out, _ = run_task(GeneratorCritic(), unit_model, budget=Budget(calls=4))
    assert out.status == Status.OK and out.value["accepted"]


def test_failed_critic_call_fails_the_run_but_keeps_the_draft():
    def model(r):
        if is_critic(r):
            raise ConnectionError("critic is down")
        return text("42")

    out, client = run_task(GeneratorCritic(), model)
    assert out.status == Status.FAILED and "critic is down" in out.error
    assert out.value == {"answer": "42", "rounds": 1, "accepted": False, "critiques": []}


def test_failed_check_fails_the_run_naming_the_check():
    out, _ = run_task(GeneratorCritic("units"), unit_model, checks={"unit": lambda a, c: True})
    assert out.status == Status.FAILED and "no check named 'units'" in out.error


# --- order independence, no call twice ------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_completion_orders_give_identical_results_state_and_calls(seed):
    def once(seed):
        out, client = run_task(GeneratorCritic(max_rounds=5), slow_learner, seed=seed)
        keys = request_keys(out)
        assert len(keys) == len(set(keys)) == client.calls == out.calls
        return (out.status, out.value, out.state.algo, out.calls, domain(out))
    assert once(seed) == once(0)


def test_no_model_call_is_issued_twice():
    out, client = run_task(GeneratorCritic(max_rounds=5), slow_learner)
    dumped = [r.model_dump_json() for r in client.requests]
    assert len(dumped) == len(set(dumped)) == out.calls == 6


# --- prefixes, replay, fixture --------------------------------------------------------------------


def test_every_prefix_folds_to_a_state_the_stepper_can_draw():
    out, _ = run_task(GeneratorCritic(max_rounds=5), slow_learner)
    algo = GeneratorCritic(max_rounds=5)
    timeline = Timeline(out.log, RunReducer(algo), every=4)
    previous = None
    for k in range(len(out.log) + 1):
        s = fold_run(out.log[:k], algo).algo
        if k:  # given only the log, the algorithm is found through run.started
            assert s == fold_run(out.log[:k]).algo
        assert s == timeline.state_at(k).algo
        assert len(s.drafts) == s.rounds and len(s.verdicts) in (s.rounds - 1, s.rounds) or s.rounds == 0
        if previous is not None:  # the state only grows
            assert s.drafts[:len(previous.drafts)] == previous.drafts and s.verdicts[:len(previous.verdicts)] == previous.verdicts
        previous = s
        e = out.log[k - 1] if k else None
        if e is not None and e.kind == "generator_critic.drafted":  # a draft is shown before its verdict
            assert s.drafts[-1] == e.data["answer"] and len(s.verdicts) == s.rounds - 1
    assert previous == out.state.algo


def test_replay_calls_the_model_zero_times():
    first, _ = run_task(GeneratorCritic(max_rounds=5), slow_learner)
    again, client = run_task(GeneratorCritic(max_rounds=5), lambda r: 1 / 0, replay=first.log)
    assert client.calls == 0 and again.sent == {} and again.served == {"llm": first.calls}
    assert (again.status, again.value, again.state.algo) == (first.status, first.value, first.state.algo)


def test_replay_of_a_budget_cut_run_continues_with_more_budget():
    cut, _ = run_task(GeneratorCritic(), unit_model, budget=Budget(calls=3))
    resumed, client = run_task(GeneratorCritic(), unit_model, replay=cut.log)
    assert resumed.status == Status.OK and resumed.value["answer"] == "42 km"
    assert client.calls == 1 and resumed.served == {"llm": 3}


def make_fixture():  # run once by hand (python tests/test_generator_critic.py) to write the frozen v0.1 log
    out, _ = run_task(GeneratorCritic(max_rounds=5), slow_learner)
    write_fixture("generator_critic", out)


def test_frozen_v0_1_log_keeps_folding_to_the_same_state():
    check_fixture("generator_critic", GeneratorCritic)  # status, state and result; the algorithm rebuilt from the log


def test_frozen_log_replays_without_the_model():
    log, expected = read_fixture("generator_critic")
    out, client = run_task(GeneratorCritic(max_rounds=5), lambda r: 1 / 0, replay=log)
    assert client.calls == 0 and out.status.value == expected["status"]
    assert out.value == expected["result"]


# --- the verdict parser ----------------------------------------------------------------------------


@pytest.mark.parametrize("reply,verdict", [
    ("ACCEPT", (True, "")),
    ("accept", (True, "")),
    ("Accepted.", (True, "")),
    ("LGTM", (True, "")),
    ("Approved: nice work", (True, "nice work")),
    ("> **ACCEPT**", (True, "")),
    ("REVISE\n- give the unit\n- round it", (False, "- give the unit\n- round it")),
    ("REJECT - wrong sum", (False, "wrong sum")),
    ("Needs revision: too vague", (False, "too vague")),
    ("Decision: accept", (True, "")),
    ('{"accept": true}', (True, "")),
    ('{"Accepted": false, "Critique": "no unit"}', (False, "no unit")),
    ('Here is my review:\n```json\n{"ok": false, "reason": "no unit"}\n```', (False, "no unit")),
    ('{"verdict": "REVISE", "feedback": "no unit"}', (False, "no unit")),
    ('{"accept": "yes"}', (True, "")),
    ("Some analysis.\nFinal verdict: **ACCEPT**", (True, "Some analysis.")),
    ("Acceptable? Not really.", (False, "Acceptable? Not really.")),
    ("I cannot accept this.", (False, "I cannot accept this.")),
    ('{"score": 9}', (False, '{"score": 9}')),
    ("   ", (False, "")),
    (None, (False, "")),
])
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply) == verdict



@pytest.mark.parametrize("reply,accepted", [
    ("The answer is correct.", True), ("Yes, this is correct and complete.", True), ("Verdict: the answer is right.", True),
    ("> The answer looks good to me.", True), ("No issues found.", True),
    ("The answer is incorrect. The correct answer is 11.", False), ("The correct answer is 11, not 14.", False),
    ("I can't approve this.", False), ("This is wrong.", False), ("It needs work: give the unit.", False),
    ("Correct? Not quite.", False), ("Let me think.", False),
])
def test_a_verdict_in_prose_is_read(reply, accepted):
    ok, feedback = parse_verdict(reply)
    assert ok is accepted and feedback == reply  # the whole reply is kept as the feedback

if __name__ == "__main__":
    make_fixture()
