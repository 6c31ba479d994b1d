"""The clients against llama.cpp's llama-server (MIT), built from source by `reasoning-kit build-server` (cached in the
user cache; scripts/setup.sh --dev builds it, and this module builds it on first use when cmake and a C++ compiler
are there). The model is written at test setup with the `gguf` package (tests/tiny_gguf.py): a one-layer
llama whose next token depends only on the last, so it always thinks "Two and two." (which the server returns as
reasoning) and answers "The answer is 4."; when a grammar constrains it (tools, JSON schemas) it picks the same
valid JSON every time. No weights are downloaded.

The same server is asked over both wire formats it speaks: OpenAI's /v1/chat/completions and Anthropic's
/v1/messages, plain and streamed."""
import asyncio
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import re
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from pydantic import BaseModel

from reasoning_kit.algos import Agent, Swarm, ToolLoop, TreeOfThoughts
from reasoning_kit.models.clients import AnthropicClient, APIError, OpenAIClient, StreamRestart, StreamTruncated, client_for_model
from reasoning_kit.models import LLMHandler, LLMRequest, LLMResponse, TextDelta, ToolCallDelta, parse_as, structured, user
from reasoning_kit.engine import Engine, Status
from reasoning_kit.effects.tools import ToolHandler, ToolRegistry, tool

from tiny_gguf import write_model

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "llama_server.sh"
ANSWER, THOUGHT = "The answer is 4.", "Two and two."
NO_THINKING = {"chat_template_kwargs": {"enable_thinking": False}}  # the template then opens with an empty <think></think>


def llama_server_binary() -> str:
    "The llama-server program: reasoning_kit.models.local finds it, or builds it the first time (minutes)."
    from reasoning_kit.models.local import LlamaServerMissing, build_server, find_server
    try: return str(find_server())
    except LlamaServerMissing: return str(build_server(quiet=True))


def start_llama_server(binary: str, model: Path) -> tuple[subprocess.Popen, str, Path]:
    "Start llama-server on a free 127.0.0.1 port and wait until the model is loaded; returns (process, url, log)."
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    logf = tempfile.NamedTemporaryFile("w+", prefix="llama-server-", suffix=".log", delete=False)
    proc = subprocess.Popen([binary, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "--jinja",
                             "-c", "8192", "-np", "2", "-t", "1", "--no-webui", "--no-warmup"],
                            stdout=logf, stderr=subprocess.STDOUT, env={**os.environ, "LLAMA_ARG_HF_REPO": ""})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200: return proc, url, Path(logf.name)
        except OSError: time.sleep(0.2)
    proc.kill(); proc.wait(10); logf.seek(0)
    raise RuntimeError(f"llama-server did not start on {url}: {logf.read()[-3000:]}")


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    binary = llama_server_binary()
    model = write_model(tmp_path_factory.mktemp("llama") / "tiny.gguf")
    proc, url, log = start_llama_server(binary, model)
    yield url
    proc.terminate()
    try: proc.wait(10)
    except subprocess.TimeoutExpired: proc.kill(); proc.wait(10)
    log.unlink(missing_ok=True)


def run(coro): return asyncio.run(coro)


def oa(url, **kw): return OpenAIClient("tiny", base_url=f"{url}/v1", backoff=0.01, max_backoff=0.05, **kw)
def an(url, **kw): return AnthropicClient("tiny", base_url=url, backoff=0.01, max_backoff=0.05, **kw)
WIRES = {"openai": oa, "anthropic": an}
ASK = LLMRequest(messages=[user("What is 2 + 2?")], temperature=0)


async def collect(client, request):
    try: return [i async for i in client.stream(request)]
    finally: await client.aclose()


async def once(client, request):
    try: return await client.complete(request)
    finally: await client.aclose()


# ---- the build ---------------------------------------------------------------------------------------------------

def test_the_build_is_pinned_cached_and_wired_into_setup():
    from reasoning_kit.models import local
    assert local.server_build_dir().name == local.LLAMA_CPP_PYTHON_VERSION
    assert "build-server" in SCRIPT.read_text() and "llama_server.sh" in (ROOT / "scripts" / "setup.sh").read_text()  # CI builds it


