"""Fault handling of the HTTP clients: status errors and Retry-After (respx), and a local server on
127.0.0.1 that misbehaves on purpose (resets, stalls, trickles, streams cut halfway, refused
connections). Also limits, keys and the model name sent."""
import asyncio
import json
import logging
import socket
import time

import httpx
import pytest
import respx

from reasoning_kit.models.clients import AnthropicClient, APIError, CallTimeout, ConnectionFailed, MalformedResponse, MissingKey, OpenAIClient, StreamRestart, StreamTruncated, client_for_model, settings
from reasoning_kit.models import LLMHandler, LLMRequest, LLMResponse, TextDelta, user
from reasoning_kit.engine import Engine, Status, fold_run

BASE = "http://127.0.0.1:9/v1"  # respx intercepts it: nothing is sent
URL = BASE + "/chat/completions"
REQ = LLMRequest(messages=[user("hi")])
OK = {"model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
      "usage": {"prompt_tokens": 3, "completion_tokens": 1}}


def fast(**kw):
    "A client that retries quickly."
    return OpenAIClient("m", base_url=BASE, backoff=0.01, max_backoff=0.02, **kw)


class Call:
    "Stands in for the engine's EffectCall: records what the client emits."
    key = "test/0"
    def __init__(self): self.events = []
    def emit(self, kind, **data): self.events.append((kind, data))


def run(coro): return asyncio.run(coro)


# ---- statuses, Retry-After, bodies (respx) -----------------------------------------------------

@respx.mock
def test_429_honours_retry_after_and_each_retry_is_an_event():
    route = respx.post(URL).mock(side_effect=[httpx.Response(429, headers={"retry-after": "0.3"}, json={"error": {"message": "slow down"}}),
                                              httpx.Response(503, json={"error": {"message": "overloaded"}}),
                                              httpx.Response(200, json=OK)])
    client, call = fast(), Call()
    t0 = time.monotonic(); r = run(client.complete(REQ, call)); elapsed = time.monotonic() - t0
    assert r.text == "hello" and route.call_count == 3 and elapsed >= 0.3
    assert [k for k, _ in call.events] == ["llm.retry", "llm.retry"]
    assert call.events[0][1] == {"attempt": 1, "error": "APIError: openai HTTP 429: slow down", "wait": 0.3}
    assert call.events[1][1]["attempt"] == 2 and "503" in call.events[1][1]["error"]
    assert (client.calls, client.requests, client.retries) == (1, 3, 2)


@respx.mock
def test_retry_after_ms_and_http_date():
    respx.post(URL).mock(side_effect=[httpx.Response(429, headers={"retry-after-ms": "150", "retry-after": "30"}), httpx.Response(200, json=OK)])
    call = Call(); run(fast().complete(REQ, call))
    assert call.events[0][1]["wait"] == 0.15


@respx.mock
def test_a_retry_after_longer_than_max_wait_fails_at_once_and_says_why():
    route = respx.post(URL).mock(return_value=httpx.Response(429, headers={"retry-after": "3600"}, json={"error": {"message": "quota"}}))
    with pytest.raises(APIError, match="asked to wait 3600s, more than max_wait=60"):
        run(fast(max_wait=60).complete(REQ))
    assert route.call_count == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
@respx.mock
def test_no_retry_on_4xx_that_will_not_change(status):
    route = respx.post(URL).mock(return_value=httpx.Response(status, json={"error": {"message": "nope"}}))
    call = Call()
    with pytest.raises(APIError) as e: run(fast().complete(REQ, call))
    assert e.value.status == status and not e.value.retryable and route.call_count == 1 and call.events == []
    assert str(e.value).startswith(f"openai HTTP {status}: nope")  # (401/403 add how to give a key, as none was sent)


@respx.mock
def test_x_should_retry_overrides_the_status():
    route = respx.post(URL).mock(return_value=httpx.Response(500, headers={"x-should-retry": "false"}, json={"error": {"message": "bad"}}))
    with pytest.raises(APIError): run(fast().complete(REQ))
    assert route.call_count == 1


