"""Sessions: multi-turn ToolLoop and Swarm conversations, reopening from disk, resuming a turn after a
real crash (a process killed mid-turn) with no model or tool call repeated, budgets, cancellation."""
import asyncio
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from reasoning_kit.algos import Agent, Reflexion, Swarm, ToolLoop
from reasoning_kit.core.events import Log
from reasoning_kit.models import FakeLLMClient, LLMHandler, ToolCall
from reasoning_kit.models.fake import reply, text, tool_call
from reasoning_kit.effects.memory import Memory
from reasoning_kit.engine import Budget, Engine, Status, fold_run
from reasoning_kit.apps.session import Session, SessionBusy, Spent, turn_budget_left
from reasoning_kit.effects.tools import ToolHandler, ToolRegistry, tool

from _support import run

HERE = Path(__file__).parent
RAN: list = []  # tool calls that really ran, in this process


@tool
def order_status(order: str):  # an order id
    "Where an order is."
    RAN.append(order)
    return {"A1": "shipped", "B2": "in the warehouse", "C3": "lost"}.get(order, "unknown")


def assistant(request):
    "Looks up every order the last user message names (in parallel), then sums up; remembers names."
    said = [m.content for m in request.messages if m.role == "user"]
    last = request.messages[-1]
    if last.role == "tool":
        tools = []
        for m in reversed(request.messages):
            if m.role != "tool":
                break
            tools.append(m.content)
        return text("; ".join(reversed(tools)))
    name = next((s.split("my name is ")[1].strip(".") for s in said if "my name is " in s), None)
    orders = [w.strip("?,.") for w in said[-1].split() if w.strip("?,.") in ("A1", "B2", "C3")]
    if orders:
        return reply("Looking.", [ToolCall(name="order_status", arguments={"order": o}) for o in orders])
    if "my name?" in said[-1]:
        return text(f"You are {name}." if name else "I don't know.")
    return text("Nice to meet you." if name else "Hello.")


def make_engine(model, crash_at: int | None = None) -> tuple[Engine, FakeLLMClient]:
    calls = {"n": 0}

    async def wrapped(request):
        calls["n"] += 1
        if crash_at is not None and calls["n"] == crash_at:
            os._exit(3)  # the process dies here: no cleanup, no run.finished
        await asyncio.sleep(0)
        return model(request)

    client = FakeLLMClient(wrapped)
    engine = Engine()
    LLMHandler(client).attach(engine)
    ToolHandler(ToolRegistry([order_status])).attach(engine)
    return engine, client


SCRIPT = ["Hi, my name is Ada.", "Where are A1 and B2?", "What's my name?", "And C3?"]


async def converse(session, messages):
    return [await session.send(m) for m in messages]


def test_a_multi_turn_toolloop_conversation():
    async def go():
        engine, client = make_engine(assistant)
        s = Session(engine, ToolLoop())
        outs = await converse(s, SCRIPT)
        return s, outs, client

    s, outs, client = run(go())
    assert [o.value["text"] for o in outs] == ["Nice to meet you.", "shipped; in the warehouse", "You are Ada.", "lost"]
    assert [o.status for o in outs] == [Status.OK] * 4
    assert [t.calls for t in s.turns] == [1, 2, 1, 2] and client.calls == 6 == s.spent.calls
    roles = [m["role"] for m in s.messages]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "tool", "assistant", "user", "assistant",
                     "user", "assistant", "tool", "assistant"]
    for t in s.turns:  # each turn's log is a whole run that folds to its value
        assert fold_run(t.log).status == "ok" and ToolLoop().result(fold_run(t.log).algo) == t.value
    assert s.turns[3].log[0].data["input"]["messages"][:-1] == [m for m in outs[2].value["messages"] if m["role"] != "system"]


def test_parallel_tool_calls_in_any_order_give_the_same_conversation():
    async def go(seed):
        rng = random.Random(seed)

        async def jittered(request):
            await asyncio.sleep(rng.random() / 500)
            return assistant(request)

        @tool
        async def order_status(order: str):
            "Where an order is."
            await asyncio.sleep(rng.random() / 500)
            return {"A1": "shipped", "B2": "in the warehouse", "C3": "lost"}.get(order, "unknown")

        engine = Engine()
        LLMHandler(FakeLLMClient(jittered)).attach(engine)
        ToolHandler(ToolRegistry([order_status])).attach(engine)
        s = Session(engine, ToolLoop())
        await converse(s, ["Where are A1, B2 and C3?", "And A1?"])
        return s

    sessions = [run(go(seed)) for seed in range(8)]
    for s in sessions:
        assert s.messages == sessions[0].messages
        assert [t.state.algo for t in s.turns] == [t.state.algo for t in sessions[0].turns]


