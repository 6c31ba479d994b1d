"""Debate: the specification's result and cost, bounds, budget, order independence, drop-outs, prefixes, replay, fixture.
(The specification's example itself, printed line and all, runs in test_example.py.)"""

import json

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.algos.common import extract_answer, majority
from reasoning_kit.algos.debate import Debate, DebateState
from reasoning_kit.core.events import Log, Timeline
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, RunReducer, Status, fold_run

from _support import check_fixture, read_fixture, request_keys, run_scripted, system_of, user_of, write_fixture

PERSONAS = ["[A] careful", "[B] fast", "[C] skeptical"]
FIRST = {"A": "12", "B": "10", "C": "12"}


def run_task(algorithm, model, **kw):
    "`run_scripted` on the specification's task, 6 x 2?"
    return run_scripted(algorithm, model, task="6 x 2?", **kw)


def spec_model(request):
    if "judge of a debate" in system_of(request):
        return text("Answer: 12")
    agent = next(a for a in "ABC" if f"[{a}]" in system_of(request))
    revised = "Other agents answered" in user_of(request)
    return text(f"Answer: {'12' if revised else FIRST[agent]}")


def rounds_seen(request) -> int:
    "How many revision prompts the agent has had (its round)."
    return sum("Other agents answered" in (m.content or "") for m in request.messages if m.role == "user")


def c_fails_in_round_1(request):
    "The fixture's model: like the spec's, but agent C's call fails in round 1 (it drops out)."
    if "judge of a debate" not in system_of(request) and "[C]" in system_of(request) and rounds_seen(request) == 1:
        raise ConnectionError("C's model is down")
    return spec_model(request)


# --- the specification's example ------------------------------------------------------------


def test_spec_example_result_and_cost():
    out, client = run_task(Debate(agents=3, rounds=1, personas=PERSONAS), spec_model)
    assert out.status == Status.OK
    assert out.value == {"answer": "12", "rounds": 1, "agents": 3, "answers": [["12", "10", "12"], ["12", "12", "12"]],
                         "judged": True, "votes": {"12": 3}, "changed": [[], [1]], "dropped": [],
                         "texts": [["Answer: 12", "Answer: 10", "Answer: 12"], ["Answer: 12"] * 3]}
    assert out.calls == client.calls == Debate(agents=3, rounds=1).max_calls == 7
    assert sorted(request_keys(out)) == sorted([f"debate/r{r}/a{i}" for r in range(2) for i in range(3)] + ["debate/judge"])


def test_prompts_carry_persona_history_and_peers():
    out, client = run_task(Debate(agents=3, rounds=2, personas=PERSONAS), spec_model)
    by_key = {e.key: e.data["request"] for e in out.log if e.kind == "llm.request"}
    b2 = by_key["debate/r2/a1"]
    assert b2["role"] == "debater"
    msgs = b2["messages"]
    assert msgs[0]["role"] == "system" and msgs[0]["content"].startswith("[B] fast")
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[2]["content"] == "Answer: 10"  # its own round-0 reply
    assert "[Agent 1]" in msgs[-1]["content"] and "[Agent 3]" in msgs[-1]["content"] and "[Agent 2]" not in msgs[-1]["content"]
    judge = by_key["debate/judge"]
    assert judge["role"] == "judge" and "judge of a debate" in judge["messages"][0]["content"]
    assert "[B]" not in judge["messages"][0]["content"]


def test_agents_without_personas_send_distinct_requests():
    seen = []

    def model(request):
        seen.append(system_of(request))
        return text("Answer: 1")

    out, _ = run_task(Debate(agents=4, rounds=0, judge=False), model)
    assert len(set(seen)) == 4 and out.value["answer"] == "1"


