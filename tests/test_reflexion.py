"""Reflexion: order independence, budget, replay, prefixes, lessons across runs, the frozen log."""
import warnings

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.algos.reflexion import Reflexion
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, Status, fold_run
from reasoning_kit.effects.validate import ValidationHandler

from _support import check_fixture, run_scripted, system_of, write_fixture


def slow_learner(r):
    "Needs two lessons: first the unit, then the precision."
    s = system_of(r)
    if "reviewing a failed attempt" in s:
        return text("State the unit." if "unit" in r.messages[-1].content else "Give one decimal.")
    if s.startswith("You check answers"):
        a = r.messages[-1].content
        return text("PASS" if "km" in a and "." in a else ("FAIL: no unit" if "km" not in a else "FAIL: too vague"))
    unit, dec = "State the unit" in s, "Give one decimal" in s
    return text(("42.0" if dec else "42") + (" km" if unit else ""))


def checks():
    return ValidationHandler({"precise": lambda a, ctx: ("km" in a and "." in a, "no unit" if "km" not in a else "too vague")})


def _run(seed, validator="precise", budget=None, replay=None, inp=None, max_trials=3):
    return run_scripted(Reflexion(validator=validator, max_trials=max_trials), slow_learner, seed=seed,
                        input=inp or {"task": "How far?"}, budget=budget, replay=replay, handlers=[checks()])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), validator=st.sampled_from(["precise", None]))
def test_two_lessons_then_success_in_any_order(seed, validator):
    out, model = _run(seed, validator)
    assert out.status == Status.OK
    assert out.value == {"candidate": "42.0 km", "answer": "42.0 km", "trials": 3, "reflections": ["State the unit.", "Give one decimal."], "passed": True}
    assert out.state.algo == _run(0, validator)[0].state.algo
    assert model.calls == (5 if validator else 8)
    prompts = [(r.role, tuple(m.content for m in r.messages)) for r in model.requests]
    assert len(prompts) == len(set(prompts)), "a model call was issued twice"


def test_budget_cut_off_keeps_the_lessons():
    out, model = _run(0, budget=Budget(calls=3))
    assert out.status == Status.BUDGET_EXHAUSTED and model.calls == 3
    assert out.value["reflections"] == ["State the unit."] and out.value["candidate"] == "42 km"


def test_no_solution_keeps_everything_and_feeds_the_next_run():
    out, _ = _run(0, max_trials=2)
    assert out.status == Status.NO_SOLUTION
    assert out.value["reflections"] == ["State the unit.", "Give one decimal."]
    nxt, model = _run(1, inp={"task": "How far?", "reflections": out.value["reflections"]})
    assert nxt.status == Status.OK and nxt.value["trials"] == 1 and model.calls == 1


def test_keep_reflections_caps_the_prompt():
    seen = []
    def m(r):
        seen.append(system_of(r)); return slow_learner(r)
    out, _ = run_scripted(Reflexion(validator="precise", keep_reflections=1), m, task="How far?", handlers=[checks()])
    # with one lesson kept, the unit lesson is pushed out by the decimal one, and the model regresses
    assert out.status == Status.NO_SOLUTION and out.value["reflections"] == ["State the unit."]
    assert not any("State the unit" in s and "Give one decimal" in s for s in seen)


def test_replay_and_prefixes():
    out, _ = _run(2)
    again, model = _run(3, replay=out.log)
    assert model.calls == 0 and again.value == out.value and again.served == {"llm": 5, "validate": 3}
    trials = [len(fold_run(out.log[:k], Reflexion(validator="precise")).algo.trials) for k in range(len(out.log) + 1)]
    assert trials == sorted(trials) and trials[-1] == 3


def test_frozen_v0_1_log_keeps_folding_to_the_same_state():
    check_fixture("reflexion", Reflexion, {"state": {"sized": None}})


def freeze():
    out, _ = _run(0)
    write_fixture("reflexion", out)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["freeze"]: freeze()


def test_bad_parameters_and_inputs_are_named():
    with pytest.raises(ValueError, match="max_trials must be 1 to 10, got 11"):
        Reflexion(max_trials=11)
    with pytest.raises(ValueError, match="max_trials must be a whole number from 1 to 10, got 2.5"):
        Reflexion(max_trials=2.5)
    with pytest.raises(ValueError, match="keep_reflections must be 0 to 20"):
        Reflexion(keep_reflections=21)
    out, model = _run(0, inp={"task": "How far?", "reflections": "State the unit."})
    assert out.status == Status.FAILED and "input['reflections'] must be a list of strings" in out.error
    assert model.calls == 0


# --- the one contract: answer, checked arguments, renamed names -------------------------------------------