# ---- Swarm --------------------------------------------------------------------------------------

@tool
def refund(order: str) -> str:
    "Refund an order."
    return f"refunded {order}"


AGENTS = {"triage": Agent("You route customers.", handoffs=["billing", "shipping"]),
          "billing": Agent("You handle billing.", tools=["refund"], handoffs=["triage"]),
          "shipping": Agent("You handle shipping.", tools=["order_status"], handoffs=["triage"])}


def desk(request):
    offered = {t.name for t in request.tools}
    last = request.messages[-1]
    user = next(m.content for m in reversed(request.messages) if m.role == "user")
    order = user.split()[-1]
    want = "billing" if "refund" in user.lower() else "shipping"
    if last.role == "user" or "Transferred" in (last.content or ""):
        if f"transfer_to_{want}" in offered:
            return tool_call(f"transfer_to_{want}")
        if want == "billing" and "refund" in offered:
            return tool_call("refund", order=order)
        if want == "shipping" and "order_status" in offered:
            return tool_call("order_status", order=order)
        return tool_call("transfer_to_triage")
    return text(f"Done: {last.content}")


def swarm_engine():
    engine = Engine()
    client = FakeLLMClient(desk)
    LLMHandler(client).attach(engine)
    ToolHandler(ToolRegistry([refund, order_status])).attach(engine)
    return engine, client


def test_swarm_continues_with_the_last_agent_across_turns_and_processes(tmp_path):
    registry = ToolRegistry([refund, order_status])

    async def first():
        engine, client = swarm_engine()
        s = Session(engine, Swarm(AGENTS, registry), tmp_path / "desk")
        a = await s.send("Please refund order A1")
        b = await s.send("Also refund order B2")
        return s, a, b, client

    s, a, b, client = run(first())
    assert (a.value["handoffs"], a.value["agent"], a.value["text"]) == ([["triage", "billing"]], "billing", "Done: refunded A1")
    assert (b.value["handoffs"], b.calls, b.value["text"]) == ([], 2, "Done: refunded B2")  # billing answers at once
    assert s.turns[1].log[0].data["input"]["agent"] == "billing"

    async def later():
        engine, client = swarm_engine()
        s2 = Session.open(tmp_path / "desk", engine, Swarm(AGENTS, registry))
        assert (s2.agent, s2.messages) == ("billing", s.messages)
        c = await s2.send("Where is my parcel C3")  # billing is not shipping: back to triage, then shipping
        return s2, c

    s2, c = run(later())
    assert c.value["handoffs"] == [["billing", "triage"], ["triage", "shipping"]]
    assert (c.value["agent"], c.value["text"], s2.agent) == ("shipping", "Done: lost", "shipping")
    assert c.state.algo.speakers == {1: "billing", 2: "triage", 3: "shipping", 4: "shipping"}


# ---- on disk ------------------------------------------------------------------------------------

def test_reopen_from_disk_restores_history_budgets_and_turns(tmp_path):
    async def go():
        engine, _ = make_engine(assistant)
        s = Session(engine, ToolLoop(max_turns=4), tmp_path / "s", turn_budget=Budget(calls=3), budget=Budget(calls=50, cost=2.0))
        await converse(s, SCRIPT[:2])
        engine2, client2 = make_engine(assistant)
        s2 = Session.open(tmp_path / "s", engine2, ToolLoop(max_turns=4))
        assert (s2.messages, s2.turn_budget, s2.budget) == (s.messages, Budget(calls=3), Budget(calls=50, cost=2.0))
        assert [(t.n, t.text, t.status, t.calls, t.value) for t in s2.turns] == [(t.n, t.text, t.status, t.calls, t.value) for t in s.turns]
        assert s2.spent.calls == 3
        out = await s2.send(SCRIPT[2])
        s3 = Session.open(tmp_path / "s", engine2, ToolLoop(), budget=None)
        return s, s2, s3, out, client2

    s, s2, s3, out, client2 = run(go())
    assert out.value["text"] == "You are Ada." and client2.calls == 1
    assert (len(s3.turns), s3.budget, s3.messages) == (3, None, s2.messages)
    index = json.loads((tmp_path / "s" / "session.json").read_text())
    assert index["format"] == "reasoning_kit.session" and index["algorithm"] == "tool_loop" and index["config"]["max_turns"] == 4
    assert [t["logs"] for t in index["turns"]] == [["turn-001.jsonl"], ["turn-002.jsonl"], ["turn-003.jsonl"]]
    for i, t in enumerate(s2.turns):  # the files are the logs, event for event
        assert Log.read(tmp_path / "s" / f"turn-{i + 1:03d}.jsonl").events == [e for e in t.log.events]


