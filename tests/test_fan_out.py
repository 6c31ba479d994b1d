"""n > 1 on a server that refuses it (#30): the client fans one request out into n requests for one sample each, sample
i with seed `seed + i`, so the samples differ; the n requests are sent together, so a sweep of such calls keeps every
slot of the server busy (up to the client's `max_in_flight`). A fake OpenAI-compatible server on 127.0.0.1 refuses n,
holds each request for a moment, answers with a reply made from the request's seed, and records the seeds it was sent
and how many requests it held at once. The same against the real local server is in tests/test_local.py."""
import asyncio
import json
import re

from reasoning_kit.algos import SelfConsistency
from reasoning_kit.models.clients import OpenAIClient
from reasoning_kit.engine import Engine
from reasoning_kit.models import LLMHandler, LLMRequest, user


class Slots:
    "A server that refuses n > 1 and answers each request after `hold` seconds with the request's seed."
    def __init__(self, hold: float = 0.1):
        self.hold, self.bodies, self.open, self.peak, self.seen_open = hold, [], 0, 0, []

    async def handle(self, reader, writer):
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode()
                body = json.loads(await reader.readexactly(int(re.search(r"(?i)content-length: *(\d+)", head)[1])))
                self.bodies.append(body)
                if body.get("n", 1) > 1:
                    out = self.http(400, {"error": {"message": "'n' must be 1", "type": "invalid_request_error"}})
                else:
                    self.open += 1; self.peak = max(self.peak, self.open); self.seen_open.append(self.open)
                    await asyncio.sleep(self.hold)
                    self.open -= 1
                    text = f"Answer: {body['seed']}" if "seed" in body else "Answer: unseeded"
                    out = self.http(200, {"model": "m", "usage": {"prompt_tokens": 3, "completion_tokens": 2},
                                          "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
                writer.write(out); await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError): pass
        finally: writer.close()

    @staticmethod
    def http(status: int, payload: dict) -> bytes:
        data = json.dumps(payload).encode()
        return f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n".encode() + data

    async def __aenter__(self):
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"
        return self

    async def __aexit__(self, *exc): self.server.close()


def test_one_fanned_out_call_sends_n_requests_at_once_each_with_its_own_seed():
    async def go():
        async with Slots() as s:
            client = OpenAIClient("m", base_url=s.url)
            try: r = await client.complete(LLMRequest(messages=[user("Pick a number.")], n=4, seed=41, temperature=1.0))
            finally: await client.aclose()
            return s, r, client
    s, r, client = asyncio.run(go())
    assert [b.get("n", 1) for b in s.bodies] == [4, 1, 1, 1, 1] and client.native_n is False  # refused once, then fanned out
    assert sorted(b["seed"] for b in s.bodies[1:]) == [41, 42, 43, 44]  # distinct seeds: seed + i
    assert r.texts == [f"Answer: {i}" for i in (41, 42, 43, 44)]  # distinct samples, in the order of their seeds
    assert s.peak == 4  # the four were held by the server at the same time, not one after another


def test_a_sweep_of_fanned_out_calls_keeps_every_slot_busy():
    "Six SelfConsistency runs at once, each one call for n=4 samples, through a client with 4 requests in flight."
    tasks = [f"What is {a} + {a}?" for a in range(6)]

    async def go():
        async with Slots() as s:
            handler = LLMHandler(OpenAIClient("m", base_url=s.url, native_n=False, max_in_flight=4))
            async with Engine() as engine:
                handler.attach(engine)
                outs = await asyncio.gather(*(engine.run(SelfConsistency(samples=4, mode="n"), {"task": t}, seed=i)
                                              for i, t in enumerate(tasks)))
            return s, outs
    s, outs = asyncio.run(go())
    assert all(o.ok and o.calls == 1 for o in outs) and len(s.bodies) == 6 * 4 and all(b.get("n", 1) == 1 for b in s.bodies)
    for o in outs:  # each run's four samples carry four seeds, one apart, and came back as four different replies
        req = next(e for e in o.log if e.kind == "llm.request").data["request"]
        texts = next(e for e in o.log if e.kind == "llm.result").data["result"]["choices"]
        assert [c["message"]["content"] for c in texts] == [f"Answer: {req['seed'] + i}" for i in range(4)]
    assert s.peak == 4 and s.seen_open[:4] == [1, 2, 3, 4]  # every slot the client allows was filled at once, never more
