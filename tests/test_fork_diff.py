"""Fork at any event k: every call answered before k is served, the new settings apply from there,
and the new log records its parent."""
import asyncio

from hypothesis import given, settings, strategies as st

from reasoning_kit.llm import FakeLLMClient, LLMHandler
from reasoning_kit.llm.fake import text
from reasoning_kit.runtime import Budget, Engine, Status

from test_engine import Levels, answer

_client = FakeLLMClient(answer)


async def _go(fn):
    async with Engine() as engine:
        LLMHandler(_client).attach(engine)
        return await fn(engine)

PARENT = asyncio.run(_go(lambda e: e.run(Levels(), {})))


@settings(max_examples=40, deadline=None)
@given(at=st.integers(0, len(PARENT.log)))
def test_fork_at_any_k_reuses_every_call_before_k(at):
    client = FakeLLMClient(answer)

    async def go():
        async with Engine() as engine:
            LLMHandler(client).attach(engine)
            return await engine.fork(PARENT, at=at)
    child = asyncio.run(go())
    before = {e.key for e in PARENT.log[:at] if e.kind == "llm.result"}
    assert sorted(child.served_keys) == sorted(before)
    assert client.calls == 18 - len(before) and set(child.asked_keys).isdisjoint(before)
    assert child.value == PARENT.value
    started = next(e for e in child.log if e.kind == "run.started")
    assert started.data["parent"] == {"path": None, "at": at, "events": len(PARENT.log), "algorithm": "test_levels"}


def test_fork_with_a_new_model_changes_only_what_comes_after_k(tmp_path):
    path = PARENT.log.write(tmp_path / "parent.jsonl")
    first_level_done = next(e.seq for e in PARENT.log if e.kind == "levels.done") + 1
    other = FakeLLMClient(lambda r: text("other"))

    async def go():
        async with Engine() as engine:
            LLMHandler(other).attach(engine)
            return await engine.fork(path, at=first_level_done, budget=Budget(calls=9))
    child = asyncio.run(go())
    assert child.value["levels"][0] == PARENT.value["levels"][0] and child.value["levels"][1] != PARENT.value["levels"][1]
    assert other.calls == 3 and child.status == Status.BUDGET_EXHAUSTED  # the new budget (logical calls, served ones too) applies after k
    assert next(e for e in child.log if e.kind == "run.started").data["parent"]["path"] == str(path)


def test_fork_names_a_bad_k():
    async def go(engine):
        try: await engine.fork(PARENT, at=10_000)
        except ValueError as e: return str(e)
    assert "at must be an event index from 0 to" in asyncio.run(_go(go))


def test_diff_is_reached_from_the_package_root_without_importing_it_early():
    import subprocess, sys
    code = ("import sys, reasoning_kit; early = 'reasoning_kit.timetravel' in sys.modules; "
            "from reasoning_kit.timetravel import diff; print(early, reasoning_kit.diff is diff)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]