@pytest.mark.parametrize("kw, message", [
    (dict(max_trials=True), "Reflexion: max_trials must be a whole number from 1 to 10, got True"),
    (dict(max_trials=11), "Reflexion: max_trials must be 1 to 10, got 11"),
    (dict(keep_reflections=-1), "Reflexion: keep_reflections must be 0 to 20, got -1"),
    (dict(validator=""), "Reflexion: validator must be a non-empty string or None"),
    (dict(actor_prompt=None), "Reflexion: actor_prompt must be a non-empty string"),
    (dict(critic_model=3), "Reflexion: critic_model must be a non-empty string or None"),
    (dict(temperature=-0.5), "Reflexion: temperature must be 0 to 2, got -0.5"),
])
def test_bad_arguments_name_the_parameter_and_what_it_accepts(kw, message):
    with pytest.raises(ValueError) as e:
        Reflexion(**kw)
    assert message in str(e.value), str(e.value)




def test_role_models_and_temperature_reach_the_requests():
    out, model = run_scripted(Reflexion(actor_model="big", critic_model="small", reflector_model="mid", temperature=0.2),
                              slow_learner, input={"task": "How far?"})
    assert out.status == Status.OK and out.value["answer"] == "42.0 km"
    assert {(r.role, r.model, r.temperature) for r in model.requests} == {("actor", "big", 0.2), ("critic", "small", 0.2), ("reflector", "mid", 0.2)}


# --- real replies: verdicts in prose, lessons that run long ----------------------------------------


@pytest.mark.parametrize("verdict, ok", [
    ("The answer is correct.", True), ("**Verdict:** APPROVED", True), ("## Review\n\nThis is correct!", True),
    ("PASS", True), ("The answer is not correct; it should say km.", False), ("Incorrect.", False),
    ("FAIL: no unit", False), ("I would not accept this.", False), ("Hmm, let me see.", False),
])
def test_a_critic_in_prose_is_read(verdict, ok):
    def model(r):
        s = system_of(r)
        if s.startswith("You check answers"): return text(verdict)
        if "reviewing a failed attempt" in s: return text("State the unit.")
        return text("42 km")
    out, _ = run_scripted(Reflexion(max_trials=2), model, task="How far?")
    assert out.state.algo.trials[0]["ok"] is ok
    assert (out.status == Status.OK) is ok


def rambler(r):
    if "reviewing a failed attempt" in system_of(r):
        return text("Always state the unit, because " + "distances without units are ambiguous. " * 30)
    return text("42")


def test_lessons_are_bounded_and_each_cut_is_an_event():
    out, client = run_scripted(Reflexion(validator="precise", lesson_chars=60, max_trials=4), rambler, task="How far?",
                               handlers=[checks()])
    cuts = [e.data for e in out.log if e.kind == "reflexion.trimmed"]
    assert [c["trial"] for c in cuts] == [1, 2, 3, 4] and all(c["chars"] > 60 and c["kept"] == 60 for c in cuts)
    assert all(len(l) <= 60 and l.endswith("…") for l in out.value["reflections"])
    actor = [r for r in client.requests if r.role == "actor"]
    assert len(actor[-1].messages[0].content) < 200 + 3 * 70  # three lessons, each cut
    again, silent = run_scripted(Reflexion(validator="precise", lesson_chars=60, max_trials=4), lambda r: 1 / 0,
                                 task="How far?", handlers=[checks()], replay=out.log)
    assert silent.calls == 0 and again.state.algo == out.state.algo and fold_run(out.log).algo == out.state.algo


def test_lesson_chars_is_checked_at_construction():
    for bad in (19, 5001, 1.5, "300"):
        with pytest.raises(ValueError, match="lesson_chars"):
            Reflexion(lesson_chars=bad)


# --- lessons sized from the window the server reports (issue 43) -------------------------------------

from reasoning_kit.models.fake import FakeLLMClient


def wordy(attempt_words: int, lesson_words: int):
    "An actor that writes `attempt_words` words and never states the unit; a reflector that writes `lesson_words`."
    def model(r):
        if "reviewing a failed attempt" in system_of(r):
            return text(" ".join(["unit"] + ["distances need units to mean anything"] * (lesson_words // 6 + 1)))
        return text(" ".join(["about"] * attempt_words) + " 42")
    return model


@settings(max_examples=60, deadline=None)
@given(window=st.integers(300, 8000), keep=st.integers(1, 6), attempt=st.integers(1, 200), lesson=st.integers(5, 400))
def test_sized_lessons_keep_every_attempt_within_the_window_and_replay_alike(window, keep, attempt, lesson):
    client = FakeLLMClient(wordy(attempt, lesson), context_window=window)
    algo = Reflexion(validator="precise", max_trials=keep + 2, keep_reflections=keep)
    out, _ = run_scripted(algo, client, task="How far?", handlers=[checks()])
    sized = out.state.algo.sized
    assert sized is not None and sized["window"] == window and sized["pieces"] == keep
    actors = [r for r in client.requests if r.role == "actor"]
    if sized["fits"]:  # the actor's prompt with its lessons, and a reply as long as the longest (at most half the window), fit
        assert max(sum(len(m.content.split()) for m in r.messages) for r in actors) + min(sized["reply_tokens"], window // 2) <= window
    again, silent = run_scripted(Reflexion(validator="precise", max_trials=keep + 2, keep_reflections=keep), lambda r: 1 / 0,
                                 task="How far?", handlers=[checks()], replay=out.log)
    assert silent.calls == 0 and again.state.algo == out.state.algo