@respx.mock
def test_5xx_retried_until_max_retries_then_a_clear_error():
    route = respx.post(URL).mock(return_value=httpx.Response(502, text="<html>Bad Gateway</html>"))
    with pytest.raises(APIError, match=r"openai HTTP 502: <html>Bad Gateway</html> \(gave up after 3 attempt\(s\)\)"):
        run(fast(max_retries=2).complete(REQ))
    assert route.call_count == 3


@respx.mock
def test_invalid_json_is_retried_then_a_clear_error_never_an_empty_answer():
    route = respx.post(URL).mock(return_value=httpx.Response(200, content=b'{"choices": [{"message": {"content": "hel'))
    with pytest.raises(MalformedResponse, match=r"body is not JSON: \{\"choices\".*gave up after 2 attempt"):
        run(fast(max_retries=1).complete(REQ))
    assert route.call_count == 2


@respx.mock
def test_a_body_of_the_wrong_shape_is_not_retried():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json={"id": "x", "object": "chat.completion"}))
    with pytest.raises(MalformedResponse, match="openai: response has no choices"):
        run(fast().complete(REQ))
    assert route.call_count == 1


@respx.mock
def test_an_error_inside_a_200_body_uses_its_code():
    respx.post(URL).mock(return_value=httpx.Response(200, json={"error": {"message": "Provider returned error", "code": 429}}))
    with pytest.raises(APIError, match="openai HTTP 429: Provider returned error"): run(fast(max_retries=0).complete(REQ))


@respx.mock
def test_transport_errors_and_timeouts_are_retried():
    route = respx.post(URL).mock(side_effect=[httpx.ConnectError("refused"), httpx.ReadTimeout("slow"),
                                              httpx.RemoteProtocolError("peer closed connection"), httpx.Response(200, json=OK)])
    call = Call()
    assert run(fast().complete(REQ, call)).text == "hello"
    assert route.call_count == 4
    assert [d["error"].split(":")[0] for _, d in call.events] == ["ConnectionFailed", "CallTimeout", "ConnectionFailed"]


@respx.mock
def test_the_model_sent_is_stripped_of_provider_and_url():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=OK))
    c = fast()
    run(c.complete(LLMRequest(messages=[user("hi")], model="openai:gpt-4o-mini@http://127.0.0.1:9/v1")))
    run(c.complete(LLMRequest(messages=[user("hi")])))
    assert [json.loads(call.request.content)["model"] for call in route.calls] == ["gpt-4o-mini", "m"]
    with pytest.raises(ValueError, match="no model"): run(OpenAIClient(base_url=BASE).complete(REQ))


@respx.mock
def test_n_samples_topped_up_when_a_server_ignores_n_with_distinct_seeds():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=OK))
    r = run(fast().complete(LLMRequest(messages=[user("hi")], n=3, seed=10)))
    bodies = [json.loads(c.request.content) for c in route.calls]
    assert len(r.choices) == 3 and r.usage.prompt_tokens == 9
    assert [(b.get("n"), b.get("seed")) for b in bodies] == [(3, 10), (None, 11), (None, 12)]


# ---- keys --------------------------------------------------------------------------------------

@respx.mock
def test_keys_never_reach_errors_events_logs_or_reprs(caplog):
    key = "sk-live-0123456789abcdef"
    respx.post(URL).mock(side_effect=[httpx.Response(500, json={"error": {"message": f"upstream rejected key {key}"}}),
                                      httpx.Response(401, json={"error": {"message": f"Incorrect API key provided: {key}"}})])
    client, call = fast(api_key=key), Call()
    caplog.set_level(logging.DEBUG, logger="reasoning_kit.models")
    with pytest.raises(APIError) as e: run(client.complete(REQ, call))
    seen = str(e.value) + repr(e.value) + json.dumps(call.events) + caplog.text + repr(client) + repr(vars(client))
    assert key not in seen and "***" in str(e.value) and "***" in json.dumps(call.events)
    assert respx.calls[0].request.headers["authorization"] == f"Bearer {key}"  # it was sent, to the server only


