"""Issue 14, a session directory with two real processes: while one runs a turn the other gets SessionLocked;
a session object that missed the other's turn gets SessionChanged instead of overwriting it; the index is
never half-written and never holds a known secret."""
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reasoning_kit.algos import ToolLoop
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Engine
from reasoning_kit.apps.session import Session, SessionChanged, SessionLocked

ROOT = Path(__file__).resolve().parents[1]

OTHER = """
import asyncio, os, sys, time
from reasoning_kit.algos import ToolLoop
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Engine
from reasoning_kit.apps.session import Session
flag = sys.argv[2]
async def held(request):
    print("in turn", flush=True)
    while not os.path.exists(flag): await asyncio.sleep(0.01)
    return text("answered by the other process")
async def main():
    engine = Engine(); LLMHandler(FakeLLMClient(held)).attach(engine)
    s = Session.open(sys.argv[1], engine, ToolLoop())
    await s.send("hello from the other process")
asyncio.run(main())
"""


def engine_for(reply="ok"):
    engine = Engine()
    LLMHandler(FakeLLMClient(lambda r: text(reply))).attach(engine)
    return engine


def test_two_processes_one_session(tmp_path):
    d, flag = tmp_path / "chat", tmp_path / "go"
    here = Session(engine_for(), ToolLoop(), d)
    asyncio.run(here.send("first, from here"))
    other = subprocess.Popen([sys.executable, "-c", OTHER, str(d), str(flag)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert other.stdout.readline() == "in turn\n"  # the other process is inside its turn
        with pytest.raises(SessionLocked, match="another process is running a turn of it"):
            here.start("second, from here")
        assert [t.n for t in here.turns] == [1]  # nothing was half-started
        flag.write_text("go")
        assert other.wait(timeout=60) == 0
    finally:
        other.kill(); other.wait()
    with pytest.raises(SessionChanged, match="Session.open it again"):
        here.start("second, from here")  # this object has not seen turn 2: it must not write over it
    again = Session.open(d, engine_for("third reply"), ToolLoop())
    assert [t.reply for t in again.turns] == ["ok", "answered by the other process"]
    out = asyncio.run(again.send("third"))
    assert out.value["text"] == "third reply" and [t.n for t in Session.open(d, engine_for(), ToolLoop()).turns] == [1, 2, 3]
    assert sorted(p.name for p in d.iterdir()) == ["session.json", "turn-001.jsonl", "turn-002.jsonl", "turn-003.jsonl"]


def test_the_index_holds_no_known_secret(tmp_path, monkeypatch):
    key, given = "sk-test-SESSIONSECRET-0a1b2c3d", "given-key-9z8y7x6w5v"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    s = Session(engine_for(), ToolLoop(), tmp_path / "s", secrets=[given])
    asyncio.run(s.send(f"my key is {key}, and the other is {given}"))
    index = (tmp_path / "s" / "session.json").read_text()
    for secret in (key, given):
        assert not any(secret[i:i + 8] in index for i in range(len(secret) - 7))
    assert json.loads(index)["turns"][0]["text"] == "my key is ***, and the other is ***"
    assert Session.open(tmp_path / "s", engine_for(), ToolLoop()).turns[0].text == "my key is ***, and the other is ***"


def test_a_link_in_the_directory_that_leads_out_is_not_read(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text("secret stuff\n")
    d = tmp_path / "s"
    s = Session(engine_for(), ToolLoop(), d)
    asyncio.run(s.send("hi"))
    (d / "turn-001.jsonl").unlink()
    (d / "turn-001.jsonl").symlink_to(outside)
    with pytest.raises(ValueError, match="a link that leads out of the session's directory"):
        Session.open(d, engine_for(), ToolLoop())
    (d / "turn-001.jsonl").unlink()
    (d / "turn-001.jsonl").symlink_to(d / "session.json")  # a link that stays inside is only a file name
    with pytest.raises(Exception) as e:
        Session.open(d, engine_for(), ToolLoop())
    assert "leads out" not in str(e.value)


def test_a_key_echoed_by_the_model_or_pasted_by_the_user_leaves_no_trace_on_disk(tmp_path, monkeypatch):
    key = "sk-test-ECHOEDKEY-1234abcd5678"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    seen = []

    def echoing(request):
        seen.append(" ".join(m.content or "" for m in request.messages))
        return text(f"401: invalid x-api-key {key} (first part {key[:12]})")

    engine = Engine()
    LLMHandler(FakeLLMClient(echoing)).attach(engine)
    s = Session(engine, ToolLoop(), tmp_path / "s")
    asyncio.run(s.send(f"here is my key: {key}"))
    asyncio.run(s.send("and again"))
    assert not any(key[i:i + 8] in seen[0] for i in range(len(key) - 7))  # the pasted key never reached the model
    on_disk = "".join(p.read_text() for p in (tmp_path / "s").iterdir())
    assert not any(key[i:i + 8] in on_disk for i in range(len(key) - 7))
    again = Session.open(tmp_path / "s", engine_for(), ToolLoop())
    assert [t.status for t in again.turns] == ["ok", "ok"] and again.turns[0].reply == "401: invalid x-api-key *** (first part ***)"
