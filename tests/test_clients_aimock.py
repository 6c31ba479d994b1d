"""The clients against real server software written by others: aimock (npm @copilotkit/aimock, MIT),
which serves the OpenAI and Anthropic wire formats with tool calls, streaming, errors and chaos, on
127.0.0.1. The official SDKs talk to the same server in the same tests, for comparison.

aimock is installed by scripts/aimock.sh (into .aimock/) on first use; the tests are skipped only
when npm is missing. `python tests/test_clients_aimock.py record` re-records the committed cassette
tests/fixtures/cassettes/toolloop_weather_aimock.json."""
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from reasoning_kit.algos import ToolLoop
from reasoning_kit.models.clients import AnthropicClient, APIError, Cassette, ConnectionFailed, MalformedResponse, OpenAIClient, StreamTruncated, client_for_model, price_for
from reasoning_kit.models import LLMHandler, LLMRequest, LLMResponse, TextDelta, ToolCallDelta, ToolSpec, user
from reasoning_kit.engine import Budget, Engine, Status
from reasoning_kit.effects.tools import ToolHandler, ToolRegistry, tool

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "aimock" / "fixtures.json"
CASSETTE = ROOT / "tests" / "fixtures" / "cassettes" / "toolloop_weather_aimock.json"
EXPECTED = CASSETTE.with_suffix(".expected.json")
LLMOCK = ROOT / ".aimock" / "node_modules" / ".bin" / "llmock"

# What the committed cassette was recorded with: change any of it and the recording no longer matches.
SYSTEM = "You answer questions about the weather. Use the get_weather tool for each city."
TASK = "Weather in Paris and Rome?"


@tool
def get_weather(city: str) -> str:
    "Current weather in a city."
    return f"{city}: " + {"Paris": "18C", "Rome": "24C"}.get(city, "unknown")


SPEC = ToolRegistry([get_weather]).specs()[0]