@respx.mock
def test_keys_from_settings_secrets_and_async_callables():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=OK))
    old = settings.secrets
    try:
        settings.secrets = {"MY_VAULT_KEY": "from-vault"}.get
        run(OpenAIClient("m", base_url=BASE, key_env="MY_VAULT_KEY").complete(REQ))
    finally: settings.secrets = old
    async def rotating(): return "from-callable"
    run(OpenAIClient("m", base_url=BASE, api_key=rotating).complete(REQ))
    assert [c.request.headers.get("authorization") for c in route.calls] == ["Bearer from-vault", "Bearer from-callable"]


def test_missing_key_for_a_hosted_api_fails_before_sending(monkeypatch):
    monkeypatch.setattr(settings, "secrets", lambda name: None)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post("https://api.openai.com/v1/chat/completions")
        with pytest.raises(MissingKey, match="set the environment variable OPENAI_API_KEY"):
            run(client_for_model("openai:gpt-4o-mini").complete(REQ))
        assert route.call_count == 0


@respx.mock
def test_anthropic_headers_and_path():
    route = respx.post("http://127.0.0.1:9/v1/messages").mock(return_value=httpx.Response(200, json={
        "type": "message", "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}))
    run(AnthropicClient("claude-x", base_url="http://127.0.0.1:9", api_key="k-ant").complete(REQ))
    h = route.calls[0].request.headers
    assert (h["x-api-key"], h["anthropic-version"], "authorization" in h) == ("k-ant", "2023-06-01", False)


# ---- streams (respx) ---------------------------------------------------------------------------

def sse_body(*chunks, done=True):
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + ("data: [DONE]\n\n" if done else "")


TEXT_CHUNKS = [{"choices": [{"index": 0, "delta": {"content": w}}]} for w in ["one ", "two ", "three"]]


async def collect(client, request=REQ, call=None):
    out = []
    async for item in client.stream(request, call): out.append(item)
    return out


@respx.mock
def test_a_stream_error_status_before_any_delta_is_retried():
    route = respx.post(URL).mock(side_effect=[httpx.Response(503, json={"error": {"message": "busy"}}),
                                              httpx.Response(200, headers={"content-type": "text/event-stream"},
                                                             text=sse_body(*TEXT_CHUNKS, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))])
    call = Call()
    items = run(collect(fast(), call=call))
    assert route.call_count == 2 and [k for k, _ in call.events] == ["llm.retry"]
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == items[-1].text == "one two three"


@respx.mock
def test_a_stream_without_its_end_marker_is_retried_then_an_error_not_a_short_answer():
    route = respx.post(URL).mock(return_value=httpx.Response(200, headers={"content-type": "text/event-stream"}, text=sse_body(*TEXT_CHUNKS, done=False)))
    got = []
    async def go():
        async for item in fast(max_retries=2).stream(REQ): got.append(item)
    with pytest.raises(StreamTruncated, match="cut after 3 deltas.*before its \\[DONE\\].*gave up after 3 attempt"): run(go())
    assert route.call_count == 3 and not any(isinstance(i, LLMResponse) for i in got)
    assert [type(i).__name__ for i in got] == ["TextDelta"] * 3 + ["StreamRestart"] + ["TextDelta"] * 3 + ["StreamRestart"] + ["TextDelta"] * 3


@respx.mock
def test_a_server_that_ignores_stream_true_still_streams_one_delta():
    respx.post(URL).mock(return_value=httpx.Response(200, json=OK))
    items = run(collect(fast()))
    assert [type(i).__name__ for i in items] == ["TextDelta", "LLMResponse"] and items[-1].text == "hello"


# ---- a local server that misbehaves on purpose --------------------------------------------------

class BadServer:
    "An HTTP/1.1 server on 127.0.0.1 whose behaviour per request comes from a list of modes."
    def __init__(self, modes, hold=0.0):
        self.modes, self.hold, self.seen, self.open, self.max_open = list(modes), hold, 0, 0, 0

    async def __aenter__(self):
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def handle(self, reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                size = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
                body = json.loads(await reader.readexactly(size))
                mode = self.modes[min(self.seen, len(self.modes) - 1)]; self.seen += 1
                self.open += 1; self.max_open = max(self.max_open, self.open)
                try: await self.answer(mode, body, writer)
                finally: self.open -= 1
                if mode in ("reset", "cut", "stall", "trickle"): return
        except (asyncio.IncompleteReadError, ConnectionError, IndexError):
            pass
        finally:
            writer.close()

    async def answer(self, mode, body, writer):
        if self.hold: await asyncio.sleep(self.hold)
        if mode == "ok":
            data = json.dumps(OK).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data))
        elif mode == "reset":  # close the socket with a RST, mid-request
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            writer.transport.abort()
        elif mode == "half":  # promise 400 bytes, send 30, hang up
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n" + json.dumps(OK).encode()[:30])
            await writer.drain(); writer.transport.close()
        elif mode == "cut":  # a stream that stops halfway, connection closed
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            for c in TEXT_CHUNKS[:2]:
                piece = f"data: {json.dumps(c)}\n\n".encode()
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece)); await writer.drain(); await asyncio.sleep(0.01)
            writer.transport.close()
        elif mode == "stall":  # read the request, never answer
            await asyncio.sleep(30)
        elif mode == "trickle":  # answer one byte every 50 ms, forever: each read is quick, the whole never ends
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n")
            for _ in range(600):
                writer.write(b" "); await writer.drain(); await asyncio.sleep(0.05)
        await writer.drain()


