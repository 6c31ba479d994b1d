"""The gateway (reasoning_kit.apps.gateway): ALGORITHM+UPSTREAM and pass-through, OpenAI's error shape, usage,
traces, replay, budgets, streaming and cancellation on scripted models; then the official `openai` SDK (sync, async,
streaming) and inspect_ai against the gateway over a real llama-server, its usage checked against the server's /metrics."""
import asyncio
import json
import re
import threading
import time

import httpx
import pytest
import uvicorn

from reasoning_kit.apps.gateway import Gateway, RequestCalls, conversation, make_app
from reasoning_kit.engine import Algorithm, Budget
from reasoning_kit.models.core import Choice, LLMResponse, Message, Usage
from reasoning_kit.models.fake import FakeLLMClient

from _support import run, free_port

SECRET = "sk-test-9c1e5b2d4f607f3a"
CHAT = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "What is 2+2?"}]


def scripted(seen: list, answer: str = "4", delay: float = 0.0):
    "A model answering `Answer: <answer>` for every choice, with usage 7 prompt (2 cached) and 3 completion tokens a sample."
    async def model(request):
        seen.append(request)
        if delay: await asyncio.sleep(delay)
        ch = Choice(message=Message(role="assistant", content=f"Thinking. Answer: {answer}"))
        return LLMResponse(choices=[ch], usage=Usage(prompt_tokens=7, completion_tokens=3, cached_tokens=2))  # the fake asks once a sample
    return FakeLLMClient(model)


def post(app, body, path="/v1/chat/completions", headers=None):
    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://gw") as c:
            return await c.post(path, json=body, headers=headers) if body is not None else await c.get(path, headers=headers)
    return run(go())


@pytest.fixture
def gw(tmp_path):
    seen = []
    g = Gateway({"fake:m": scripted(seen)}, runs_dir=tmp_path / "runs", budget=Budget(calls=20, seconds=60), secrets=[SECRET])
    g.seen = seen
    return g


# ---- models, routing, errors -----------------------------------------------------------------------------------------

def test_models_lists_every_algorithm_plus_upstream_that_answers_a_prompt(gw):
    ids = [m["id"] for m in post(gw.app, None, "/v1/models").json()["data"]]
    assert ids[0] == "fake:m" and "self_consistency+fake:m" in ids and "tree_of_thoughts+fake:m" in ids
    needs_owner = {"swarm", "generate_test_repair"}  # agents / a validator: only the owner's defaults can give them
    assert {i.split("+")[0] for i in ids[1:]} == set(Algorithm.registry) - needs_owner


import reasoning_kit.algos  # noqa: E402,F401  (every packaged algorithm registered before the list below is taken)
PACKAGED = sorted(n for n, c in Algorithm.registry.items() if c.__module__.startswith("reasoning_kit.algos.")
                  and n not in ("swarm", "generate_test_repair"))  # not the ones other test modules register


@pytest.mark.parametrize("name", PACKAGED)
def test_every_algorithm_answers_a_prompt(gw, name):
    r = post(gw.app, {"model": f"{name}+fake:m", "messages": CHAT})
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["object"] == "chat.completion" and j["reasoning_kit"]["algorithm"] == name and "4" in j["choices"][0]["message"]["content"]
    assert r.headers["x-run-id"] == j["reasoning_kit"]["run_id"]


def test_the_conversation_reaches_every_call_whole_and_unknown_parameters_reach_the_upstream(gw):
    r = post(gw.app, {"model": "self_consistency+fake:m", "messages": CHAT, "top_k": 5, "stop": "###",
                      "response_format": {"type": "text"}, "reasoning_kit": {"config": {"samples": 3}}})
    assert r.status_code == 200, r.text
    req = gw.seen[-1]
    assert [m.role for m in req.messages] == ["system", "user", "assistant", "user"]
    assert req.messages[0].content.startswith("You are terse.\n\n") and "step by step" in req.messages[0].content
    assert req.messages[1].content == "Hi" and req.messages[-1].content == "What is 2+2?"
    assert req.extra == {"top_k": 5, "response_format": {"type": "text"}} and req.stop == ["###"]


