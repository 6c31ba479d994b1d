"""Cache and cassettes, offline: record/replay byte for byte, misses that name the request, steps that
keep samples apart, JSON only, keys never on disk, and the committed aimock cassette."""
import asyncio
import json
import random
from pathlib import Path

import httpx
import pytest
import respx

from reasoning_kit.algos import SelfConsistency, ToolLoop
from reasoning_kit.models.clients import CachedClient, Cassette, CassetteMiss, OpenAIClient, client_for_model, settings
from reasoning_kit.models.cassettes import canonical_request, first_difference
from reasoning_kit.models import FakeLLMClient, LLMHandler, LLMRequest, LLMResponse, TextDelta, ToolCall, ToolCallDelta, user
from reasoning_kit.models.fake import reply, text
from reasoning_kit.engine import Engine, Status, fold_run
from reasoning_kit.effects.tools import ToolHandler, ToolRegistry, tool

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "tests" / "fixtures" / "cassettes" / "toolloop_weather_aimock.json"
SYSTEM = "You answer questions about the weather. Use the get_weather tool for each city."


@tool
def get_weather(city: str) -> str:
    "Current weather in a city."
    return f"{city}: " + {"Paris": "18C", "Rome": "24C"}.get(city, "unknown")


def weather_model(req):
    results = [m.content for m in req.messages if m.role == "tool"]
    if not results:
        return reply("Checking.", [ToolCall(id=f"call_{c}", name="get_weather", arguments={"city": c}) for c in ("Paris", "Rome")])
    return text(", ".join(results))


async def weather(client, task="Weather in Paris and Rome?", **kw):
    async with Engine() as engine:
        LLMHandler(client).attach(engine)
        ToolHandler(ToolRegistry([get_weather])).attach(engine)
        return await engine.run(ToolLoop(agent_prompt=SYSTEM, **kw), {"task": task})


def events(out): return [json.dumps([e.kind, e.key, e.data], sort_keys=True) for e in out.log]
def run(coro): return asyncio.run(coro)


def test_record_then_replay_byte_for_byte_with_no_client(tmp_path):
    model = FakeLLMClient(weather_model)
    recorded = run(weather(Cassette(tmp_path / "c.json", model, mode="record")))
    replayed = run(weather(Cassette(tmp_path / "c.json")))
    assert events(replayed) == events(recorded) and model.calls == 2
    assert fold_run(replayed.log).algo == recorded.state.algo
    doc = json.loads((tmp_path / "c.json").read_text())  # plain JSON: nothing in it can run
    assert doc["format"] == "reasoning_kit.cassette" and [e["step"] for e in doc["interactions"]] == ["loop/1/llm", "loop/2/llm"]


def test_a_miss_names_the_request_and_the_difference(tmp_path):
    run(weather(Cassette(tmp_path / "c.json", FakeLLMClient(weather_model), mode="record")))
    out = run(weather(Cassette(tmp_path / "c.json"), task="Weather in Oslo?"))
    assert out.status == Status.FAILED
    assert "CassetteMiss" in out.error and "no answer for step 'loop/1/llm'" in out.error
    assert "at messages[1].content this run has 'Weather in Oslo?', the recording 'Weather in Paris and Rome?'" in out.error
    direct = Cassette(tmp_path / "c.json")
    with pytest.raises(CassetteMiss, match=r"step '#0' \(model the default, role default, 1 messages, last from user: 'hi'\).*Recorded steps: loop/1/llm, loop/2/llm"):
        run(direct.complete(LLMRequest(messages=[user("hi")])))


def test_modes(tmp_path):
    p = tmp_path / "c.json"
    with pytest.raises(FileNotFoundError, match="record it first"): Cassette(p)
    with pytest.raises(ValueError, match="needs a client"): Cassette(p, mode="auto")
    with pytest.raises(ValueError, match="mode must be"): Cassette(p, FakeLLMClient(weather_model), mode="rewind")
    model = FakeLLMClient(weather_model)
    run(weather(Cassette(p, model, mode="auto")))
    run(weather(Cassette(p, model, mode="auto")))  # all hits
    assert model.calls == 2
    run(weather(Cassette(p, model, mode="auto"), task="Weather in Oslo?"))  # new steps recorded beside the old
    assert model.calls == 4 and len(Cassette(p).entries) == 4
    run(weather(Cassette(p, model, mode="record")))  # starts afresh
    assert model.calls == 6 and len(Cassette(p).entries) == 2
    p.write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="not a reasoning_kit cassette"): Cassette(p)


def test_the_same_request_at_different_steps_stays_different_samples(tmp_path):
    rng = random.Random(0)
    sampler = FakeLLMClient(lambda r: text(f"Answer: {rng.choice(['12', '12', '13'])}"))
    async def sc(client):
        async with Engine() as engine:
            LLMHandler(client).attach(engine)
            return await engine.run(SelfConsistency(samples=5, mode="separate"), {"task": "6 x 2?"})
    recorded = run(sc(Cassette(tmp_path / "sc.json", sampler, mode="record")))
    replayed = run(sc(Cassette(tmp_path / "sc.json")))
    answers = [e.data["result"]["choices"][0]["message"]["content"] for e in recorded.log if e.kind == "llm.result"]
    assert len(set(answers)) > 1  # five samples, not one answer five times
    assert events(replayed) == events(recorded) and sampler.calls == 5


