"""ToolLoop and Swarm: order independence of parallel tool calls, budget, replay, prefixes, frozen logs."""
import asyncio
import random

import pytest

from reasoning_kit.algos.swarm import Agent, Swarm
from reasoning_kit.algos.toolloop import ToolLoop
from reasoning_kit.core.events import Log
from reasoning_kit.models import ToolCall
from reasoning_kit.models.fake import reply, text, tool_call
from reasoning_kit.engine import Budget, Status, fold_run
from reasoning_kit.effects.tools import ToolHandler, ToolRegistry, tool

from _support import check_fixture, run_scripted, write_fixture


def make_registry(seed: int, ran: list):
    rng = random.Random(seed)

    @tool
    async def lookup(city: str):  # a city
        "Weather in a city."
        await asyncio.sleep(rng.random() / 500)
        ran.append(city)
        return {"Paris": "rain", "Oslo": "snow", "Rome": "sun"}.get(city, "unknown")

    @tool
    def convert(celsius: float):
        "Celsius to Fahrenheit."
        return celsius * 9 / 5 + 32

    return ToolRegistry([lookup, convert])


def weather_model(req):
    last = req.messages[-1]
    if last.role == "user":
        return reply("Checking.", [ToolCall(name="lookup", arguments={"city": c}) for c in ("Paris", "Oslo", "Rome")])
    tools = [m for m in req.messages if m.role == "tool"]
    if len(tools) == 3:
        return tool_call("convert", celsius=20)
    return text("; ".join(m.content for m in tools))


def _loop(seed, budget=None, replay=None, max_turns=10):
    ran = []
    out, model = run_scripted(ToolLoop(max_turns=max_turns), weather_model, seed=seed, task="Weather in three cities?",
                              budget=budget, replay=replay, handlers=[ToolHandler(make_registry(seed, ran))])
    return out, model, ran


def test_parallel_tool_calls_in_any_order_give_the_same_run():
    outs = [_loop(seed) for seed in range(20)]
    first = outs[0][0]
    assert first.value["text"] == "rain; snow; sun; 68.0"
    orders = {tuple(ran) for _, _, ran in outs}
    assert len(orders) > 1, "tools should have finished in different orders"
    for out, model, ran in outs:
        assert out.value == first.value and out.state.algo == first.state.algo
        assert (out.calls, model.calls, out.state.issued["tool"]) == (3, 3, 4)


def test_budget_cut_off_keeps_the_conversation():
    out, model, _ = _loop(0, budget=Budget(calls=2))
    assert out.status == Status.BUDGET_EXHAUSTED and model.calls == 2
    # system, user, assistant (3 calls), 3 tool results, assistant (convert), its result; turn 3 refused
    assert out.value["text"] is None and len(out.value["messages"]) == 8
    assert [m["role"] for m in out.value["messages"]][-1] == "tool"


def test_replay_runs_no_model_and_no_tool():
    out, _, _ = _loop(1)
    again, model, ran = _loop(2, replay=out.log)
    assert (model.calls, ran) == (0, [])
    assert again.value == out.value and again.served == {"llm": 3, "tool": 4}


def test_every_prefix_folds_to_a_growing_conversation():
    out, _, _ = _loop(3)
    sizes = [len(fold_run(out.log[:k], ToolLoop()).algo.messages) for k in range(len(out.log) + 1)]
    assert sizes == sorted(sizes) and sizes[-1] == len(out.value["messages"])


def test_input_errors_are_named():
    out, _ = run_scripted(ToolLoop(), lambda r: "hi", input={"question": "?"})
    assert out.status == Status.FAILED and "needs input['task'] or input['messages']" in out.error


def swarm_setup(seed):
    @tool
    async def refund(order: str):
        "Refund an order."
        await asyncio.sleep(random.Random(seed * 7 + len(order)).random() / 500)
        return f"refunded {order}"

    registry = ToolRegistry([refund])
    agents = {
        "triage": Agent("You route customers.", handoffs=["billing", "support"]),
        "billing": Agent("You handle billing.", tools=["refund"], handoffs=["triage"], description="Refunds."),
        "support": Agent("You fix problems.", description="Technical help."),
    }

    def model(req):
        offered = {t.name for t in req.tools}
        last = req.messages[-1]
        if "transfer_to_billing" in offered and last.role == "user": return tool_call("transfer_to_billing")
        if last.role == "tool" and "Transferred" in (last.content or ""):
            return reply(None, [ToolCall(name="refund", arguments={"order": o}) for o in ("A1", "B22", "C333")])
        return text("Done: " + ", ".join(m.content for m in req.messages if m.role == "tool" and m.name == "refund"))

    return registry, agents, model