# --- bounds ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kw, message", [
    (dict(agents=1), "Debate: agents must be 2 to 7, got 1"),
    (dict(agents=8), "Debate: agents must be 2 to 7, got 8"),
    (dict(rounds=-1), "Debate: rounds must be 0 to 4, got -1"),
    (dict(rounds=5), "Debate: rounds must be 0 to 4, got 5"),
    (dict(agents=3, personas=["a", "b"]), "len(personas) = 2 but agents = 3"),
    (dict(agents=2, personas=["a", "b", "c"]), "len(personas) = 3 but agents = 2"),
    (dict(personas=["a", "b", 3]), "Debate: personas must be a list of strings or None"),
    (dict(personas="abc"), "Debate: personas must be a list of strings or None, got 'abc'"),  # not three one-letter personas
    (dict(judge="no"), "Debate: judge must be True or False, got 'no'"),  # "no" is not taken as true
    (dict(judge=1), "Debate: judge must be True or False, got 1"),
    (dict(agents=True), "Debate: agents must be a whole number from 2 to 7, got True"),
    (dict(rounds="1"), "Debate: rounds must be a whole number from 0 to 4, got '1'"),
    (dict(temperature=2.5), "Debate: temperature must be 0 to 2, got 2.5"),
    (dict(temperature="hot"), "Debate: temperature must be a number from 0 to 2 or None"),
    (dict(parse="last line"), "Debate: parse must be a function or None"),
    (dict(judge_model=3), "Debate: judge_model must be a non-empty string or None"),
    (dict(revise_prompt="Revise."), "must contain {others}"),
    (dict(agent_prompt="You are {who}"), "may only use the placeholders"),
])
def test_bounds_rejected_at_construction(kw, message):
    with pytest.raises(ValueError, match=None) as e:
        Debate(**kw)
    assert message in str(e.value), str(e.value)


@pytest.mark.parametrize("agents, rounds, judge, calls", [(2, 0, False, 2), (2, 0, True, 3), (3, 1, True, 7), (7, 4, True, 36)])
def test_max_calls_is_exact(agents, rounds, judge, calls):
    algo = Debate(agents=agents, rounds=rounds, judge=judge)
    assert algo.max_calls == calls
    out, client = run_task(algo, lambda r: text("Answer: 5"))
    assert out.calls == client.calls == calls


def test_missing_task_fails_clearly():
    out, _ = run_scripted(Debate(), spec_model, input={"question": "6 x 2?"})
    assert out.status == Status.FAILED and "input['task']" in out.error


# --- budget ---------------------------------------------------------------------------------


@pytest.mark.parametrize("calls", range(0, 7))
def test_budget_cut_off_ends_cleanly_with_partial_result(calls):
    out, client = run_task(Debate(agents=3, rounds=1, personas=PERSONAS), spec_model, budget=Budget(calls=calls))
    assert out.status == Status.BUDGET_EXHAUSTED
    assert out.calls == client.calls == calls
    assert out.value["judged"] is False
    answered = sum(a is not None for row in out.value["answers"] for a in row)
    assert answered == calls  # every call that was paid for is recorded
    assert out.value == Debate().result(fold_run(out.log).algo)
    if calls == 0:
        assert out.value["answer"] is None and out.value["answers"] == [[None, None, None]]
    else:
        assert out.value["answer"] == "12"  # the majority of the last finished round (or of round 0 so far)


def test_budget_cut_before_the_judge():
    out, _ = run_task(Debate(agents=3, rounds=1, personas=PERSONAS), spec_model, budget=Budget(calls=6))
    assert out.value["rounds"] == 1 and out.value["answers"][1] == ["12", "12", "12"]
    assert out.value["answer"] == "12" and not out.value["judged"] and out.state.exhausted == "calls"


def test_resume_after_cut_off_sends_only_the_missing_calls():
    algo = Debate(agents=3, rounds=1, personas=PERSONAS)
    cut, _ = run_task(algo, spec_model, budget=Budget(calls=4))
    resumed, client = run_task(algo, spec_model, replay=cut.log)
    full, _ = run_task(algo, spec_model)
    assert client.calls == 3 and resumed.served == {"llm": 4}
    assert resumed.value == full.value and resumed.state.algo == full.state.algo


# --- order independence and no call twice ---------------------------------------------------


SCENARIOS = {
    "spec": (lambda: Debate(agents=3, rounds=1, personas=PERSONAS), spec_model),
    "drop": (lambda: Debate(agents=3, rounds=3, personas=PERSONAS), c_fails_in_round_1),
    "vote": (lambda: Debate(agents=3, rounds=2, judge=False, personas=PERSONAS), spec_model),
    "seven": (lambda: Debate(agents=7, rounds=2), lambda r: text(f"Answer: {len(system_of(r)) % 3}")),
}