def test_occurrences_key_calls_made_outside_an_engine(tmp_path):
    n = iter(range(100))
    model = FakeLLMClient(lambda r: f"sample {next(n)}")
    c = Cassette(tmp_path / "c.json", model, mode="record")
    req = LLMRequest(messages=[user("pick one")], temperature=1.0)
    first = [run(c.complete(req)).text for _ in range(3)]
    again = Cassette(tmp_path / "c.json")
    assert [run(again.complete(req)).text for _ in range(3)] == first == ["sample 0", "sample 1", "sample 2"]
    with pytest.raises(CassetteMiss, match="step '#3'"): run(again.complete(req))


def test_streams_replay_as_deltas(tmp_path):
    model = FakeLLMClient(weather_model)
    c = Cassette(tmp_path / "c.json", model, mode="record")
    req = LLMRequest(messages=[user("Weather?")])
    live = run(_collect(c, req))  # FakeLLMClient cannot stream: its answer is recorded and shown as deltas
    replayed = run(_collect(Cassette(tmp_path / "c.json"), req))
    assert [type(i) for i in replayed] == [TextDelta, ToolCallDelta, ToolCallDelta, LLMResponse]
    assert replayed == live and replayed[-1].tool_calls[1].arguments == {"city": "Rome"}


async def _collect(client, req):
    return [i async for i in client.stream(req)]


def test_the_cache_serves_repeats_and_survives_a_cut_last_line(tmp_path):
    path = tmp_path / "runs.cache.jsonl"
    model = FakeLLMClient(weather_model)
    a = run(weather(CachedClient(model, path)))
    b = run(weather(CachedClient(model, path)))
    assert model.calls == 2 and not a.cached and b.cached == {"llm": 2}  # the second run's calls were served by the cache
    served = [e.data.get("served") for e in b.log if e.kind == "llm.result"]
    assert served == ["cache", "cache"] and b.calls == 0  # logged as served, not counted as model calls
    assert events(a) == [x.replace(', "served": "cache"', "") for x in events(b)]
    with open(path, "a") as f: f.write('{"key": "abc", "st')
    c = CachedClient(model, path)
    assert len(c.entries) == 2 and run(weather(c)).value == a.value and model.calls == 2
    path.write_text('not json\n{"key": 1}\n')
    with pytest.raises(ValueError, match=r"runs.cache.jsonl:1: not JSON"): CachedClient(model, path)


def test_settings_cache_wraps_clients_made_from_model_strings(tmp_path, monkeypatch):
    monkeypatch.setattr(settings, "cache", str(tmp_path / "x.cache.jsonl"))
    c = client_for_model("openai:gpt-4o-mini@http://127.0.0.1:9/v1")
    assert isinstance(c, CachedClient) and isinstance(c.inner, OpenAIClient)


@respx.mock
def test_keys_never_reach_a_recording(tmp_path):
    key = "sk-live-do-not-record-me"
    respx.post("http://127.0.0.1:9/v1/chat/completions").mock(return_value=httpx.Response(200, json={
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}))
    c = Cassette(tmp_path / "c.json", OpenAIClient("m", base_url="http://127.0.0.1:9/v1", api_key=key), mode="record")
    run(c.complete(LLMRequest(messages=[user("hi")])))
    cache = CachedClient(OpenAIClient("m", base_url="http://127.0.0.1:9/v1", api_key=key), tmp_path / "k.cache.jsonl")
    run(cache.complete(LLMRequest(messages=[user("hi")])))
    assert key not in (tmp_path / "c.json").read_text() + (tmp_path / "k.cache.jsonl").read_text() + repr(c) + repr(cache)


def test_keys_ignore_the_port_and_new_default_fields():
    a = LLMRequest(messages=[user("x")], model="openai:m@http://127.0.0.1:1/v1")
    b = LLMRequest(messages=[user("x")], model="openai:m@http://127.0.0.1:2/v1", n=1, tools=[])
    assert canonical_request(a) == canonical_request(b) == {"messages": [{"role": "user", "content": "x"}], "model": "openai:m"}
    assert first_difference({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 3}]}}) == ("a.b[1].c", 2, 3)


def test_the_committed_aimock_cassette_replays_offline():
    out = run(weather(Cassette(COMMITTED)))
    expected = json.loads(COMMITTED.with_suffix(".expected.json").read_text())
    assert {"text": out.value["text"], "turns": out.value["turns"], "usage": out.usage.model_dump()} == expected
    again = run(weather(Cassette(COMMITTED)))
    assert events(again) == events(out)
    calls = [tr["name"] for tr in fold_run(out.log).algo.tools_run]
    assert calls == ["get_weather", "get_weather"]