def test_connection_reset_is_retried_on_a_real_socket():
    async def go():
        async with BadServer(["reset", "ok"]) as s:
            call = Call()
            r = await OpenAIClient("m", base_url=s.url, backoff=0.01).complete(REQ, call)
            return r, s.seen, call.events
    r, seen, events = run(go())
    assert r.text == "hello" and seen == 2 and events[0][1]["error"].startswith("ConnectionFailed")


def test_a_body_cut_short_is_retried_then_fails_clearly():
    async def go():
        async with BadServer(["half"]) as s:
            c = OpenAIClient("m", base_url=s.url, backoff=0.01, max_retries=1)
            with pytest.raises(ConnectionFailed, match="gave up after 2 attempt"): await c.complete(REQ)
            return s.seen
    assert run(go()) == 2


def test_a_stream_cut_halfway_on_a_real_socket_is_asked_again_and_the_listener_told():
    async def go():
        async with BadServer(["cut", "ok"]) as s:
            got, call = [], Call()
            async for item in OpenAIClient("m", base_url=s.url, backoff=0.01).stream(REQ, call): got.append(item)
            return got, s.seen, call.events
    got, seen, events = run(go())
    assert [type(i).__name__ for i in got] == ["TextDelta", "TextDelta", "StreamRestart", "TextDelta", "LLMResponse"]
    restart = got[2]
    assert (restart.index, restart.attempt, restart.discarded) == (None, 1, 2) and restart.error.startswith(("ConnectionFailed", "StreamTruncated"))
    assert got[-1].text == got[3].text == "hello" and seen == 2  # the whole second answer, nothing of the cut one
    assert [k for k, _ in events] == ["llm.retry"] and events[0][1]["attempt"] == 1


def test_cut_samples_restart_one_sample_each_and_the_answers_match_an_uncut_run():
    "n=2 sampled by parallel streams: a cut sample is restarted alone (its index), the others stand."
    async def go(modes):
        async with BadServer(modes) as s:
            c = OpenAIClient("m", base_url=s.url, backoff=0.01, native_n=False)
            return [i async for i in c.stream(LLMRequest(messages=[user("hi")], n=2))]
    cut, clean = run(go(["cut", "ok"])), run(go(["ok"]))
    restarts = [i for i in cut if isinstance(i, StreamRestart)]
    assert len(restarts) == 1 and restarts[0].index in (0, 1)
    assert cut[-1].texts == clean[-1].texts == ["hello", "hello"]


