"""A key planted in every kind of failure (401/403/429/500 echoing the request, a body that is not JSON, an error
event in a stream), plain and streamed, on both wires: neither the key nor any 8 consecutive characters of it
reaches an exception (its chain, its frames), an event, a log line or a repr."""
import asyncio
import json
import logging
import re
import traceback

import pytest

from reasoning_kit.models.clients import AnthropicClient, ClientError, OpenAIClient
from reasoning_kit.models import LLMRequest, user

KEY = "sk-test-PLANTED0123456789abcdefXYZ"
GRAMS = [KEY[i:i + 8] for i in range(len(KEY) - 7)]
REQ = LLMRequest(messages=[user("hi")])


def leaks(text: str) -> list[str]:
    return [g for g in GRAMS if g in text]


async def serve(respond):
    "A server on 127.0.0.1: `respond(head, body, n)` gives the raw HTTP response for the n-th request."
    count = 0
    async def handle(reader, writer):
        nonlocal count
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                size = int(re.search(rb"(?i)content-length: *(\d+)", head)[1])
                body = json.loads(await reader.readexactly(size))
                count += 1
                writer.write(respond(head.decode(), body, count)); await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError): pass
        finally: writer.close()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def http(status: int, body: str, ctype: str = "application/json", close: bool = False) -> bytes:
    data = body.encode()
    return (f"HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {len(data)}\r\n"
            + ("connection: close\r\n" if close else "") + "\r\n").encode() + data


def failure(kind: str, wire: str, cut: int | None):
    "A response that echoes the request head (with its key) in failure `kind`, padded so the key straddles character `cut`."
    def respond(head, body, n):
        at = head.index(KEY)
        echo = ("x" * max(0, cut - at - 10) if cut else "") + head
        if kind in ("401", "403", "429", "500"):
            err = ({"type": "error", "error": {"type": "authentication_error", "message": echo}} if wire == "anthropic"
                   else {"error": {"message": echo, "type": "invalid_request_error"}})
            return http(int(kind), json.dumps(err))
        if kind == "plain_text_500": return http(500, echo, "text/plain")
        if kind == "not_json": return http(200, "{not json " + echo)
        if kind == "fragment_401":  # only a piece of the key comes back: any 8 characters of it are still scrubbed
            return http(401, json.dumps({"error": {"message": "bad key " + KEY[4:17] + " ..." + KEY[-9:]}}))
        if kind == "sse_error_after_text":  # a stream that gives some text, then an error event echoing the key
            first = ({"type": "message_start", "message": {"model": "m", "usage": {}}}, {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "partial "}})
            if wire == "anthropic":
                ev = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in first)
                ev += f"event: error\ndata: {json.dumps({'type': 'error', 'error': {'type': 'api_error', 'message': echo}})}\n\n"
            else:
                ev = f"data: {json.dumps({'model': 'm', 'choices': [{'index': 0, 'delta': {'content': 'partial '}}]})}\n\n"
                ev += f"data: {json.dumps({'error': {'message': echo, 'code': 500}})}\n\n"
            return http(200, ev, "text/event-stream")
        if kind == "sse_error":
            ev = (f"event: error\ndata: {json.dumps({'type': 'error', 'error': {'type': 'overloaded_error', 'message': echo}})}\n\n" if wire == "anthropic"
                  else f"data: {json.dumps({'error': {'message': echo, 'code': 500}})}\n\n")
            return http(200, ev, "text/event-stream")
        raise AssertionError(kind)
    return respond


class Call:
    key = "probe/0"
    def __init__(self): self.events = []
    def emit(self, kind, **data): self.events.append((kind, data))


def chain_text(e: BaseException) -> str:
    "Everything reachable from an exception: its chain, args, attributes and the locals of every frame."
    out, seen, todo = [], set(), [e]
    while todo:
        x = todo.pop()
        if x is None or id(x) in seen: continue
        seen.add(id(x))
        out += [repr(x), str(x), repr(x.args), repr(vars(x)), "".join(traceback.format_exception(x))]
        tb = x.__traceback__
        while tb is not None:
            out += [f"{k}={v!r}" for k, v in tb.tb_frame.f_locals.items()]
            tb = tb.tb_next
        todo += [x.__cause__, x.__context__]
    return "\n".join(out)