def test_open_errors_are_clear(tmp_path):
    engine, _ = make_engine(assistant)
    with pytest.raises(FileNotFoundError, match="no session at"):
        Session.open(tmp_path, engine, ToolLoop())
    (tmp_path / "session.json").write_text("{not json")
    with pytest.raises(ValueError, match="session.json: not valid JSON"):
        Session.open(tmp_path, engine, ToolLoop())
    (tmp_path / "session.json").write_text(json.dumps({"format": "reasoning_kit.session", "version": 99}))
    with pytest.raises(ValueError, match="newer than this reasoning_kit"):
        Session.open(tmp_path, engine, ToolLoop())
    with pytest.raises(TypeError, match="conversational algorithms"):
        Session(engine, Reflexion())


# ---- crashes ------------------------------------------------------------------------------------

CRASHER = """
import asyncio, sys
sys.path.insert(0, {tests!r})
from test_session import make_engine, assistant, SCRIPT
from reasoning_kit.algos import ToolLoop
from reasoning_kit.apps.session import Session

async def main():
    engine, client = make_engine(assistant, crash_at={crash_at})
    s = Session(engine, ToolLoop(), {path!r})
    for m in SCRIPT: await s.send(m)
asyncio.run(main())
"""


def crash_a_session(path: Path, crash_at: int):
    code = CRASHER.format(tests=str(HERE), crash_at=crash_at, path=str(path))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr  # it died in the model call, as planned


def test_a_turn_killed_mid_way_is_resumed_with_no_call_repeated(tmp_path):
    # the process dies at model call 3: turn 2's first call (asking for two tools) is call 2 and has
    # run its tools; call 3 (summing up) is where it dies.
    crash_a_session(tmp_path / "s", crash_at=3)
    partial = Log.read(tmp_path / "s" / "turn-002.jsonl", repair=True)
    assert partial[-1].kind == "llm.request" and not any(e.kind == "run.finished" for e in partial)
    answered = [e.key for e in partial if e.kind in ("llm.result", "tool.result")]
    assert sorted(answered) == ["loop/1/llm", "loop/1/tool/0", "loop/1/tool/1"]

    async def go():
        RAN.clear()
        engine, client = make_engine(assistant)
        s = Session.open(tmp_path / "s", engine, ToolLoop())
        assert [t.status for t in s.turns] == ["ok", "interrupted"]
        out = await s.resume()
        rest = await converse(s, SCRIPT[2:])
        return s, out, rest, client

    s, out, rest, client = run(go())
    assert (out.status, out.value["text"]) == (Status.OK, "shipped; in the warehouse")
    assert out.served == {"llm": 1, "tool": 2} and out.sent == {"llm": 1}
    assert RAN == ["C3"]  # the two tools of turn 2 did not run again; only turn 4's did
    # the whole conversation cost what an uncrashed one costs: the killed call is the only one asked twice
    async def reference():
        engine, client = make_engine(assistant)
        ref = Session(engine, ToolLoop())
        await converse(ref, SCRIPT)
        return ref, client
    ref, ref_client = run(reference())
    assert s.messages == ref.messages
    assert client.calls == ref_client.calls - 2  # turn 1 and turn 2's first call were made by the dead process
    assert s.turns[1].files == ["turn-002.jsonl", "turn-002.r1.jsonl"]
    assert Session.open(tmp_path / "s", *make_engine(assistant)[:1], ToolLoop()).messages == ref.messages


def test_a_crash_before_the_turns_log_was_written(tmp_path):
    async def go():
        engine, client = make_engine(assistant)
        s = Session(engine, ToolLoop(), tmp_path / "s")
        await s.send(SCRIPT[0])
        index = json.loads((tmp_path / "s" / "session.json").read_text())
        index["turns"].append({"n": 2, "text": SCRIPT[1], "logs": ["turn-002.jsonl"], "status": "running"})
        (tmp_path / "s" / "session.json").write_text(json.dumps(index))  # the index was written, then the process died
        s2 = Session.open(tmp_path / "s", engine, ToolLoop())
        assert s2.turns[-1].status == "interrupted" and len(s2.turns[-1].log) == 0
        out = await s2.resume()
        return out, s2

    out, s2 = run(go())
    assert (out.status, out.value["text"], out.served) == (Status.OK, "shipped; in the warehouse", {})
    assert s2.turns[-1].files == ["turn-002.jsonl", "turn-002.r1.jsonl"]