def test_usage_is_the_sum_of_the_calls_with_a_breakdown(gw):
    j = post(gw.app, {"model": "self_consistency+fake:m", "messages": CHAT, "reasoning_kit": {"config": {"samples": 3, "mode": "separate"}}}).json()
    assert j["reasoning_kit"]["calls"] == 3 == len(j["reasoning_kit"]["per_call"])
    assert j["usage"] == {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30, "prompt_tokens_details": {"cached_tokens": 6}}


def test_n_gives_n_independent_runs(gw):
    j = post(gw.app, {"model": "self_consistency+fake:m", "messages": CHAT, "n": 2, "reasoning_kit": {"config": {"samples": 2}}}).json()
    assert [c["index"] for c in j["choices"]] == [0, 1] and j["reasoning_kit"]["n"] == "independent runs"
    assert len({t["run_id"] for t in j["reasoning_kit"]["runs"]}) == 2
    assert j["usage"]["completion_tokens"] == 2 * 6


@pytest.mark.parametrize("body,param,words", [
    ({"model": "majority_vote+fake:m"}, "model", "algorithms: ['best_of_n'"),
    ({"model": "self_consistency+openai:gpt-4o@http://169.254.169.254/v1"}, "model", "may name only ['fake:m']"),
    ({"model": "openai:x@http://127.0.0.1:1/v1"}, "model", "neither a configured upstream"),
    ({"model": "self_consistency+fake:m", "reasoning_kit": {"config": {"samples": 0}}}, "reasoning_kit.config.samples", "samples"),
    ({"model": "self_consistency+fake:m", "reasoning_kit": {"config": {"nope": 1}}}, "reasoning_kit.config.nope", "unknown parameter"),
    ({"model": "self_consistency+fake:m", "reasoning_kit": {"config": {"sampler_model": "openai:x@http://10.0.0.1/v1"}}},
     "reasoning_kit.config.sampler_model", "not a model this server allows"),
    ({"model": "self_consistency+fake:m", "temperature": 0.1, "reasoning_kit": {"config": {"temperature": 0.9}}}, "temperature", "conflict"),
    ({"model": "self_consistency+fake:m", "reasoning_kit": {"budget": {"calls": 500}}}, "reasoning_kit.budget.calls", "exceeds"),
    ({"model": "self_consistency+fake:m", "reasoning_kit": {"budget": {"callz": 5}}}, "reasoning_kit.budget.callz", "callz"),
    ({"model": "self_consistency+fake:m", "reasoning_kit": {"what": 1}}, "reasoning_kit.what", "unknown fields"),
    ({"model": "self_consistency+fake:m", "n": 0}, "n", "n must be"),
    ({"model": "self_consistency+fake:m", "tools": []}, "tools", "not supported"),
    ({"model": "self_consistency+fake:m", "n": 2, "reasoning_kit": {"replay": "0123456789abcdef"}}, "n", "replays one run"),
    ({"model": "self_consistency+fake:m", "messages": [{"role": "assistant", "content": "x"}]}, "messages[0]", "last message"),
])
def test_bad_requests_are_400s_in_openais_shape_naming_the_field(gw, body, param, words):
    r = post(gw.app, {"messages": CHAT, **body})
    assert r.status_code in (400, 404), r.text
    err = r.json()["error"]
    assert err["param"] == param and words in err["message"] and err["type"] == "invalid_request_error", err


def test_a_request_cannot_make_the_gateway_call_a_url_it_was_not_given(gw, monkeypatch):
    import reasoning_kit.models.core as core
    made = []  # every client made from a model string, and every pass-through connection opened
    monkeypatch.setattr(core, "resolve_model", lambda model, **kw: made.append(model))
    monkeypatch.setattr(Gateway, "_pool", lambda self: made.append("pass-through"))
    for model in ["openai:gpt-4o@http://127.0.0.1:9/v1", "self_consistency+openai:x@http://127.0.0.1:9/v1", "fake:m@http://127.0.0.1:9/v1"]:
        assert post(gw.app, {"model": model, "messages": CHAT}).status_code in (400, 404)
    for k in ["sampler_model", "sampler_prompt"]:
        post(gw.app, {"model": "self_consistency+fake:m", "messages": CHAT, "reasoning_kit": {"config": {k: "openai:x@http://127.0.0.1:9/v1"}}})
    assert made == [] and all(not h.routes for h in gw.handlers.values())