def _swarm(seed, budget=None, replay=None):
    registry, agents, script = swarm_setup(seed)
    return run_scripted(Swarm(agents, registry), script, seed=seed, task="Refund A1, B22 and C333",
                        budget=budget, replay=replay, handlers=[ToolHandler(registry)])


def test_swarm_order_independent_and_bounded():
    outs = [_swarm(seed) for seed in range(15)]
    first = outs[0][0]
    assert first.value["text"] == "Done: refunded A1, refunded B22, refunded C333"
    assert first.value["handoffs"] == [["triage", "billing"]] and first.value["agent"] == "billing"
    for out, model in outs:
        assert out.value == first.value and out.state.algo == first.state.algo and model.calls == 3
    cut, model = _swarm(0, budget=Budget(calls=1))
    assert cut.status == Status.BUDGET_EXHAUSTED and model.calls == 1
    assert cut.value["handoffs"] == [["triage", "billing"]] and cut.value["agent"] == "billing"


def test_swarm_log_folds_without_the_objects_that_ran_it():
    out, _ = _swarm(4)
    back = Log.from_jsonl(out.log.to_jsonl())
    assert fold_run(back).algo == out.state.algo  # the agents come back from the config in run.started


def test_calls_that_share_a_provider_id_are_still_two_calls():
    "Some servers reuse call ids within a reply; the tool keys come from positions, so both run."
    ran = []

    def model(req):
        if req.messages[-1].role == "user":
            return reply(None, [ToolCall(id="call_0", name="lookup", arguments={"city": c}) for c in ("Paris", "Oslo")])
        return text("; ".join(m.content for m in req.messages if m.role == "tool"))

    out, _ = run_scripted(ToolLoop(), model, task="two cities", handlers=[ToolHandler(make_registry(0, ran))])
    assert out.status == Status.OK and out.value["text"] == "rain; snow" and sorted(ran) == ["Oslo", "Paris"]


def test_swarm_tools_keep_validation_the_guard_and_approval():
    "Real tools called by a swarm agent go through the ToolHandler's protections."
    done = []

    @tool
    def refund(order: str, amount: float):
        "Refund an order."
        done.append((order, amount)); return f"refunded {order}"

    @tool(approval=True)
    def close_account(user: str):
        "Close a customer's account."
        done.append(("closed", user)); return "closed"

    registry = ToolRegistry([refund, close_account])
    agents = {"billing": Agent("You handle billing.", tools=["refund", "close_account"])}
    calls = [ToolCall(name="refund", arguments={"order": "A1"}),  # missing amount: invalid
             ToolCall(name="refund", arguments={"order": "A1", "amount": 5000}),  # the guard refuses
             ToolCall(name="refund", arguments={"order": "A1", "amount": 20}),  # runs
             ToolCall(name="close_account", arguments={"user": "bob"})]  # approval says no

    def model(req):
        return reply(None, calls) if req.messages[-1].role == "user" else text("done")

    guard = ToolHandler(registry, guard=lambda c: "over the limit" if c.arguments.get("amount", 0) > 1000 else None,
                        approve=lambda c: False)
    out, _ = run_scripted(Swarm(agents, registry, start="billing"), model, task="refund", handlers=[guard])
    assert [t["error"] for t in out.state.algo.tools_run] == ["InvalidArguments", "Denied", None, "NotApproved"]
    assert done == [("A1", 20.0)]
    assert [e.data["approved"] for e in out.log if e.kind == "tool.approval"] == [False]


@pytest.mark.parametrize("name", ["tool_loop", "swarm"])
def test_frozen_v0_1_logs_keep_folding_to_the_same_state(name):
    check_fixture(name, Swarm if name == "swarm" else ToolLoop)


