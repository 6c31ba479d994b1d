"""Wire-format gaps against a local server: n refused and remembered, a stream cut before any text retried, proxies
from the environment, which key goes where, client options on LLMHandler and per role, max_completion_tokens."""
import asyncio
import json
import re

import pytest

from reasoning_kit.models.clients import AnthropicClient, APIError, ConnectionFailed, OpenAIClient, StreamTruncated, client_for_model
from reasoning_kit.models import LLMHandler, LLMRequest, TextDelta, user

REQ = LLMRequest(messages=[user("hi")])


async def serve(respond):
    "A server on 127.0.0.1: `respond(request_line, body, n)` gives the raw response (bytes) for the n-th request."
    seen = []
    async def handle(reader, writer):
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode()
                body = json.loads(await reader.readexactly(int(re.search(r"(?i)content-length: *(\d+)", head)[1])))
                seen.append((head.split("\r\n")[0], body))
                out = respond(head.split("\r\n")[0], body, len(seen))
                writer.write(out); await writer.drain()
                if b"connection: close" in out: break
        except (asyncio.IncompleteReadError, ConnectionError): pass
        finally: writer.close()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], seen


def http(status, body, ctype="application/json", close=False):
    data = body.encode() if isinstance(body, str) else body
    return (f"HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {len(data)}\r\n"
            + ("connection: close\r\n" if close else "") + "\r\n").encode() + data