def test_a_token_is_required_when_set(tmp_path):
    app = make_app({"fake:m": scripted([])}, token="a-long-token-123")
    assert post(app, None, "/v1/models").json()["error"]["type"] == "authentication_error"
    assert post(app, None, "/v1/models", headers={"authorization": "Bearer a-long-token-123"}).status_code == 200


def test_bodies_and_concurrent_runs_are_bounded(tmp_path):
    g = Gateway({"fake:m": scripted([], delay=0.2)}, max_body=2000, max_running=2)
    assert post(g.app, {"model": "fake:m", "messages": [{"role": "user", "content": "x" * 5000}]}).status_code == 413
    async def three():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(g.app), base_url="http://gw") as c:
            body = {"model": "self_consistency+fake:m", "messages": CHAT, "reasoning_kit": {"config": {"samples": 1}}}
            return await asyncio.gather(*[c.post("/v1/chat/completions", json=body) for _ in range(3)])
    codes = sorted(r.status_code for r in run(three()))
    assert codes == [200, 200, 429]


# ---- traces, budgets, replay -----------------------------------------------------------------------------------------

def test_every_answer_has_a_trace_that_survives_a_restart_and_replays_with_zero_calls(gw, tmp_path):
    j = post(gw.app, {"model": "self_consistency+fake:m", "messages": CHAT, "reasoning_kit": {"config": {"samples": 3}}}).json()
    rid, calls = j["reasoning_kit"]["run_id"], len(gw.seen)
    kinds = [json.loads(l).get("kind") for l in post(gw.app, None, f"/v1/runs/{rid}/events").text.splitlines()][1:]  # a header, then the events
    assert kinds[0] == "run.started" and kinds[-1] == "run.finished" and "self_consistency.voted" in kinds
    again = Gateway({"fake:m": scripted(gw.seen)}, runs_dir=tmp_path / "runs")  # a restart: nothing in memory
    assert [json.loads(l).get("kind") for l in post(again.app, None, f"/v1/runs/{rid}/events").text.splitlines()][1:] == kinds
    page = post(again.app, None, f"/v1/runs/{rid}.html")
    assert page.status_code == 200 and page.text.lstrip().lower().startswith("<!doctype html")
    r = post(again.app, {"model": "self_consistency+fake:m", "messages": CHAT, "seed": 7,  # the replayed run's own seed applies
                         "reasoning_kit": {"config": {"samples": 3}, "replay": rid}}).json()
    assert len(gw.seen) == calls and r["reasoning_kit"]["calls"] == 0 and r["reasoning_kit"]["replayed_calls"] == 1
    assert r["choices"][0]["message"]["content"] == j["choices"][0]["message"]["content"] and r["usage"]["total_tokens"] == 0
    assert post(again.app, None, "/v1/runs/0123456789abcdef/events").status_code == 404


def test_runs_on_disk_are_bounded_oldest_first(tmp_path):
    g = Gateway({"fake:m": scripted([])}, runs_dir=tmp_path, keep=2)
    ids = [post(g.app, {"model": "self_consistency+fake:m", "messages": CHAT}).headers["x-run-id"] for _ in range(4)]
    assert sorted(f.stem for f in tmp_path.glob("*.jsonl")) == sorted(ids[2:])


def test_a_run_stopped_by_its_budget_answers_its_best_so_far_with_length(gw):
    r = post(gw.app, {"model": "tree_of_thoughts+fake:m", "messages": CHAT, "reasoning_kit": {"budget": {"calls": 2}}}).json()
    assert r["choices"][0]["finish_reason"] == "length" and r["reasoning_kit"]["budget_exhausted"] is True
    assert r["reasoning_kit"]["stopped_by"] == "calls" and r["reasoning_kit"]["calls"] == 2


def test_max_tokens_caps_each_call_and_never_widens_the_owner(tmp_path):
    seen = []
    g = Gateway({"fake:m": scripted(seen)}, budget=Budget(call_tokens=64))
    assert post(g.app, {"model": "self_consistency+fake:m", "messages": CHAT, "max_tokens": 32}).status_code == 200
    assert seen[-1].max_tokens == 32
    assert post(g.app, {"model": "self_consistency+fake:m", "messages": CHAT, "max_tokens": 100}).json()["error"]["param"] == "max_tokens"