def _debate_run(name, seed):
    make, model = SCENARIOS[name]
    out, client = run_task(make(), model, seed=seed)
    keys = request_keys(out)
    assert len(keys) == len(set(keys)) == client.calls == out.calls  # no model call issued twice
    domain = [(e.kind, e.data) for e in out.log if e.kind.startswith("debate.")]  # the domain events come in one order
    return (out.status, out.value, out.state.algo, out.calls, sorted(keys), domain)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_completion_orders_give_identical_runs(name, seed):
    assert _debate_run(name, seed) == _debate_run(name, 0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_budget_cut_is_order_independent(seed):
    def once(seed):
        out, client = run_task(Debate(agents=5, rounds=2, personas=None), lambda r: text(f"Answer: {len(system_of(r)) % 2}"),
                               budget=Budget(calls=8), seed=seed)
        return (out.status, out.value, out.state.algo, out.calls, client.calls)
    got = once(seed)
    assert got == once(0)
    assert got[0] == Status.BUDGET_EXHAUSTED and got[3] == got[4] == 8  # the limit itself: eight calls, not nine


# --- failures ---------------------------------------------------------------------------------


def test_failed_agent_drops_out_and_is_never_asked_again():
    out, client = run_task(Debate(agents=3, rounds=3, personas=PERSONAS), c_fails_in_round_1)
    assert out.status == Status.PARTIAL and out.value["answer"] == "12"
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named
    assert out.value["answers"] == [["12", "10", "12"], ["12", "12", None], ["12", "12", None], ["12", "12", None]]
    assert out.value["dropped"] == [2] and out.state.algo.dropped[2]["round"] == 1
    assert "C's model is down" in out.state.algo.dropped[2]["error"]
    assert client.calls == 3 + 3 + 2 + 2 + 1
    assert not any(k.startswith("debate/r2/a2") or k.startswith("debate/r3/a2") for k in request_keys(out))
    # after dropping out, C is no longer shown to the others
    last = next(e for e in out.log if e.kind == "llm.request" and e.key == "debate/r3/a0").data["request"]["messages"]
    assert "[Agent 3]" not in last[-1]["content"] and "[Agent 2]" in last[-1]["content"]


def test_lone_survivor_stops_the_rounds():
    def model(request):
        if "judge of a debate" in system_of(request):
            return text("Answer: 9")
        if "[A]" not in system_of(request):
            raise TimeoutError("down")
        return text("Answer: 12")

    out, client = run_task(Debate(agents=3, rounds=2, personas=PERSONAS), model)
    assert out.status == Status.PARTIAL and client.calls == 4  # round 0 and the judge; no one to debate with
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named
    assert out.state.algo.stopped_early and out.value["rounds"] == 0
    # the judge's 9 is no agent's answer: it is ignored (issue 43) and the lone survivor's 12 wins the vote
    assert out.value["answer"] == "12" and not out.value["judged"]
    assert out.state.algo.judge_ignored == {"answer": "9", "text": "Answer: 9", "candidates": ["12"]}


def test_every_agent_failing_in_a_round_fails_the_debate():
    def model(request):
        if rounds_seen(request) == 1:
            raise RuntimeError("all down")
        return spec_model(request)

    out, client = run_task(Debate(agents=3, rounds=2, personas=PERSONAS), model)
    assert out.status == Status.FAILED and "every agent failed in round 1" in out.error
    assert out.state.algo.failed and out.value["answers"][0] == ["12", "10", "12"]
    assert out.value["answer"] == "12" and not out.value["judged"]  # round 0's answers still count
    assert client.calls == 6


def with_judge(judge):
    "The specification's debaters, with `judge` (a function of the request) answering as the judge."
    return lambda request: judge(request) if "judge of a debate" in system_of(request) else spec_model(request)


def test_failed_judge_falls_back_to_the_vote():
    def judge(request):
        raise RuntimeError("judge down")

    out, _ = run_task(Debate(agents=3, rounds=0, personas=PERSONAS), with_judge(judge))
    assert out.status == Status.PARTIAL
    assert out.failed_calls and set(out.failed_calls) <= {e.key for e in out.log if e.kind == "llm.error"}  # the lost calls are named
    assert (out.value["answer"], out.value["judged"], out.value["votes"]) == ("12", False, {"12": 2, "10": 1})
    assert "judge down" in out.state.algo.judge_error


def test_judge_reply_without_answer_falls_back_to_the_vote():
    out, _ = run_task(Debate(agents=3, rounds=0, personas=PERSONAS), with_judge(lambda request: text("")))
    assert (out.value["answer"], out.value["judged"]) == ("12", False)
    assert "no answer" in out.state.algo.judge_error


def test_no_answers_at_all_is_no_solution():
    out, _ = run_task(Debate(agents=2, rounds=1, judge=False), lambda r: text(""))
    assert out.status == Status.NO_SOLUTION and out.value["answer"] is None


# --- parsing and voting -----------------------------------------------------------------------


def test_parser_is_overridable_by_argument_and_by_subclass():
    def model(request):
        return text("I'd say twelve. FINAL=12" if "[A]" in system_of(request) else "FINAL=12")

    plain, _ = run_task(Debate(agents=2, rounds=0, judge=False, personas=["[A]", "[B]"]), model)
    assert plain.value["answers"] == [["12", "12"]]  # the default reads the number each reply concludes with

    parse = lambda t: t.split(".")[0] if t and "FINAL=" in t else None  # noqa: E731
    by_arg, _ = run_task(Debate(agents=2, rounds=0, judge=False, personas=["[A]", "[B]"], parse=parse), model)
    assert by_arg.value["answers"] == [["I'd say twelve", "FINAL=12"]]  # used as given: no normalisation
    assert "parse" not in by_arg.state.config or by_arg.state.config["parse"] is None  # functions stay out of the log

    class FinalDebate(Debate):
        def parse_answer(self, text):
            return parse(text)

    by_subclass, _ = run_task(FinalDebate(agents=2, rounds=0, judge=False, personas=["[A]", "[B]"]), model)
    assert by_subclass.value["answers"] == [["I'd say twelve", "FINAL=12"]]


@pytest.mark.parametrize("reply, answer", [
    ("Answer: 12", "12"), ("answer: 3\nthen Answer: 4", "4"), ("**Answer:** 12.", "12"),
    ("The final answer is: $\\frac{1}{2}$", "\\frac{1}{2}"), ("so \\boxed{7}", "7"), ("Answer:\n 3.5", "3.5"),
    ("12", "12"), ("I think it is 12.\n", "I think it is 12"), ("", None), ("   \n ", None), (None, None),
])
def test_extract_answer(reply, answer):
    assert extract_answer(reply) == answer


def test_majority_ties_go_to_the_first_listed():
    assert majority(["b", "a", "a", "b"]) == ("b", {"b": 2, "a": 2})
    assert majority([None, "x"]) == ("x", {"x": 1})
    assert majority([]) == (None, {})


def test_vote_tie_is_broken_by_agent_order():
    def model(request):
        return text("Answer: 8" if "agent 1." in system_of(request) or "agent 3." in system_of(request) else "Answer: 7")

    out, _ = run_task(Debate(agents=4, rounds=1, judge=False), model)
    assert out.value["votes"] == {"8": 2, "7": 2} and out.value["answer"] == "8"


# --- prefixes, replay, fixture ------------------------------------------------------------------


def test_every_prefix_folds_to_a_state_the_stepper_can_draw():
    out, _ = run_task(Debate(agents=3, rounds=3, personas=PERSONAS), c_fails_in_round_1)
    algo = Debate(agents=3, rounds=3, personas=PERSONAS)
    timeline = Timeline(out.log, RunReducer(algo), every=5)
    answered = 0
    for k in range(len(out.log) + 1):
        s = fold_run(out.log[:k], algo).algo
        assert isinstance(s, DebateState)
        if k:  # from the first event on, the log alone names its algorithm
            assert fold_run(out.log[:k]).algo == s
        assert timeline.state_at(k).algo == s
        answered += k > 0 and out.log[k - 1].kind == "debate.answered"
        assert sum(t is not None for row in s.texts for t in row) == answered
        res = algo.result(s)  # the result reads any prefix
        assert set(res) >= {"answer", "rounds", "agents", "answers", "judged"}
        if s.round >= 0:
            assert len(s.answers) == s.round + 1
    # the moment B changed its mind is visible before round 1 finishes
    k = next(i for i, e in enumerate(out.log, 1) if e.kind == "debate.answered" and e.data["round"] == 1 and e.data["agent"] == 1)
    s = fold_run(out.log[:k]).algo
    assert s.changed[1] == [1] and s.finished_rounds == 1 and s.answers[1] == ["12", "12", None]
    assert fold_run(out.log).algo == out.state.algo


def test_replay_calls_the_model_zero_times():
    algo = Debate(agents=3, rounds=2, personas=PERSONAS)
    first, _ = run_task(algo, c_fails_in_round_1)
    again, client = run_task(algo, c_fails_in_round_1, replay=first.log)
    assert client.calls == 0 and again.sent == {}
    assert again.value == first.value and again.state.algo == first.state.algo and again.calls == first.calls


def test_replay_from_a_file_rebuilds_the_algorithm_from_the_log(tmp_path):
    first, _ = run_task(Debate(agents=3, rounds=1, personas=PERSONAS), spec_model)
    path = first.log.write(tmp_path / "debate.jsonl")
    state = fold_run(Log.read(path))  # no Debate object given: found through the log's run.started
    assert state.algo == first.state.algo


def make_fixture():  # run once by hand to write the frozen v0.1 log
    out, _ = run_task(Debate(agents=3, rounds=2, personas=PERSONAS), c_fails_in_round_1)
    write_fixture("debate", out)


def test_frozen_v0_1_log_keeps_folding_to_the_same_state():
    texts = read_fixture("debate")[1]["state"]["texts"]  # the result now shows the raw replies too
    state, expected = check_fixture("debate", Debate, {"state": {"trimmed": [], "judge_ignored": None, "sized": None}, "result": {"texts": texts}})  # status, state and result
    assert expected["result"]["answers"][1] == ["12", "12", None] and expected["result"]["dropped"] == [2]


def test_frozen_log_replays_without_the_model():
    log, expected = read_fixture("debate")
    out, client = run_task(Debate(agents=3, rounds=2, personas=PERSONAS), lambda r: 1 / 0, replay=log)
    assert client.calls == 0
    assert json.loads(json.dumps(out.value)) == {**expected["result"], "texts": expected["state"]["texts"]}


# --- real replies and bounded prompts -------------------------------------------------------------

LONG = "Let me work through this slowly and check each step twice before I commit to anything. " * 20  # ~1,800 characters


def small_model(request):
    "Replies as a small model writes them: long, and ending in a sentence, not an Answer: line."
    if request.role == "judge":
        return text("I have read every agent. The answer is **11**.")
    first_round = "Other agents answered" not in user_of(request)
    if "agent 2." in system_of(request) and first_round:
        return text(LONG + "Your answer is 14.")
    return text(LONG + ("So 3 + 8 equals 11." if first_round else "Checking again, 3 + 8 = 11.0"))


def test_answers_are_read_and_compared_normalised():
    out, _ = run_task(Debate(agents=3, rounds=2, peer_chars=400), small_model)
    assert out.value["answers"] == [["11", "14", "11"], ["11", "11", "11"], ["11", "11", "11"]]
    assert out.value["changed"] == [[], [1], []]  # "11" then "11.0" is not a change of mind; 14 -> 11 is
    assert (out.value["answer"], out.value["judged"]) == ("11", True)
    assert out.value["texts"][0][1].endswith("Your answer is 14.")  # the raw reply is kept beside its answer


def test_prompts_stay_bounded_and_every_cut_is_an_event():
    limit = 400
    out, client = run_task(Debate(agents=3, rounds=2, peer_chars=limit), small_model)
    trimmed = [e.data for e in out.log if e.kind == "debate.trimmed"]
    assert len(trimmed) == 9 and all(d["kept"] == limit and d["chars"] > limit for d in trimmed)
    assert out.state.algo.trimmed == [{k: d[k] for k in ("round", "agent", "chars", "kept")} for d in trimmed]
    for request in client.requests:  # every reply shown (own or a peer's) is cut to the limit plus a marker line
        for m in request.messages[1:]:
            assert len(m.content) <= 3 * (limit + 60) + 200, (request.role, len(m.content))
    unbounded, big = run_task(Debate(agents=3, rounds=2, peer_chars=20000), small_model)
    assert max(sum(len(m.content) for m in r.messages) for r in big.requests) > 10000  # what the bound saves
    assert unbounded.value["answers"] == out.value["answers"]
    assert not [e for e in unbounded.log if e.kind == "debate.trimmed"]


def test_a_cut_keeps_the_end_where_the_answer_is():
    from reasoning_kit.algos.debate import _cut
    t = "x" * 1000 + "\nAnswer: 11"
    c = _cut(t, 200)
    assert c.endswith("Answer: 11") and "characters cut" in c and len(c) < 260 and _cut("short", 200) == "short"


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10**6))
def test_trimmed_runs_do_not_depend_on_completion_order(seed):
    algo = Debate(agents=3, rounds=2, peer_chars=300)
    a, _ = run_task(algo, small_model)
    b, client = run_task(algo, small_model, seed=seed)
    assert b.value == a.value and b.state.algo == a.state.algo and client.calls == a.calls
    again, silent = run_task(algo, lambda r: 1 / 0, replay=b.log)
    assert silent.calls == 0 and again.state.algo == b.state.algo