def test_under_an_engine_a_cut_stream_is_retried_and_the_run_equals_the_uncut_one():
    from reasoning_kit.algos import ToolLoop
    async def go(modes, **kw):
        async with BadServer(modes) as s:
            seen = []
            async with Engine() as engine:
                LLMHandler(OpenAIClient("m", base_url=s.url, backoff=0.01, **kw)).attach(engine)
                r = engine.start(ToolLoop(stream=True), {"task": "hi"})
                r.watch_deltas(seen.append)
                return await r, seen
    (cut, seen), (clean, _) = run(go(["cut", "ok"])), run(go(["ok"]))
    assert cut.status == clean.status == Status.OK and cut.value == clean.value and cut.calls == clean.calls == 1
    assert [type(d).__name__ for d in seen] == ["TextDelta", "TextDelta", "StreamRestart", "TextDelta"]
    assert [e.kind for e in cut.log if e.kind.startswith("llm.")] == ["llm.request", "llm.retry", "llm.result"]
    out, _ = run(go(["cut"], max_retries=1))  # retries run out: the call's error names the cut and the attempts
    err = [e for e in out.log if e.kind == "llm.error"]
    assert out.status != Status.OK and len(err) == 1 and err[0].key == "loop/1/llm"
    assert "cut after 2 deltas" in err[0].data["error"] and "gave up after 2 attempt" in err[0].data["error"]



def test_a_vote_that_lost_a_sample_for_good_ends_partial_and_names_the_call():
    "SelfConsistency carries on without a sample whose retries ran out; the status says so, not a silent OK."
    from reasoning_kit.algos import SelfConsistency
    async def go(modes):
        async with BadServer(modes) as s, Engine() as engine:
            LLMHandler(OpenAIClient("m", base_url=s.url, backoff=0.01, max_retries=1)).attach(engine)
            return await engine.run(SelfConsistency(samples=3, mode="separate"), {"task": "hi"})
    out, clean = run(go(["ok", "ok", "reset"])), run(go(["ok"]))  # after two answers, every connection is reset
    assert clean.status == Status.OK and clean.failed_calls == {} and clean.error is None
    assert out.status == Status.PARTIAL and out.value["answer"] == clean.value["answer"] == "hello"
    [(key, error)] = out.failed_calls.items()
    assert key.startswith("sc/sample/") and "gave up after 2 attempt" in error
    assert key in out.error and out.error.startswith("1 model call failed for good")
    assert fold_run(out.log).status == "partial" and out.value["votes"] == {"hello": 2}

def test_whole_call_timeout_on_a_stalled_server():
    async def go():
        async with BadServer(["stall"]) as s:
            c = OpenAIClient("m", base_url=s.url, timeout=0.3, max_retries=1, backoff=0.01)
            t0 = time.monotonic()
            with pytest.raises(CallTimeout, match="no complete answer within 0.3s"): await c.complete(REQ)
            return time.monotonic() - t0, s.seen
    elapsed, seen = run(go())
    assert seen == 2 and 0.6 <= elapsed < 10  # two deadlines, not the stall (which never ends); generous for a loaded machine


def test_whole_call_timeout_on_a_server_that_trickles():
    async def go():
        async with BadServer(["trickle"]) as s:
            c = OpenAIClient("m", base_url=s.url, timeout=0.5, max_retries=0)
            t0 = time.monotonic()
            with pytest.raises(CallTimeout): await c.complete(REQ)
            return time.monotonic() - t0
    assert 0.5 <= run(go()) < 10  # each byte came within 50 ms: only the whole-call deadline stops it (the trickle alone lasts far longer)


def test_refused_connections_are_retried_then_fail():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]  # bound, not listening: connections are refused
        c = OpenAIClient("m", base_url=f"http://127.0.0.1:{port}/v1", backoff=0.01, max_retries=2)
        with pytest.raises(ConnectionFailed, match="gave up after 3 attempt"): run(c.complete(REQ))
        assert c.requests == 3