KINDS = ["401", "403", "429", "500", "plain_text_500", "not_json", "fragment_401", "sse_error", "sse_error_after_text"]


CASES = [(kind, streamed) for kind in KINDS for streamed in (False, True)
         if streamed or not kind.startswith("sse_error")]  # an SSE error event only comes in a stream


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("kind,streamed", CASES, ids=[f"{k}-{'streamed' if s else 'plain'}" for k, s in CASES])
@pytest.mark.parametrize("cut", [None, 200, 300])  # where error text gets cut: the key straddles it
def test_a_planted_key_never_leaks(wire, kind, streamed, cut, caplog):
    caplog.set_level(logging.DEBUG)
    async def go():
        server, port = await serve(failure(kind, wire, cut))
        cls, base = (AnthropicClient, f"http://127.0.0.1:{port}") if wire == "anthropic" else (OpenAIClient, f"http://127.0.0.1:{port}/v1")
        client, call = cls("m", base_url=base, api_key=KEY, max_retries=1, backoff=0.001, max_backoff=0.002), Call()
        try:
            if streamed:
                async for _ in client.stream(REQ, call): pass
            else: await client.complete(REQ, call)
        except ClientError as e: err = e
        else: raise AssertionError("no error")
        finally:
            await client.aclose(); server.close()
        return client, call, err
    client, call, err = asyncio.run(go())
    everything = "\n".join([chain_text(err), repr(call.events), caplog.text, repr(client)])
    assert "PLANTED" not in everything and not leaks(everything), leaks(everything)[:3]
    assert err.__cause__ is None and err.__context__ is None
    if kind in ("401", "403", "429", "500"): assert kind in str(err)  # the error still says what happened


def test_the_probe_finds_a_leak_when_there_is_one():
    "The check itself: a message holding 8 characters of the key is caught."
    assert leaks(f"... {KEY[5:13]} ...") and not leaks("nothing")


def test_traceback_printing_shows_no_key():
    "What a user sees when the error is not caught: the traceback as Python prints it, chained errors included."
    async def go():
        server, port = await serve(failure("500", "openai", 200))
        client = OpenAIClient("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0)
        try: await client.complete(REQ)
        except ClientError as e:
            try: raise RuntimeError("while asking") from e  # the user's own code wrapping it
            except RuntimeError as outer: return "".join(traceback.format_exception(outer))
        finally: await client.aclose(); server.close()
    printed = asyncio.run(go())
    assert "HTTP 500" in printed and "while asking" in printed and not leaks(printed)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_key_from_the_environment_never_reaches_the_run_log_on_disk(wire, streamed, tmp_path, monkeypatch, caplog):
    "Through the engine: retries logged as events, the failure recorded, the log written to a file: no key anywhere."
    from reasoning_kit.algos import ToolLoop
    from reasoning_kit.models import LLMHandler
    from reasoning_kit.engine import Engine, Status
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("PROBE_KEY", KEY)
    async def go():
        fails = failure("429", wire, 300)
        server, port = await serve(lambda head, body, n: fails(head, body, n) if n < 2 else failure("401", wire, 200)(head, body, n))
        cls, base = (AnthropicClient, f"http://127.0.0.1:{port}") if wire == "anthropic" else (OpenAIClient, f"http://127.0.0.1:{port}/v1")
        client = cls("m", base_url=base, key_env="PROBE_KEY", max_retries=2, backoff=0.001, max_backoff=0.002)
        try:
            async with Engine() as engine:
                LLMHandler(client).attach(engine)
                return await engine.run(ToolLoop(max_turns=1, stream=streamed), {"task": "hi"}, log=tmp_path / "run.jsonl"), client
        finally: server.close()
    out, client = asyncio.run(go())
    kinds = [e.kind for e in out.log]
    assert out.status == Status.FAILED and "llm.retry" in kinds and "llm.error" in kinds  # it did fail, after a retry
    written = (tmp_path / "run.jsonl").read_text()
    everything = "\n".join([written, repr(out), repr(out.log), str(out.error), caplog.text, repr(client)])
    assert "HTTP 401" in written and not leaks(everything), leaks(everything)[:3]


@pytest.mark.parametrize("source", ["client", "environment"])
def test_a_key_echoed_in_a_reply_never_reaches_a_cassette_or_cache_file(source, tmp_path, monkeypatch):
    "A server that puts the key in its answer: the recording on disk holds *** instead, wherever the key came from."
    from reasoning_kit.models.clients import CachedClient, Cassette
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    reply = lambda head, body, n: http(200, json.dumps({"model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": f"you sent {KEY} and {KEY[3:15]}"}}]}))
    async def go():
        server, port = await serve(reply)
        base = f"http://127.0.0.1:{port}/v1"
        inner = OpenAIClient("m", base_url=base, api_key=KEY) if source == "client" else OpenAIClient("m", base_url=base)
        try:
            for rec in (Cassette(tmp_path / "c.json", inner, mode="record"), CachedClient(inner, tmp_path / "cache.jsonl")):
                await rec.complete(REQ)
        finally: await inner.aclose(); server.close()
    asyncio.run(go())
    written = (tmp_path / "c.json").read_text() + (tmp_path / "cache.jsonl").read_text()
    assert "you sent ***" in written and not leaks(written), leaks(written)[:3]