def test_peer_chars_is_checked_at_construction():
    for bad in (99, 20001, 2.5, "600", True):
        with pytest.raises(ValueError, match="peer_chars"):
            Debate(peer_chars=bad)
    assert Debate().peer_chars is None and Debate(peer_chars=None).config()["peer_chars"] is None  # None: sized from the window


# --- the judge chooses among the agents' answers; a numeric question's sentences abstain (issue 43) ---------

AGENT_REPLIES = st.one_of(st.integers(0, 20).map(lambda k: f"3 + 5 = {k}"), st.integers(0, 20).map(lambda k: f"Answer: {k}"),
                          st.sampled_from(["You simply add them together.", "I am not sure.", "To add 3 + 5, add them.",
                                           "The sum of two numbers is their total."]))
JUDGE_REPLIES = st.one_of(AGENT_REPLIES, st.sampled_from(["They all agree.", "Agent 2 is right.\nAnswer: the second one",
                                                          "The answer is eleven.", "No answer here"]))


@settings(max_examples=120, deadline=None)
@given(st.lists(AGENT_REPLIES, min_size=3, max_size=3), JUDGE_REPLIES)
def test_the_judge_only_chooses_among_the_agents_answers(replies, ruling):
    def model(request):
        if request.role == "judge": return text(ruling)
        return text(replies[int(system_of(request).split("agent ")[1][0]) - 1])

    out, client = run_scripted(Debate(agents=3, rounds=0), model, task="What is 3 + 5? Reply with the number.")
    s, answers = out.state.algo, out.value["answers"][0]
    given = [a for a in answers if a is not None]
    assert out.value["answer"] is None or out.value["answer"] in given  # never an answer no agent gave
    if sum(a.isdigit() for a in given) * 2 >= len(given) > 0:  # a numeric question: the answers are numbers or abstentions
        assert all(a.isdigit() for a in given) and (out.value["answer"] is None or out.value["answer"].isdigit())
    kinds = [e.kind for e in out.log if e.kind in ("debate.judged", "debate.judge_ignored", "debate.judge_failed", "debate.tallied")]
    assert kinds in (["debate.judged"], ["debate.judge_ignored", "debate.tallied"], ["debate.judge_failed", "debate.tallied"])
    assert out.value["judged"] == (kinds == ["debate.judged"])
    if s.judge_ignored: assert s.judge_ignored["answer"] not in given and s.judge_ignored["candidates"] == list(dict.fromkeys(given))
    again, silent = run_scripted(Debate(agents=3, rounds=0), lambda r: 1 / 0, task="What is 3 + 5? Reply with the number.", replay=out.log)
    assert silent.calls == 0 and again.value == out.value and again.state.algo == s  # replay sends nothing, decides the same