def start_aimock(fixtures: Path = FIXTURES) -> tuple[subprocess.Popen, str]:
    "Install aimock if needed, start it on a free 127.0.0.1 port, wait until it answers; returns (process, url)."
    out = subprocess.run(["bash", str(ROOT / "scripts" / "aimock.sh")], capture_output=True, text=True, timeout=600)
    if out.returncode != 0: raise RuntimeError(f"scripts/aimock.sh failed ({out.returncode}): {out.stderr[-2000:]}")
    binary = out.stdout.strip().splitlines()[-1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    logf = tempfile.NamedTemporaryFile("w+", prefix="aimock-", suffix=".log", delete=False)
    proc = subprocess.Popen([binary, "-p", str(port), "-h", "127.0.0.1", "-f", str(fixtures), "--log-level", "warn",
                             "--journal-max", "200"], stdout=logf, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None: break
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as r:
                if r.status == 200: return proc, url
        except OSError: time.sleep(0.1)
    proc.kill(); logf.seek(0)
    raise RuntimeError(f"aimock did not start on {url}: {logf.read()[-2000:]}")


@pytest.fixture(scope="session")
def aimock():
    if shutil.which("npm") is None and not LLMOCK.exists():
        pytest.skip("npm is not installed, so aimock (@copilotkit/aimock) cannot be installed")
    proc, url = start_aimock()
    yield url
    proc.terminate()
    try: proc.wait(10)
    except subprocess.TimeoutExpired: proc.kill()


def run(coro): return asyncio.run(coro)


def fresh_id() -> dict:
    "aimock keeps sequence counters per X-Test-Id: a fresh id gives a test its own sequence."
    return {"x-test-id": uuid.uuid4().hex}


def oa(url, **kw): return OpenAIClient("gpt-4o-mini", base_url=f"{url}/v1", backoff=0.01, max_backoff=0.05, **kw)
def an(url, **kw): return AnthropicClient("claude-haiku-4-5", base_url=url, backoff=0.01, max_backoff=0.05, **kw)
WIRES = {"openai": oa, "anthropic": an}
WEATHER = LLMRequest(messages=[user(TASK)], tools=[SPEC])


class Call:
    key = "test/0"
    def __init__(self): self.events = []
    def emit(self, kind, **data): self.events.append((kind, data))


# ---- the wire formats ---------------------------------------------------------------------------

@pytest.mark.parametrize("wire", WIRES)
def test_text(aimock, wire):
    r = run(WIRES[wire](aimock).complete(LLMRequest(messages=[user("hello")])))
    assert (r.text, r.finish_reason, r.usage.prompt_tokens, r.usage.completion_tokens) == ("Hello! How can I help you today?", "stop", 12, 8)


@pytest.mark.parametrize("wire", WIRES)
def test_several_tool_calls_usage_and_cost(aimock, wire):
    client = WIRES[wire](aimock)
    r = run(client.complete(WEATHER))
    assert r.text == "Checking both cities." and r.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in r.tool_calls] == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    assert all(c.id for c in r.tool_calls) and r.tool_calls[0].id != r.tool_calls[1].id
    p = price_for(client.model)
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (1000, 50)
    assert r.usage.cost == pytest.approx((1000 * p.input + 50 * p.output) / 1e6)


@pytest.mark.parametrize("wire", WIRES)
def test_streaming_reassembles_text_and_tool_call_arguments(aimock, wire):
    async def go():
        client = WIRES[wire](aimock)
        items = [i async for i in client.stream(WEATHER)]
        whole = await client.complete(WEATHER)
        return items, whole
    items, whole = run(go())
    final, deltas = items[-1], items[:-1]
    assert isinstance(final, LLMResponse) and all(isinstance(d, (TextDelta, ToolCallDelta)) for d in deltas)
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == final.text == whole.text
    args = {}
    for d in deltas:
        if isinstance(d, ToolCallDelta): args[d.call] = args.get(d.call, "") + d.arguments
    assert [json.loads(args[j]) for j in sorted(args)] == [c.arguments for c in final.tool_calls]
    assert [(c.name, c.arguments) for c in final.tool_calls] == [(c.name, c.arguments) for c in whole.tool_calls]
    assert (final.finish_reason, final.usage.prompt_tokens) == ("tool_calls", 1000)


@pytest.mark.parametrize("wire", WIRES)
def test_text_arrives_in_several_deltas(aimock, wire):
    items = run(_collect(WIRES[wire](aimock), LLMRequest(messages=[user("Count to five")])))
    texts = [d.text for d in items if isinstance(d, TextDelta)]
    assert len(texts) >= 2 and "".join(texts) == items[-1].text == "one two three four five"


async def _collect(client, request, call=None):
    return [i async for i in client.stream(request, call)]


@pytest.mark.parametrize("wire", WIRES)
def test_n_samples(aimock, wire):
    async def go():
        client = WIRES[wire](aimock)
        r = await client.complete(LLMRequest(messages=[user("hello")], n=3))
        s = await _collect(client, LLMRequest(messages=[user("Count to five")], n=2))
        return r, s, client
    r, s, client = run(go())
    assert len(r.choices) == 3 and r.usage.prompt_tokens == 36  # aimock ignores n: the client makes up the rest
    assert {d.index for d in s if isinstance(d, TextDelta)} == {0, 1} and s[-1].texts == ["one two three four five"] * 2


@pytest.mark.parametrize("wire", WIRES)
def test_toolloop_runs_and_the_budget_sees_real_tokens_and_cost(aimock, wire):
    async def go(budget=None):
        async with Engine() as engine:
            LLMHandler(WIRES[wire](aimock)).attach(engine)
            ToolHandler(ToolRegistry([get_weather])).attach(engine)
            return await engine.run(ToolLoop(agent_prompt=SYSTEM), {"task": TASK}, budget=budget)
    out = run(go())
    assert out.status == Status.OK and out.value["text"] == "Paris is at 18C and Rome at 24C."
    assert (out.calls, out.usage.prompt_tokens, out.usage.completion_tokens) == (2, 2200, 62)
    first_cost = out.log[[e.kind for e in out.log].index("llm.result")].data["result"]["usage"]["cost"]
    assert out.usage.cost > first_cost > 0
    cut = run(go(Budget(cost=first_cost / 2)))  # the first call's worst case (gpt-4o-mini's price) is over that: refused, not overrun
    assert (cut.status, cut.calls, cut.state.exhausted, cut.usage.cost) == (Status.BUDGET_EXHAUSTED, 0, "cost", 0)
    worst = cut.log[[e.kind for e in cut.log].index("llm.request")] if "llm.request" in [e.kind for e in cut.log] else None
    assert worst is None and "this call may cost $" in next(e for e in cut.log if e.kind == "budget.exhausted").data["detail"]
    cut = run(go(Budget(tokens=1000)))
    assert (cut.status, cut.calls, cut.usage.total_tokens) == (Status.BUDGET_EXHAUSTED, 1, 1050)


def test_openrouter_reports_its_own_cost(aimock):
    c = client_for_model(f"openrouter:openai/gpt-4o-mini@{aimock}/api/v1")
    r = run(c.complete(LLMRequest(messages=[user("What does OpenRouter charge?")])))
    assert (r.usage.cost, r.usage.cached_tokens, r.model) == (0.0123, 40, "openai/gpt-4o-mini")


# ---- failures ------------------------------------------------------------------------------------

@pytest.mark.parametrize("wire", WIRES)
def test_503_then_429_with_retry_after_then_success(aimock, wire):
    client, call = WIRES[wire](aimock, headers=fresh_id()), Call()
    t0 = time.monotonic()
    r = run(client.complete(LLMRequest(messages=[user("flaky")]), call))
    assert r.text == "Recovered after two failures." and time.monotonic() - t0 >= 1.0  # aimock's Retry-After: 1
    assert [(d["attempt"], d["error"].split(":")[1].strip()) for _, d in call.events] == [(1, f"{wire} HTTP 503"), (2, f"{wire} HTTP 429")]
    assert call.events[1][1]["wait"] == 1.0
    assert (client.calls, client.requests) == (1, 3)


def test_retries_in_a_run_are_events_not_calls(aimock):
    async def go():
        async with Engine() as engine:
            LLMHandler(oa(aimock, headers=fresh_id())).attach(engine)
            return await engine.run(ToolLoop(), {"task": "flaky"})
    out = run(go())
    assert out.value["text"] == "Recovered after two failures." and out.calls == 1
    assert [e.kind for e in out.log if e.kind.startswith("llm.")] == ["llm.request", "llm.retry", "llm.retry", "llm.result"]


@pytest.mark.parametrize("wire", WIRES)
def test_400_is_not_retried(aimock, wire):
    client, call = WIRES[wire](aimock), Call()
    with pytest.raises(APIError, match="HTTP 400: messages: unknown field 'bogus'") as e:
        run(client.complete(LLMRequest(messages=[user("invalid request")]), call))
    assert not e.value.retryable and client.requests == 1 and call.events == []


@pytest.mark.parametrize("wire", WIRES)
def test_a_stream_cut_halfway(aimock, wire):
    "aimock drops every stream of this prompt after 80 ms: asked again, the listener told to discard, then a clear error."
    got = []
    async def go():
        async for item in WIRES[wire](aimock, max_retries=1).stream(LLMRequest(messages=[user("cut me off")])): got.append(item)
    with pytest.raises(StreamTruncated, match="the stream was cut after.*gave up after 2 attempt"): run(go())
    kinds = [type(i).__name__ for i in got]
    assert kinds.count("StreamRestart") == 1 and "LLMResponse" not in kinds
    for part in (got[:kinds.index("StreamRestart")], got[kinds.index("StreamRestart") + 1:]):
        text = "".join(d.text for d in part if isinstance(d, TextDelta))
        assert 0 < len(text) < 150  # each attempt showed part of the text, never all of it


@pytest.mark.parametrize("wire", WIRES)
def test_malformed_json_from_the_server(aimock, wire):
    client = WIRES[wire](aimock, headers={"x-aimock-chaos-malformed": "1"}, max_retries=1)
    with pytest.raises(MalformedResponse, match=r"body is not JSON: \{malformed json.*gave up after 2 attempt"):
        run(client.complete(LLMRequest(messages=[user("hello")])))
    assert client.requests == 2


def test_dropped_connections_and_chaos_rate_limits(aimock):
    dropped = oa(aimock, headers={"x-aimock-chaos-disconnect": "1"}, max_retries=1)
    with pytest.raises(ConnectionFailed, match="gave up after 2 attempt"): run(dropped.complete(LLMRequest(messages=[user("hello")])))
    limited = oa(aimock, headers={"x-aimock-chaos-ratelimit": "1"}, max_wait=0.5)
    with pytest.raises(APIError, match="HTTP 429: Chaos: rate limit exceeded .*asked to wait 1s, more than max_wait=0.5s"):
        run(limited.complete(LLMRequest(messages=[user("hello")])))
    assert limited.requests == 1


def test_64_calls_in_flight(aimock):
    async def go():
        client = oa(aimock)
        rs = await asyncio.gather(*[client.complete(LLMRequest(messages=[user("hello")])) for _ in range(64)])
        await client.aclose()
        return rs
    assert {r.text for r in run(go())} == {"Hello! How can I help you today?"}


# ---- the official SDKs against the same server ------------------------------------------------------

def test_same_answer_as_the_official_openai_sdk(aimock):
    from openai import AsyncOpenAI
    async def go():
        sdk = AsyncOpenAI(base_url=f"{aimock}/v1", api_key="sk-aimock-test", max_retries=0)
        theirs = await sdk.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": TASK}],
                                                   tools=[{"type": "function", "function": {"name": SPEC.name, "parameters": SPEC.parameters}}])
        await sdk.close()
        return theirs, await oa(aimock).complete(WEATHER)
    theirs, ours = run(go())
    m = theirs.choices[0].message
    assert ours.text == m.content and ours.finish_reason == theirs.choices[0].finish_reason
    assert [(c.name, c.arguments) for c in ours.tool_calls] == [(t.function.name, json.loads(t.function.arguments)) for t in m.tool_calls]
    assert (ours.usage.prompt_tokens, ours.usage.completion_tokens) == (theirs.usage.prompt_tokens, theirs.usage.completion_tokens)