def test_secrets_never_reach_a_trace(tmp_path):
    g = Gateway({"fake:m": FakeLLMClient(lambda r: f"my key is {SECRET}. Answer: 4")}, runs_dir=tmp_path, secrets=[SECRET])
    r = post(g.app, {"model": "self_consistency+fake:m", "messages": CHAT, "stream": True})
    rid = r.headers["x-run-id"]
    assert SECRET not in r.text and SECRET not in post(g.app, None, f"/v1/runs/{rid}/events").text
    assert SECRET not in post(g.app, None, f"/v1/runs/{rid}.html").text


class Serving:
    "The gateway on a real socket, in a thread of its own."
    def __init__(self, gateway: Gateway):
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(gateway.app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
    def __enter__(self):
        self.thread.start()
        while not self.server.started: time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}/v1"
    def __exit__(self, *exc):
        self.server.should_exit = True; self.thread.join(30)


# ---- streaming --------------------------------------------------------------------------------------------------------

def chunks(text: str) -> list[dict]:
    return [json.loads(l[6:]) for l in text.splitlines() if l.startswith("data: ") and l != "data: [DONE]"]


def test_a_stream_sends_the_steps_as_reasoning_then_the_answer_then_usage(gw):
    r = post(gw.app, {"model": "self_consistency+fake:m", "messages": CHAT, "stream": True, "stream_options": {"include_usage": True},
                      "reasoning_kit": {"config": {"samples": 3}}})
    cs = chunks(r.text)
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in cs if c["choices"])
    assert "self_consistency.sampled" in reasoning and "self_consistency.voted" in reasoning
    content_at = next(i for i, c in enumerate(cs) if c["choices"] and c["choices"][0]["delta"].get("content"))
    assert all("content" not in c["choices"][0]["delta"] or not c["choices"][0]["delta"]["content"] for c in cs[:content_at])
    assert cs[content_at]["choices"][0]["delta"]["content"] == "4" and r.text.rstrip().endswith("data: [DONE]")
    assert cs[-1]["choices"] == [] and cs[-1]["usage"]["completion_tokens"] == 9


def test_a_stream_whose_client_goes_away_cancels_the_run_and_its_calls():
    cancelled = []
    async def slow(request):
        try: await asyncio.sleep(60)
        except asyncio.CancelledError: cancelled.append(1); raise
        return "Answer: 4"
    g = Gateway({"fake:m": FakeLLMClient(slow)})
    with Serving(g) as url:
        body = {"model": "self_consistency+fake:m", "messages": CHAT, "stream": True, "reasoning_kit": {"config": {"samples": 2, "mode": "separate"}}}
        with httpx.stream("POST", url + "/chat/completions", json=body, timeout=30) as r:
            for line in r.iter_lines():
                if "self_consistency.started" in line: break
        entry = g.runs[r.headers["x-run-id"]]
        deadline = time.monotonic() + 10
        while entry.outcome is None and time.monotonic() < deadline: time.sleep(0.02)
    assert entry.outcome.status.value == "cancelled" and cancelled == [1, 1]


# ---- a real llama-server, the openai SDK and inspect_ai ----------------------------------------------------------------

@pytest.fixture(scope="module")
def llama():
    local = pytest.importorskip("reasoning_kit.models.local")
    try: local.find_server()
    except local.LlamaServerMissing: pytest.skip("llama-server is not built")
    with local.serve("smollm2", slots=4) as s:
        yield s


@pytest.fixture(scope="module")
def served(llama, tmp_path_factory):
    g = Gateway([llama.model], runs_dir=tmp_path_factory.mktemp("runs"), budget=Budget(calls=40, call_tokens=48))
    with Serving(g) as url:
        yield g, url, llama.model


def metrics(llama) -> dict:
    text = httpx.get(llama.url + "/metrics").text
    return {m[1]: float(m[2]) for m in re.finditer(r"^llamacpp:(\w+) ([0-9.e+]+)$", text, re.M)}