def test_three_agents_say_9_and_a_judge_that_says_11_is_ignored():
    def model(request):
        return text("I think 4 + 5 is 11.\nAnswer: 11" if request.role == "judge" else "4 + 5 = 9")
    out, _ = run_scripted(Debate(), model, task="What is 4 + 5? Reply with the number.")
    assert (out.value["answer"], out.value["judged"], out.value["votes"]) == ("9", False, {"9": 3})
    assert out.state.algo.judge_ignored["answer"] == "11" and out.status == Status.OK
    ev = next(e for e in out.log if e.kind == "debate.judge_ignored")
    assert ev.data["candidates"] == ["9"] and ev.data["text"].endswith("Answer: 11")


def test_a_sentence_abstains_when_the_others_give_numbers():
    def model(request):
        if request.role == "judge": return text("Agent 1 explains it best.\nAnswer: You simply add them together")
        return text("You simply add them together." if "agent 1." in system_of(request) else "4 + 5 = 9")
    out, _ = run_scripted(Debate(rounds=0), model, task="What is 4 + 5? Reply with the number.")
    assert out.value["answers"] == [[None, "9", "9"]] and out.value["answer"] == "9"
    assert not out.value["judged"]  # the judge named no number: it abstained (judge_failed), the vote decided


# --- prompts sized from the window the server reports (issue 43) -------------------------------------