def test_same_answer_as_the_official_anthropic_sdk(aimock):
    from anthropic import AsyncAnthropic
    async def go():
        sdk = AsyncAnthropic(base_url=aimock, api_key="sk-aimock-test", max_retries=0)
        theirs = await sdk.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=[{"role": "user", "content": TASK}],
                                           tools=[{"name": SPEC.name, "input_schema": SPEC.parameters}])
        await sdk.close()
        return theirs, await an(aimock).complete(WEATHER)
    theirs, ours = run(go())
    assert ours.text == "".join(b.text for b in theirs.content if b.type == "text")
    assert [(c.id is not None, c.name, c.arguments) for c in ours.tool_calls] == [(True, b.name, b.input) for b in theirs.content if b.type == "tool_use"]
    assert (ours.usage.prompt_tokens, ours.usage.completion_tokens) == (theirs.usage.input_tokens, theirs.usage.output_tokens)


# ---- cassettes recorded against aimock ------------------------------------------------------------

async def record(url: str, path: Path, wire: str = "openai"):
    "Record the weather ToolLoop against aimock into a cassette at `path`; returns the outcome."
    async with Engine() as engine:
        LLMHandler(Cassette(path, WIRES[wire](url), mode="record")).attach(engine)
        ToolHandler(ToolRegistry([get_weather])).attach(engine)
        return await engine.run(ToolLoop(agent_prompt=SYSTEM), {"task": TASK})