def test_max_in_flight_bounds_concurrent_calls():
    async def go():
        async with BadServer(["ok"], hold=0.05) as s:
            c = OpenAIClient("m", base_url=s.url, max_in_flight=4)
            rs = await asyncio.gather(*[c.complete(REQ) for _ in range(20)])
            await c.aclose()
            return rs, s.max_open
    rs, max_open = run(go())
    assert len(rs) == 20 and max_open == 4


def test_requests_per_minute_throttles():
    async def go():
        async with BadServer(["ok"]) as s:
            c = OpenAIClient("m", base_url=s.url, requests_per_minute=1200)  # 20 a second
            await c.complete(REQ)
            c.limiter.requests.level = 0  # as if the minute's allowance were spent
            t0 = time.monotonic()
            await asyncio.gather(*[c.complete(REQ) for _ in range(5)])
            return time.monotonic() - t0
    assert 0.22 <= run(go()) < 10  # held back by the limiter; the upper bound only says it did not stall


def test_tokens_per_minute_is_charged_real_usage():
    async def go():
        async with BadServer(["ok"]) as s:
            c = OpenAIClient("m", base_url=s.url, tokens_per_minute=100_000)
            await c.complete(REQ)
            return c.limiter.tokens.level
    assert 100_000 - 4 - 0.5 <= run(go()) <= 100_000 - 4 + 0.5  # 3 prompt + 1 completion tokens (plus a trickle of refill)


def test_the_pool_reopens_after_aclose_and_in_a_new_event_loop():
    async def once(c, s_url):
        return (await c.complete(REQ)).text
    async def go():
        async with BadServer(["ok"]) as s:
            c = OpenAIClient("m", base_url=s.url)
            a = await c.complete(REQ); await c.aclose(); b = await c.complete(REQ)
            return c, s, a.text + b.text
    async def in_new_loop(c):
        async with BadServer(["ok"]) as s:
            c.base_url = s.url
            return (await c.complete(REQ)).text
    c, s, texts = run(go())
    assert texts == "hellohello"
    assert run(in_new_loop(c)) == "hello"  # the old loop is gone; the client makes a new pool


def test_the_engine_closes_clients_and_logs_retries_as_events_not_calls():
    async def go():
        async with BadServer(["reset", "ok"]) as s:
            client = OpenAIClient("m", base_url=s.url, backoff=0.01)
            from reasoning_kit.algos import ToolLoop
            async with Engine() as engine:
                LLMHandler(client).attach(engine)
                out = await engine.run(ToolLoop(), {"task": "hi"})
            return out, client
    out, client = run(go())
    assert out.status == Status.OK and out.value["text"] == "hello"
    kinds = [e.kind for e in out.log if e.kind.startswith("llm.")]
    assert kinds == ["llm.request", "llm.retry", "llm.result"] and out.calls == 1
    assert client._http is None  # closed by the engine's block


def test_pooled_transport_spreads_calls_and_releases_every_pool():
    async def go():
        async with BadServer(["ok"], hold=0.02) as s:
            c = OpenAIClient("m", base_url=s.url, max_in_flight=16, backoff=0.01)
            await c.complete(REQ)
            transport = c._http._transport
            peak = []
            async def watch():
                for _ in range(20): peak.append(sum(1 for b in transport.busy if b)); await asyncio.sleep(0.005)
            await asyncio.gather(watch(), *[c.complete(REQ) for _ in range(12)])
            s.modes, s.seen = ["cut"], 0
            with pytest.raises(StreamTruncated): await collect(c)  # a stream cut halfway still releases its pool
            s.modes = ["ok"]
            await collect(c)
            busy = list(transport.busy)
            await c.aclose()
            return len(transport.pools), max(peak), busy
    pools, peak, busy = run(go())
    assert pools == 4 and peak >= 3 and busy == [0, 0, 0, 0]