def test_the_built_llama_server_runs(llama):
    out = subprocess.run([llama_server_binary(), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "version" in (out.stdout + out.stderr).lower()


# ---- both wire formats -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("wire", WIRES)
def test_plain_answer_usage_and_finish_reason(llama, wire):
    r = run(once(WIRES[wire](llama), ASK))
    assert (r.text, r.finish_reason) == (ANSWER, "stop")
    assert r.usage.prompt_tokens > 10 and r.usage.completion_tokens >= 5
    assert r.usage.cost is None  # a local model has no price: unknown, never a guess


@pytest.mark.parametrize("wire", WIRES)
def test_max_tokens_ends_with_length(llama, wire):
    r = run(once(WIRES[wire](llama), ASK.model_copy(update={"max_tokens": 2, "extra": NO_THINKING})))
    assert (r.text, r.finish_reason, r.usage.completion_tokens) == ("The answer", "length", 2)


@pytest.mark.parametrize("wire", WIRES)
def test_streamed_answer_matches_the_plain_one(llama, wire):
    items = run(collect(WIRES[wire](llama), ASK))
    final, deltas = items[-1], items[:-1]
    assert isinstance(final, LLMResponse) and all(isinstance(d, TextDelta) for d in deltas) and len(deltas) >= 3
    assert "".join(d.text for d in deltas) == final.text == ANSWER
    assert final.finish_reason == "stop" and final.usage.prompt_tokens > 10 and final.usage.completion_tokens >= 5


# ---- what models return beside the text: reasoning, thinking blocks, logprobs -------------------------------------

@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_reasoning_is_kept_apart_from_the_answer(llama, wire, streamed):
    client = WIRES[wire](llama)
    r = run(collect(client, ASK))[-1] if streamed else run(once(client, ASK))
    assert (r.text, r.message.reasoning) == (ANSWER, THOUGHT)
    if wire == "anthropic":  # a thinking block, kept whole so that it can be sent back on a tool turn
        assert [(b["type"], b["thinking"]) for b in r.message.thinking] == [("thinking", THOUGHT)] and "signature" in r.message.thinking[0]
    off = run(once(WIRES[wire](llama), ASK.model_copy(update={"extra": NO_THINKING})))
    assert (off.text, off.message.reasoning) == (ANSWER, None)


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_logprobs_when_asked(llama, streamed):
    req = ASK.model_copy(update={"extra": {**NO_THINKING, "logprobs": True, "top_logprobs": 2}})
    client = oa(llama)
    r = run(collect(client, req))[-1] if streamed else run(once(client, req))
    tokens = r.choices[0].logprobs["content"]
    assert "".join(t["token"] for t in tokens) == ANSWER and all(len(t["top_logprobs"]) == 2 for t in tokens)
    assert run(once(oa(llama), ASK)).choices[0].logprobs is None  # not asked, not kept


# ---- n > 1: refused with 400, then parallel single calls, remembered per client -----------------------------------

def test_llama_server_refuses_n_with_400(llama):
    body = json.dumps({"model": "tiny", "n": 3, "messages": [{"role": "user", "content": "hi"}]}).encode()
    req = urllib.request.Request(f"{llama}/v1/chat/completions", data=body, headers={"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e: urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 400 and "'n'" in e.value.read().decode()


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_refused_n_falls_back_to_parallel_calls_and_is_remembered(llama, streamed):
    async def go():
        client = oa(llama, native_n=True)  # as for a server not known to refuse n
        req = ASK.model_copy(update={"n": 3})
        texts = []
        for _ in range(2):
            if streamed: texts.append([i async for i in client.stream(req)][-1].texts)
            else: texts.append((await client.complete(req)).texts)
        await client.aclose()
        return client, texts
    client, texts = run(go())
    assert texts == [[ANSWER] * 3] * 2 and client.native_n is False
    assert client.requests == 1 + 3 + 3  # refused once, then never asked again


def test_tree_of_thoughts_sample_n_mode_runs(llama):
    async def go():
        client = oa(llama, native_n=True)
        async with Engine() as engine:
            LLMHandler(client).attach(engine)
            tot = TreeOfThoughts(depth=1, width=1, branching=3, generate="sample_n", scorer=lambda task, path: 9.5)
            return await engine.run(tot, {"task": "Use 4 4 6 8 to make 24"}), client
    out, client = run(go())
    assert out.status == Status.OK and out.value["answer"] and ANSWER in json.dumps(out.value)
    assert out.calls == 1 and client.native_n is False  # one logical call for the level, served by parallel samples
    assert client.requests == 1 + 3


def test_the_llamacpp_model_string_asks_for_n_and_counts_every_choice(llama):
    "`llamacpp:MODEL@URL` through LLMHandler: no key needed on loopback, n sent once, every choice's tokens counted."
    async def go():
        handler = LLMHandler(f"llamacpp:tiny@{llama}/v1", max_retries=1)
        client = handler.client
        try: return await client.complete(ASK.model_copy(update={"n": 2})), client
        finally: await client.aclose()
    r, client = run(go())
    assert r.texts == [ANSWER] * 2 and client.requests == 1 and client.native_n is True
    one = run(once(WIRES["openai"](llama), ASK)).usage.completion_tokens
    assert r.usage.completion_tokens >= 2 * len(ANSWER.split()) and r.usage.completion_tokens >= one


# ---- tools: tool_choice="required" is what makes small local models call them -------------------------------------

@tool
def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_toolloop_with_tool_choice_required(llama, wire, stream):
    async def go():
        async with Engine() as engine:
            LLMHandler(WIRES[wire](llama)).attach(engine)
            ToolHandler(ToolRegistry([add])).attach(engine)
            loop = ToolLoop(agent_prompt="Use the add tool.", tool_choice="required", max_turns=2, stream=stream, temperature=0)
            return await engine.run(loop, {"task": "What is 4 + 4?"})
    out = run(go())
    ran = [e.data for e in out.log if e.kind == "loop.tool_result"]
    assert [(t["turn"], t["name"], t["content"], t.get("error")) for t in ran] == [(1, "add", "8", None), (2, "add", "8", None)]
    said = [m for m in out.value["messages"] if m["role"] == "assistant"]
    calls = [c for m in said for c in m["tool_calls"]]
    assert [(c["name"], c["arguments"]) for c in calls] == [("add", {"a": 4, "b": 4})] * 2  # the grammar-constrained call, both turns
    assert all(m.get("reasoning") == THOUGHT for m in said)
    if wire == "anthropic": assert all(m["thinking"][0]["thinking"] == THOUGHT for m in said)  # sent back on turn 2, which the server took
    assert out.calls == 2 and out.status == Status.NO_SOLUTION  # "required" every turn: the loop ends on max_turns


@pytest.mark.parametrize("wire", WIRES)
def test_swarm_hands_off_with_tool_choice_required(llama, wire):
    async def go():
        async with Engine() as engine:
            LLMHandler(WIRES[wire](llama)).attach(engine)
            ToolHandler(ToolRegistry([add])).attach(engine)
            agents = {"triage": Agent("Send sums to math.", handoffs=["math"]), "math": Agent("Add with the tool.", tools=["add"])}
            return await engine.run(Swarm(agents, start="triage", tool_choice="required", max_turns=2, temperature=0), {"task": "4 + 4?"})
    out = run(go())
    assert [(e.data.get("from"), e.data.get("to")) for e in out.log if e.kind == "swarm.handoff"] == [("triage", "math")]
    assert [(e.data["name"], e.data["content"]) for e in out.log if e.kind == "loop.tool_result"][-1] == ("add", "8")


# ---- structured output: a JSON schema (OpenAI) and its tool-based equivalent (Anthropic) ---------------------------

class Verdict(BaseModel):
    score: int
    reason: str


@pytest.mark.parametrize("wire", WIRES)
def test_structured_output_from_a_pydantic_model(llama, wire):
    r = run(once(WIRES[wire](llama), structured(ASK, Verdict)))
    v = parse_as(r, Verdict)
    assert isinstance(v, Verdict) and v.score == 4
    if wire == "anthropic": assert [c.name for c in r.tool_calls] == ["Verdict"]
    else: assert json.loads(r.text) == v.model_dump()


def test_max_completion_tokens_when_configured(llama):
    "o-series models want max_completion_tokens; a client told so sends it to any host (llama-server takes it too)."
    client = oa(llama, max_tokens_param="max_completion_tokens")
    r = run(once(client, ASK.model_copy(update={"max_tokens": 2, "extra": NO_THINKING})))
    assert (r.text, r.finish_reason) == ("The answer", "length")


# ---- a forward proxy on 127.0.0.1 between the client and the server: HTTP_PROXY honoured, streams cut ------------

async def forward_proxy(cut_after: list[int | None]):
    """An HTTP proxy (absolute-URI requests, as httpx sends to an http:// proxy). Connection k's answer is cut after
    `cut_after[k]` bytes of body (None: passed whole). Returns (server, port, request lines seen)."""
    seen, conns = [], 0
    async def handle(reader, writer):
        nonlocal conns
        cut = cut_after[conns] if conns < len(cut_after) else None; conns += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, rest = head.split(b"\r\n", 1)
            method, url, version = line.decode().split(" ")
            seen.append(f"{method} {url}")
            u = urllib.parse.urlsplit(url)
            body = await reader.readexactly(int(re.search(rb"(?i)content-length: *(\d+)", rest)[1]))
            up_r, up_w = await asyncio.open_connection(u.hostname, u.port)
            rest = re.sub(rb"(?i)connection: *[^\r]*\r\n", b"", rest)
            up_w.write(f"{method} {u.path} {version}\r\n".encode() + b"connection: close\r\n" + rest + body); await up_w.drain()
            resp_head = await up_r.readuntil(b"\r\n\r\n")
            writer.write(resp_head)
            sent = 0
            while chunk := await up_r.read(256):
                if cut is not None and sent + len(chunk) > cut:
                    writer.write(chunk[:cut - sent]); await writer.drain(); break
                writer.write(chunk); sent += len(chunk); await writer.drain()
            up_w.close()
        except (asyncio.IncompleteReadError, ConnectionError): pass
        finally: writer.close()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], seen


def _no_proxy_env(monkeypatch):
    for v in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(v, raising=False)


@pytest.mark.parametrize("wire", WIRES)
def test_http_proxy_from_the_environment_is_used_and_no_proxy_bypasses_it(llama, wire, monkeypatch):
    _no_proxy_env(monkeypatch)
    async def go(no_proxy: bool):
        server, port, seen = await forward_proxy([])
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        if no_proxy: monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        try: return (await once(WIRES[wire](llama), ASK)).text, seen
        finally: server.close()
    text, seen = run(go(False))
    path = "/v1/chat/completions" if wire == "openai" else "/v1/messages"
    assert text == ANSWER and seen == [f"POST {llama}{path}"]  # through the proxy, with the absolute URL
    text, seen = run(go(True))
    assert text == ANSWER and seen == []  # NO_PROXY names the host: straight to the server


@pytest.mark.parametrize("wire", WIRES)
def test_a_stream_cut_before_or_after_text_is_retried_then_fails_clearly(llama, wire, monkeypatch):
    _no_proxy_env(monkeypatch)
    async def go(cuts):
        server, port, seen = await forward_proxy(cuts)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        try: return await collect(WIRES[wire](llama, max_retries=2), ASK.model_copy(update={"extra": NO_THINKING})), seen
        except StreamTruncated as e: return e, seen
        finally: server.close()
    items, seen = run(go([0]))  # the first connection dies before any event: asked again, and the answer is whole
    assert items[-1].text == ANSWER and len(seen) == 2
    items, seen = run(go([900, None]))  # cut after text: asked again, the listener told to discard, the answer whole
    assert items[-1].text == ANSWER and len(seen) == 2 and sum(isinstance(i, StreamRestart) for i in items) == 1
    err, seen = run(go([900, 900, 900]))  # cut every time: a clear error once the two retries are spent
    assert isinstance(err, StreamTruncated) and "the stream was cut after" in str(err) and "gave up after 3 attempt" in str(err) and len(seen) == 3
