"""Resume in place after a real kill -9 at a point hypothesis chooses: no answered call is asked again,
the torn last line is reported once and dropped, and a log has one writer at a time."""
import asyncio
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.core.events import TORN, Log, LogLocked
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.engine import Engine, Status, fold_run

from test_engine import Levels, answer

CHILD = textwrap.dedent("""
    import asyncio, os, signal, sys
    sys.path.insert(0, {tests!r})
    from test_engine import Levels, answer
    from reasoning_kit.models import FakeLLMClient, LLMHandler
    from reasoning_kit.engine import Engine

    calls = 0
    async def model(req):
        global calls
        calls += 1
        if calls == {kill_at}: os.kill(os.getpid(), signal.SIGKILL)  # a real kill -9, in the middle of the run
        await asyncio.sleep(0)
        return answer(req)

    async def main():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(model)).attach(engine)
            await engine.run(Levels(), {{}}, log={log!r}, resume=True)
    asyncio.run(main())
""")


def _full():
    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(answer)).attach(engine)
            return await engine.run(Levels(), {})
    return asyncio.run(go())


FULL = _full()


def _resume(path):
    client = FakeLLMClient(answer)

    async def go():
        async with Engine() as engine:
            LLMHandler(client).attach(engine)
            return await engine.run(Levels(), {}, log=path, resume=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = asyncio.run(go())
    return out, client, [w for w in caught if TORN in str(w.message)]


@settings(max_examples=6, deadline=None)
@given(kill_at=st.integers(1, 18), tear=st.integers(0, 40), kills=st.integers(1, 2))
def test_kill_9_anywhere_then_resume_asks_no_answered_call_again(tmp_path_factory, kill_at, tear, kills):
    path = tmp_path_factory.mktemp("crash") / "run.jsonl"
    for k in range(kills):  # die once, or die again while resuming
        script = CHILD.format(tests=str(Path(__file__).parent), log=str(path), kill_at=max(1, kill_at - 6 * k))
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert proc.returncode == -9 or (k and proc.returncode == 0), proc.stderr  # a resumed child may finish first
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    tear = min(tear, len(lines[-2]) - 1) if len(lines) > 2 else 0
    if tear: path.write_bytes(raw[:-1 - tear])  # as if the kill had come in the middle of writing the last line
    kept = Log.read(path, repair=True)
    answered = {e.key for e in kept if e.kind == "llm.result"}
    out, client, torn = _resume(path)
    assert len(torn) == (1 if tear else 0)  # reported once, only when there was a torn line
    assert out.status == Status.OK and out.value == FULL.value
    asked = {r.messages[-1].content for r in client.requests}
    assert client.calls == 18 - len(answered) and set(out.asked_keys).isdisjoint(answered)
    assert sorted(out.served_keys) == sorted(answered)
    back = Log.read(path)  # the file is whole again, agrees with memory, and folds to the finished run
    assert back.events == out.log.events and fold_run(back).algo == FULL.state.algo
    assert [e.kind for e in back][:len(kept)] == [e.kind for e in kept]  # every complete line was kept


def test_resume_on_a_missing_file_just_starts_and_on_a_finished_one_asks_nothing(tmp_path):
    path = tmp_path / "new.jsonl"
    first, c1, _ = _resume(path)
    again, c2, _ = _resume(path)
    assert (first.status, c1.calls, first.value) == (Status.OK, 18, FULL.value)
    assert (again.status, c2.calls, again.value, len(again.served_keys)) == (Status.OK, 0, FULL.value, 18)
    assert [e.kind for e in Log.read(path)].count("run.resumed") == 1


def test_a_log_has_one_writer(tmp_path):
    path = tmp_path / "one.jsonl"
    holder = Log(path=path)
    with pytest.raises(LogLocked, match="being written by another run"):
        Log.resume(path)
    other = subprocess.run([sys.executable, "-c", f"from reasoning_kit.core.events import Log; Log.resume({str(path)!r})"],
                           capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert other.returncode != 0 and "being written by another run" in other.stderr  # a second process is refused too
    holder.close()
    Log.resume(path).close()  # free again once the first writer is done


def test_resume_needs_a_file_and_not_a_replay(tmp_path):
    async def go():
        async with Engine() as engine:
            with pytest.raises(ValueError, match="needs log="): engine.start(Levels(), {}, resume=True)
            with pytest.raises(ValueError, match="not both"):
                engine.start(Levels(), {}, resume=True, log=tmp_path / "x.jsonl", replay=FULL.log)
    asyncio.run(go())


def test_log_write_replaces_the_file_whole(tmp_path):
    path = tmp_path / "w.jsonl"
    FULL.log.write(path)
    FULL.log.write(path)
    assert Log.read(path).events == FULL.log.events and [p.name for p in tmp_path.iterdir()] == ["w.jsonl"]