@pytest.mark.parametrize("where", ["reply", "input"])
def test_a_key_echoed_by_the_model_or_pasted_into_the_input_never_reaches_the_run_log_on_disk(where, tmp_path, monkeypatch):
    "The run log on disk is scrubbed of every known key, whole or any 8 characters of it; resume reads it back."
    from reasoning_kit.algos import ToolLoop
    from reasoning_kit.core.events import Log
    from reasoning_kit.models import FakeLLMClient, LLMHandler
    from reasoning_kit.engine import Engine
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    said = f"the upstream said: Authorization: Bearer {KEY} (and {KEY[5:20]})"
    model = FakeLLMClient(lambda r: said if where == "reply" else "ok")
    task = f"my key is {KEY}, keep it safe" if where == "input" else "hi"
    async def go(**kw):
        async with Engine() as engine:
            LLMHandler(model).attach(engine)
            return await engine.run(ToolLoop(max_turns=1), {"task": task}, log=tmp_path / "run.jsonl", **kw)
    out = asyncio.run(go())
    written = (tmp_path / "run.jsonl").read_text()
    assert "***" in written and not leaks(written), leaks(written)[:3]
    assert len(Log.read(tmp_path / "run.jsonl")) == len(out.log)  # still a valid log, event for event
    again = asyncio.run(go(resume=True))
    # resumed from the scrubbed file: a reply is served from it; a request that carried the key no longer matches
    # its scrubbed record, so that one call is asked again (a key on disk would cost more than a call)
    assert model.calls == (1 if where == "reply" else 2) and again.value["turns"] == 1
    assert not leaks((tmp_path / "run.jsonl").read_text())


@pytest.mark.parametrize("cached", [False, True], ids=["client", "cached_client"])
def test_a_key_given_to_a_client_and_echoed_in_its_reply_never_reaches_the_run_log_on_disk(cached, tmp_path, monkeypatch):
    "A key in no environment variable (api_key=) is known through the engine's clients: the run log holds *** instead."
    from reasoning_kit.algos import ToolLoop
    from reasoning_kit.models.clients import CachedClient
    from reasoning_kit.models import LLMHandler
    from reasoning_kit.engine import Engine
    for name in ("OPENAI_API_KEY", "PROBE_KEY"): monkeypatch.delenv(name, raising=False)
    reply = lambda head, body, n: http(200, json.dumps({"model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": f"you sent {KEY} and {KEY[3:15]}"}}]}))
    async def go():
        server, port = await serve(reply)
        inner = OpenAIClient("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY)
        try:
            async with Engine() as engine:
                LLMHandler(CachedClient(inner) if cached else inner).attach(engine)
                return await engine.run(ToolLoop(max_turns=1), {"task": "hi"}, log=tmp_path / "run.jsonl")
        finally: await inner.aclose(); server.close()
    out = asyncio.run(go())
    written = (tmp_path / "run.jsonl").read_text()
    assert out.value["text"].startswith("you sent") and "you sent ***" in written and not leaks(written), leaks(written)[:3]