def test_the_openai_sdk_gets_answers_with_usage_equal_to_the_servers_counters(served, llama):
    openai = pytest.importorskip("openai")
    g, url, up = served
    client = openai.OpenAI(base_url=url, api_key="none")
    for model in [f"self_consistency+{up}", f"tree_of_thoughts+{up}"]:
        before = metrics(llama)
        raw = client.chat.completions.with_raw_response.create(
            model=model, messages=[{"role": "user", "content": "What is 3 + 4?"}], seed=1,
            extra_body={"reasoning_kit": {"config": {"samples": 3} if "self" in model else {"depth": 1, "width": 1, "branching": 2}}})
        resp, after = raw.parse(), metrics(llama)
        ext = resp.model_extra["reasoning_kit"]
        assert raw.headers["x-run-id"] == ext["run_id"] and ext["status"] in ("ok", "no_solution") and ext["calls"] >= 1
        u = resp.usage
        assert u.total_tokens == u.prompt_tokens + u.completion_tokens
        assert u.completion_tokens == after["tokens_predicted_total"] - before["tokens_predicted_total"]
        cached = u.prompt_tokens_details.cached_tokens
        assert u.prompt_tokens - cached == after["prompt_tokens_total"] - before["prompt_tokens_total"]


@pytest.mark.parametrize("name", sorted(set(Algorithm.registry) - {"swarm", "generate_test_repair"}))
def test_the_openai_sdk_gets_an_answer_from_every_algorithm_on_the_real_server(served, name):
    openai = pytest.importorskip("openai")
    g, url, up = served
    r = openai.OpenAI(base_url=url, api_key="none").chat.completions.create(
        model=f"{name}+{up}", messages=[{"role": "user", "content": "What is 2 + 3?"}], max_tokens=24,
        extra_body={"reasoning_kit": {"budget": {"calls": 4}}})  # a run its budget stops still answers: its best so far
    ext = r.model_extra["reasoning_kit"]
    assert ext["algorithm"] == name and 1 <= ext["calls"] <= 4 and r.usage.completion_tokens > 0
    assert r.choices[0].finish_reason == ("length" if ext["budget_exhausted"] else "stop")
    assert isinstance(r.choices[0].message.content, str)


def test_the_async_sdk_streams_reasoning_then_content_and_16_clients_get_their_own_answers(served):
    openai = pytest.importorskip("openai")
    g, url, up = served
    async def go():
        client = openai.AsyncOpenAI(base_url=url, api_key="none")
        stream = await client.chat.completions.create(model=f"self_consistency+{up}", messages=[{"role": "user", "content": "What is 2 + 5?"}],
                                                      stream=True, stream_options={"include_usage": True},
                                                      extra_body={"reasoning_kit": {"config": {"samples": 2}}})
        order, usage = [], None
        async for c in stream:
            if c.usage: usage = c.usage
            for ch in c.choices:
                if (ch.delta.model_extra or {}).get("reasoning_content"): order.append("reasoning")
                if ch.delta.content: order.append("content")
        async def one(i):
            r = await client.chat.completions.with_raw_response.create(
                model=f"self_consistency+{up}", messages=[{"role": "user", "content": f"What is {i} + 1?"}], max_tokens=16,
                extra_body={"reasoning_kit": {"config": {"samples": 1}}})
            return r.headers["x-run-id"], r.parse()
        answers = await asyncio.gather(*[one(i) for i in range(16)])
        return order, usage, answers
    order, usage, answers = asyncio.run(go())
    assert order[0] == "reasoning" and order[-1] == "content" and "content" not in order[:order.index("content")]
    assert usage is not None and usage.total_tokens > 0
    assert len({rid for rid, _ in answers}) == 16
    for i, (rid, resp) in enumerate(answers):  # each answer is its own request's: its run was asked that request's question
        assert resp.model_extra["reasoning_kit"]["run_id"] == rid
        first = json.loads(httpx.get(f"{url}/runs/{rid}/events").text.splitlines()[1])  # after the header: run.started
        assert first["data"]["input"]["task"] == f"What is {i} + 1?"