def test_a_cancelled_turn_leaves_the_history_and_can_be_resumed():
    async def go():
        gate = asyncio.Event()

        async def slow(request):
            if request.messages[-1].role == "tool":
                await gate.wait()
            return assistant(request)

        engine = Engine()
        client = FakeLLMClient(slow)
        LLMHandler(client).attach(engine)
        ToolHandler(ToolRegistry([order_status])).attach(engine)
        s = Session(engine, ToolLoop())
        await s.send(SCRIPT[0])
        before = list(s.messages)
        r = s.start(SCRIPT[1])
        while client.calls < 3:
            await asyncio.sleep(0.001)
        with pytest.raises(SessionBusy):
            await s.send("hello?")
        r.cancel()
        cancelled = await s.wait()
        assert (cancelled.status, s.messages, s.turns[-1].status) == (Status.CANCELLED, before, "cancelled")
        gate.set()
        done = await s.resume()
        return done, s, client

    done, s, client = run(go())
    assert (done.status, done.value["text"], done.served) == (Status.OK, "shipped; in the warehouse", {"llm": 1, "tool": 2})
    assert client.calls == 4  # turn 1, turn 2's first call, the cancelled call, and its retry
    with pytest.raises(ValueError, match="nothing to resume: turn 2 ended"):
        s.start_resume()


# ---- budgets ------------------------------------------------------------------------------------

def test_turn_and_session_budgets():
    async def go():
        engine, client = make_engine(lambda r: tool_call("order_status", order="A1"))
        s = Session(engine, ToolLoop(), turn_budget=Budget(calls=2), budget=Budget(calls=5))
        outs = [await s.send(f"message {i}") for i in range(4)]
        return s, outs, client

    s, outs, client = run(go())
    assert [(o.status, o.calls) for o in outs] == [(Status.BUDGET_EXHAUSTED, 2), (Status.BUDGET_EXHAUSTED, 2),
                                                   (Status.BUDGET_EXHAUSTED, 1), (Status.BUDGET_EXHAUSTED, 0)]
    assert outs[3].error == "session budget spent: 5 of 5 calls used" and client.calls == 5
    assert len(s.turns) == 3 and outs[3].value == {"text": None, "turns": 0, "messages": [], "answer": None}
    assert all(o.error is None for o in outs[:3])


def test_token_and_cost_budgets_and_resume_counts_a_turn_once():
    assert turn_budget_left(None, Budget(tokens=100, cost=1.0), Spent(tokens=40, cost=0.5)) == Budget(tokens=60, cost=0.5)
    with pytest.raises(RuntimeError, match=r"session budget spent: \$1.2500 of \$1.0 used"):
        turn_budget_left(None, Budget(cost=1.0), Spent(cost=1.25))
    with pytest.raises(RuntimeError, match="seconds"):
        turn_budget_left(None, Budget(seconds=1.0), Spent(seconds=1.5))

    async def go():
        up = {"ok": False}

        def model(request):
            if request.messages[-1].role == "tool" and not up["ok"]:
                raise ConnectionError("down")
            return assistant(request)

        engine, client = make_engine(model)
        s = Session(engine, ToolLoop(), budget=Budget(calls=3))
        failed = await s.send(SCRIPT[1])  # call 1 answered, call 2 failed: 2 calls spent
        assert (failed.status, s.spent.calls) == (Status.FAILED, 2)
        up["ok"] = True
        done = await s.resume()  # replays call 1, asks call 2 again: the turn costs 2, not 4
        return s, done

    s, done = run(go())
    assert (done.status, s.spent.calls) == (Status.OK, 2)


def test_recall_sees_each_new_message():
    m = Memory()
    m.add("Order C3 was lost by the courier; offer a refund.", tags=["orders"])
    seen = []

    def model(request):
        seen.append(request.messages[0].content)
        return text("ok")

    async def go():
        engine, _ = make_engine(model)
        s = Session(engine, ToolLoop(recall=m.recall))
        await converse(s, ["Hello", "What about order C3?"])
        return s

    s = run(go())
    assert "lost by the courier" not in seen[0] and "lost by the courier" in seen[1]
    assert all(m["role"] != "system" for m in s.messages)


def test_an_index_naming_a_path_outside_the_session_is_refused(tmp_path):
    "A session index naming ../../etc/passwd (or an absolute path) as a turn's log is never read."
    import json as _json
    from reasoning_kit.apps.session import INDEX, Session as _Session
    from reasoning_kit.algos import ToolLoop as _ToolLoop
    from reasoning_kit.engine import Engine as _Engine
    for bad in ["../../etc/passwd", "/etc/passwd", "sub/../../x"]:
        d = tmp_path / bad.replace("/", "_")
        d.mkdir()
        (d / INDEX).write_text(_json.dumps({"format": "reasoning_kit.session", "version": 1, "algorithm": "tool_loop", "turns": [{"n": 0, "text": "hi", "logs": [bad]}]}))
        with pytest.raises(ValueError, match="only file names inside the session"):
            _Session.open(d, _Engine(), _ToolLoop())