def freeze():
    "Write the v0.1 fixtures (run once by hand: python tests/test_toolloop.py freeze)."
    for name, make in (("tool_loop", _loop), ("swarm", _swarm)):
        out, *_ = make(0)
        write_fixture(name, out)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["freeze"]: freeze()


# --- the one contract: answer, checked arguments, renamed names, tool_choice ----------------------------------

import warnings

from hypothesis import given, settings, strategies as st


def test_result_has_answer_beside_text():
    out, _, _ = _loop(0)
    assert out.value["answer"] == out.value["text"] == "rain; snow; sun; 68.0"
    sw, _ = _swarm(0)
    assert sw.value["answer"] == sw.value["text"] == "Done: refunded A1, refunded B22, refunded C333"


@pytest.mark.parametrize("kw, message", [
    (dict(max_turns=True), "ToolLoop: max_turns must be a whole number from 1 to 100, got True"),
    (dict(max_turns=0), "ToolLoop: max_turns must be 1 to 100, got 0"),
    (dict(stream="no"), "ToolLoop: stream must be True or False, got 'no'"),
    (dict(tools="lookup"), "ToolLoop: tools must be a list of strings or None, got 'lookup'"),
    (dict(agent_prompt=""), "ToolLoop: agent_prompt must be a non-empty string"),
    (dict(temperature=2.5), "ToolLoop: temperature must be 0 to 2, got 2.5"),
    (dict(tool_choice=3), "ToolLoop: tool_choice must be a non-empty string or None"),
    (dict(recall="notes"), "ToolLoop: recall must be a function or None"),
    (dict(agent_model=""), "ToolLoop: agent_model must be a non-empty string or None"),
])
def test_bad_arguments_name_the_parameter_and_what_it_accepts(kw, message):
    with pytest.raises(ValueError) as e:
        ToolLoop(**kw)
    assert message in str(e.value), str(e.value)


def test_swarm_arguments_are_checked_too():
    _, agents, _ = swarm_setup(0)
    with pytest.raises(ValueError, match="Swarm: max_handoffs must be a whole number from 0 to 20, got True"):
        Swarm(agents, max_handoffs=True)
    with pytest.raises(ValueError, match="Swarm: agents must be a non-empty dict"):
        Swarm(["triage"])
    with pytest.raises(ValueError, match="Swarm: tool_choice must be a non-empty string or None"):
        Swarm(agents, tool_choice="")




def test_tool_choice_model_and_temperature_reach_every_request_with_tools():
    ran = []
    loop = ToolLoop(tool_choice="required", agent_model="small", temperature=0.3)
    out, model = run_scripted(loop, weather_model, task="Weather in three cities?", handlers=[ToolHandler(make_registry(0, ran))])
    assert out.status == Status.OK and len(model.requests) == 3
    assert {(r.tool_choice, r.model, r.temperature) for r in model.requests} == {("required", "small", 0.3)}
    plain, model = run_scripted(ToolLoop(), weather_model, task="Weather in three cities?", handlers=[ToolHandler(make_registry(0, []))])
    assert {r.tool_choice for r in model.requests} == {None}


def test_swarm_passes_tool_choice_into_its_requests():
    registry, agents, script = swarm_setup(0)
    out, model = run_scripted(Swarm(agents, registry, tool_choice="auto"), script, task="Refund A1, B22 and C333",
                              handlers=[ToolHandler(registry)])
    assert out.status == Status.OK and {r.tool_choice for r in model.requests} == {"auto"}
    assert Swarm.from_config(out.state.config).tool_choice == "auto"


_REFERENCE = {}


def _reference(kind):
    if kind not in _REFERENCE: _REFERENCE[kind] = (_loop(0) if kind == "loop" else _swarm(0))[0]
    return _REFERENCE[kind]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_any_completion_order_gives_the_same_loop_and_swarm(seed):
    out, model, ran = _loop(seed)
    ref = _reference("loop")
    assert out.value == ref.value and out.state.algo == ref.state.algo and sorted(ran) == ["Oslo", "Paris", "Rome"]
    assert (out.calls, model.calls, out.state.issued["tool"]) == (3, 3, 4)
    sw, model = _swarm(seed)
    assert sw.value == _reference("swarm").value and model.calls == 3