def answer(text="ok", n=1):
    return http(200, json.dumps({"model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                                 "choices": [{"index": i, "message": {"role": "assistant", "content": f"{text}{i}"}, "finish_reason": "stop"} for i in range(n)]}))


def sse(*chunks, done=True):
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + ("data: [DONE]\n\n" if done else "")
    return http(200, body, "text/event-stream")


def refuse_n(line, body, k):
    if body.get("n", 1) > 1: return http(400, json.dumps({"error": {"message": "'n' must be 1", "type": "invalid_request_error"}}))
    if body.get("stream"):
        return sse({"model": "m", "choices": [{"index": 0, "delta": {"content": "s"}}]}, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                   {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
    return answer()


@pytest.mark.parametrize("streamed", [False, True])
def test_a_server_refusing_n_gets_parallel_calls_and_the_client_remembers(streamed):
    async def go():
        server, port, seen = await serve(refuse_n)
        client = OpenAIClient("m", base_url=f"http://127.0.0.1:{port}/v1")
        req = REQ.model_copy(update={"n": 3})
        for _ in range(2):
            if streamed:
                items = [x async for x in client.stream(req)]
                texts = items[-1].texts
            else: texts = (await client.complete(req)).texts
            assert len(texts) == 3
        await client.aclose(); server.close()
        return client, seen
    client, seen = asyncio.run(go())
    assert client.native_n is False
    assert [b.get("n", 1) for _, b in seen] == [3, 1, 1, 1, 1, 1, 1]  # refused once, then never asked again


def test_the_llamacpp_preset_asks_for_n_and_recounts_its_usage():
    "llama-server accepts n but reports one choice's completion tokens: the preset's clients recount every choice."
    c = client_for_model("llamacpp:tiny")
    assert c.native_n is True and c.server_tokenizer is True
    assert client_for_model("vllm:x").server_tokenizer is False


def test_a_stream_cut_before_any_text_is_retried():
    def respond(line, body, k):
        if k == 1:  # headers and a role-only chunk, then the connection drops
            return http(200, 'data: {"model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n', "text/event-stream", close=True)
        return refuse_n(line, body, k)
    async def go():
        server, port, seen = await serve(respond)
        client = OpenAIClient("m", base_url=f"http://127.0.0.1:{port}/v1", backoff=0.001, max_backoff=0.002)
        items = [x async for x in client.stream(REQ)]
        await client.aclose(); server.close()
        return client, items
    client, items = asyncio.run(go())
    assert items[-1].text == "s" and client.retries == 1 and [d.text for d in items if isinstance(d, TextDelta)] == ["s"]


def test_a_stream_cut_after_text_is_retried_then_fails_clearly():
    def respond(line, body, k):
        return http(200, 'data: {"model":"m","choices":[{"index":0,"delta":{"content":"half"}}]}\n\n', "text/event-stream", close=True)
    async def go():
        server, port, seen = await serve(respond)
        client = OpenAIClient("m", base_url=f"http://127.0.0.1:{port}/v1", backoff=0.001, max_retries=2)
        try:
            with pytest.raises(StreamTruncated, match="cut after 1 deltas.*gave up after 3 attempt"):
                async for _ in client.stream(REQ): pass
        finally: await client.aclose(); server.close()
        return seen
    assert len(asyncio.run(go())) == 3  # asked again like any transient failure, until the retries ran out


def test_proxies_from_the_environment_are_honoured(monkeypatch):
    for v in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(v, raising=False)
    async def go(no_proxy):
        server, port, seen = await serve(lambda line, body, k: answer("via proxy "))
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{port}")
        if no_proxy: monkeypatch.setenv("no_proxy", "api.example.invalid")
        client = OpenAIClient("m", base_url="http://api.example.invalid/v1", max_retries=0, connect_timeout=2)
        try: return (await client.complete(REQ)).text, seen
        finally: await client.aclose(); server.close()
    text, seen = asyncio.run(go(False))
    assert text == "via proxy 0" and seen[0][0] == "POST http://api.example.invalid/v1/chat/completions HTTP/1.1"
    with pytest.raises(ConnectionFailed): asyncio.run(go(True))


def test_the_provider_key_goes_only_to_the_provider_host():
    assert client_for_model("openai:gpt-4o@https://api.openai.com/v1").key_env == "OPENAI_API_KEY"
    assert client_for_model("anthropic:c@https://api.anthropic.com").key_env == "ANTHROPIC_API_KEY"
    assert client_for_model("openai:m@https://llm.example.com/v1").key_env is None
    assert client_for_model("openai:m@https://llm.example.com/v1", key_env="MY_KEY").key_env == "MY_KEY"


def test_a_401_to_a_url_given_no_key_says_how_to_give_one():
    async def go():
        server, port, seen = await serve(lambda line, body, k: http(401, json.dumps({"error": {"message": "missing bearer token"}})))
        client = client_for_model(f"openai:m@http://127.0.0.1:{port}/v1", max_retries=0)
        try:
            with pytest.raises(APIError, match=r"missing bearer token \(no API key was sent to .*: pass api_key= or key_env="): await client.complete(REQ)
        finally: await client.aclose(); server.close()
    asyncio.run(go())


def test_client_options_on_the_handler_and_per_role():
    h = LLMHandler("openai:m@http://127.0.0.1:9/v1", timeout=7.0, max_retries=1,
                   routes={"judge": {"model": "anthropic:c@http://127.0.0.1:9", "timeout": 3.0}})
    assert (h.client.timeout, h.client.max_retries) == (7.0, 1)
    assert isinstance(h.routes["judge"], AnthropicClient) and (h.routes["judge"].timeout, h.routes["judge"].max_retries) == (3.0, 1)
    with pytest.raises(ValueError, match="needs 'model'"): LLMHandler(routes={"judge": {"timeout": 3}})


def test_max_completion_tokens_when_configured():
    async def go():
        server, port, seen = await serve(lambda line, body, k: answer())
        h = LLMHandler(f"openai:o3-mini@http://127.0.0.1:{port}/v1", max_tokens_param="max_completion_tokens")
        await h.client.complete(REQ.model_copy(update={"max_tokens": 9}))
        await h.aclose(); server.close()
        return seen
    body = asyncio.run(go())[0][1]
    assert body.get("max_completion_tokens") == 9 and "max_tokens" not in body


def test_unknown_models_cost_unknown_never_a_guess():
    from reasoning_kit.models.clients import PRICES, PRICES_AS_OF, PRICES_SOURCE, parse_openai, price_for
    from reasoning_kit.models import Usage
    assert re.fullmatch(r"\d{4}-\d{2}", PRICES_AS_OF)
    assert any("openai.com" in u for u in PRICES_SOURCE) and any("anthropic.com" in u for u in PRICES_SOURCE)  # dated, and the source named
    assert price_for("gpt-4o-2024-08-06") == PRICES["gpt-4o"] and price_for("gpt-4o-audio-preview") is None
    r = parse_openai({"model": "qwen2.5-7b", "choices": [{"message": {"content": "x"}, "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 10, "completion_tokens": 2}}, price_for("qwen2.5-7b"))
    assert r.usage.cost is None and (r.usage + Usage(cost=1.0)).cost is None and (Usage(cost=1.0) + Usage(cost=2.0)).cost == 3.0