def test_a_disconnected_stream_leaves_no_upstream_slot_busy(llama):
    g = Gateway([llama.model])
    body = {"model": f"self_consistency+{llama.model}", "stream": True, "messages": [{"role": "user", "content": "Tell a long story."}],
            "max_tokens": 2000, "ignore_eos": True, "reasoning_kit": {"config": {"samples": 3, "mode": "separate"}}}
    with Serving(g) as url:
        with httpx.stream("POST", url + "/chat/completions", json=body, timeout=60) as r:
            busy = 0
            for _ in range(200):  # until the upstream is decoding the samples
                busy = metrics(llama)["requests_processing"]
                if busy >= 3: break
            assert busy >= 3
        deadline = time.monotonic() + 10
        while metrics(llama)["requests_processing"] > 0 and time.monotonic() < deadline: time.sleep(0.05)
        assert metrics(llama)["requests_processing"] == 0
        entry = g.runs[r.headers["x-run-id"]]
        while entry.outcome is None and time.monotonic() < deadline: time.sleep(0.05)
    assert entry.outcome.status.value == "cancelled" and entry.outcome.calls == 3


def test_a_client_that_gives_up_on_a_plain_answer_leaves_no_upstream_slot_busy(llama):
    "Not streaming: a client whose timeout runs out goes away, and its run and the run's upstream calls stop with it."
    g = Gateway([llama.model])
    body = {"model": f"self_consistency+{llama.model}", "messages": [{"role": "user", "content": "Tell a long story."}],
            "max_tokens": 2000, "ignore_eos": True, "reasoning_kit": {"config": {"samples": 3, "mode": "separate"}}}
    with Serving(g) as url:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(url + "/chat/completions", json=body, timeout=httpx.Timeout(30, read=3))
        assert len(g.runs) == 1
        entry = next(iter(g.runs.values()))
        deadline = time.monotonic() + 15
        while (entry.outcome is None or metrics(llama)["requests_processing"] > 0) and time.monotonic() < deadline: time.sleep(0.01)
        assert metrics(llama)["requests_processing"] == 0  # polled as fast as the benchmark that found whole requests running on
    assert entry.outcome.status.value == "cancelled" and entry.outcome.calls == 3


def test_pass_through_with_the_sync_sdk_streaming_included(served):
    openai = pytest.importorskip("openai")
    g, url, up = served
    client = openai.OpenAI(base_url=url, api_key="none")
    r = client.chat.completions.create(model=up, messages=[{"role": "user", "content": "Say hi"}], max_tokens=8, temperature=0)
    assert r.choices[0].message.content and r.usage.completion_tokens <= 8
    parts = [c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model=up, messages=[{"role": "user", "content": "Say hi"}], max_tokens=8, temperature=0, stream=True) if c.choices]
    assert "".join(parts) == r.choices[0].message.content


def test_inspect_ai_runs_a_small_eval_through_the_gateway(served, tmp_path):
    pytest.importorskip("inspect_ai")
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    g, url, up = served
    task = Task(dataset=[Sample(input="What is 1 + 1?", target="2"), Sample(input="What is 2 + 2?", target="4")], scorer=includes())
    logs = inspect_eval(task, model=f"openai-api/gateway/self_consistency+{up}", model_base_url=url, log_dir=str(tmp_path),
                        display="none", model_args={"api_key": "none"}, max_tokens=48)
    assert logs[0].status == "success" and len(logs[0].samples) == 2
    assert all(s.output.completion for s in logs[0].samples)


def test_the_command_line_serves_the_gateway(llama, tmp_path):
    import subprocess, sys
    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "reasoning_kit", "gateway", "--upstream", llama.model, "--port", str(port),
                          "--runs-dir", str(tmp_path), "--max-calls", "3"], stderr=subprocess.PIPE, text=True)
    try:
        assert "serving" in p.stderr.readline()
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try: models = httpx.get(url + "/models").json(); break
            except httpx.TransportError: time.sleep(0.1)
        assert f"tree_of_thoughts+{llama.model}" in [m["id"] for m in models["data"]]
        r = httpx.post(url + "/chat/completions", timeout=120, json={"model": f"self_consistency+{llama.model}", "max_tokens": 16,
                       "messages": [{"role": "user", "content": "1+1?"}], "reasoning_kit": {"budget": {"calls": 5}}})
        assert r.json()["error"]["param"] == "reasoning_kit.budget.calls"  # over the owner's --max-calls 3
        r = httpx.post(url + "/chat/completions", timeout=120, json={"model": f"self_consistency+{llama.model}", "max_tokens": 16,
                       "messages": [{"role": "user", "content": "1+1?"}]})
        assert r.status_code == 200 and (tmp_path / f"{r.headers['x-run-id']}.jsonl").exists()
    finally:
        p.terminate(); p.wait(30)