async def replay(path: Path, **kw):
    async with Engine() as engine:
        LLMHandler(Cassette(path)).attach(engine)
        ToolHandler(ToolRegistry([get_weather])).attach(engine)
        return await engine.run(ToolLoop(agent_prompt=SYSTEM, **kw), {"task": TASK})


def _events(out): return [json.dumps([e.kind, e.key, e.data], sort_keys=True) for e in out.log]


@pytest.mark.parametrize("wire", WIRES)
def test_record_against_aimock_then_replay_offline_byte_for_byte(aimock, wire, tmp_path):
    path = tmp_path / f"{wire}.json"
    recorded = run(record(aimock, path, wire))
    replayed = run(replay(path))
    assert recorded.value["text"] == "Paris is at 18C and Rome at 24C."
    assert _events(replayed) == _events(recorded)
    assert replayed.usage == recorded.usage and replayed.usage.cost > 0


def test_the_committed_cassette_still_matches_a_fresh_recording(aimock, tmp_path):
    fresh = run(record(aimock, tmp_path / "fresh.json"))
    committed = run(replay(CASSETTE))
    assert committed.value["text"] == fresh.value["text"] and committed.usage == fresh.usage
    assert json.loads(EXPECTED.read_text()) == {"text": committed.value["text"], "turns": committed.value["turns"],
                                                "usage": committed.usage.model_dump()}


if __name__ == "__main__" and sys.argv[1:] == ["record"]:
    proc, url = start_aimock()
    try:
        if CASSETTE.exists(): CASSETTE.unlink()
        out = asyncio.run(record(url, CASSETTE))
        EXPECTED.write_text(json.dumps({"text": out.value["text"], "turns": out.value["turns"], "usage": out.usage.model_dump()}, indent=1) + "\n")
        print(f"recorded {CASSETTE} ({out.calls} calls): {out.value['text']!r}")
    finally:
        proc.terminate()