from reasoning_kit.models.fake import FakeLLMClient


def words_of(request) -> int:
    "A scripted model's prompt tokens: its words."
    return sum(len((m.content or "").split()) for m in request.messages)


def rambler(lengths):
    "Agent i always writes about `lengths[i]` words ending in its answer; the judge a short ruling."
    def model(request):
        if request.role == "judge":
            return text("Having read them all: 11.")
        i = next(k for k in range(len(lengths)) if f"agent {k + 1}." in system_of(request))
        return text(("Let me check this once more, step by careful step. " * (lengths[i] // 9 + 1)) + "So 3 + 8 = 11.")
    return model


@settings(max_examples=40, deadline=None)
@given(window=st.integers(500, 12000), agents=st.integers(2, 4), rounds=st.integers(0, 3),
       lengths=st.lists(st.integers(5, 300), min_size=4, max_size=4))
def test_sized_prompts_never_exceed_the_window_and_replay_alike(window, agents, rounds, lengths):
    client = FakeLLMClient(rambler(lengths[:agents]), context_window=window)
    out, _ = run_scripted(Debate(agents=agents, rounds=rounds), client, task="What is 3 + 8?")
    sized = out.state.algo.sized
    assert sized is not None and sized["window"] == window
    longest = max(len(t.split()) for row in out.value["texts"] for t in row if t)
    if sized["fits"]:  # every prompt, and a reply as long as the longest (or half the window, if less), fit in the window
        assert max(words_of(r) for r in client.requests) + min(longest, window // 2) <= window
    silent = FakeLLMClient(lambda r: 1 / 0)
    again, _ = run_scripted(Debate(agents=agents, rounds=rounds), silent, task="What is 3 + 8?", replay=out.log)
    assert silent.calls == 0 and again.state.algo == out.state.algo


@settings(max_examples=40, deadline=None)
@given(window=st.integers(500, 12000), agents=st.integers(2, 4), rounds=st.integers(1, 3),
       lengths=st.lists(st.integers(5, 300), min_size=4, max_size=4))
def test_a_large_window_is_not_cut_below_what_fits(window, agents, rounds, lengths):
    """Each reply shown gets an equal share of the room: when the most crowded prompt, with every reply in it as long as
    the longest, and room for one more, takes at most half the window, nothing is cut."""
    whole = FakeLLMClient(rambler(lengths[:agents]))
    uncut, _ = run_scripted(Debate(agents=agents, rounds=rounds, peer_chars=20000), whole, task="What is 3 + 8?")
    longest = max(len(t.split()) for row in uncut.value["texts"] for t in row if t)
    first = max(words_of(r) for r in whole.requests if "Other agents answered" not in user_of(r))
    if first + rounds * (agents * (longest + 3) + 40) + longest * 5 // 4 > window // 2:
        return  # no room to spare: the other test holds it to the window
    out, _ = run_scripted(Debate(agents=agents, rounds=rounds), FakeLLMClient(rambler(lengths[:agents]), context_window=window),
                          task="What is 3 + 8?")
    assert out.state.algo.trimmed == [] and out.value == uncut.value
