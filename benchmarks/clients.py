"""Throughput and added latency of reasoning_kit's OpenAIClient, beside the official openai SDK's
AsyncOpenAI, against the same local server (aimock, a separate Node.js process on 127.0.0.1) in the
same run.

    python benchmarks/clients.py [--requests 2000] [--rounds 3]

Prints requests per second at 1, 16 and 64 calls in flight (best of `rounds` alternating rounds, so
both clients see the same server in the same state), and the latency each client adds per call over
a bare httpx POST + json.loads, measured one call at a time. Needs npm (aimock is installed into
.aimock/ by scripts/aimock.sh) and the `openai` package (the dev extra)."""
import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_clients_aimock import start_aimock  # noqa: E402

from reasoning_kit.models.clients import OpenAIClient, openai_body, parse_openai  # noqa: E402
from reasoning_kit.models import LLMRequest, user  # noqa: E402

REQUEST = LLMRequest(messages=[user("hello")])
SDK_ARGS = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}


async def ours_call(client: OpenAIClient): return (await client.complete(REQUEST)).text
async def sdk_call(client): return (await client.chat.completions.create(**SDK_ARGS)).choices[0].message.content


def raw_call(http: httpx.AsyncClient, url: str):
    body = json.dumps(SDK_ARGS).encode()
    async def call():
        r = await http.post(url, content=body, headers={"content-type": "application/json"})
        return json.loads(r.content)["choices"][0]["message"]["content"]
    return call


async def throughput(call, n: int, in_flight: int) -> float:
    "Requests per second for `n` calls with at most `in_flight` open at once."
    left = iter(range(n))
    async def worker():
        for _ in left: await call()
    t0 = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(in_flight)])
    return n / (time.perf_counter() - t0)


async def latency(call, n: int) -> float:
    "Median seconds per call, one at a time."
    times = []
    for _ in range(n):
        t0 = time.perf_counter(); await call(); times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cpu_per_call(n: int = 20000) -> float:
    "Seconds of this client's own work per call: building and encoding the body, decoding and parsing the answer."
    answer = json.dumps({"id": "x", "model": "gpt-4o-mini", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello! How can I help you today?"},
                         "finish_reason": "stop"}], "usage": {"prompt_tokens": 12, "completion_tokens": 8}}).encode()
    t0 = time.perf_counter()
    for _ in range(n):
        json.dumps(openai_body(REQUEST, "gpt-4o-mini")).encode()
        parse_openai(json.loads(answer))
    return (time.perf_counter() - t0) / n


async def main(n: int, rounds: int):
    from openai import AsyncOpenAI
    proc, url = start_aimock()
    try:
        base = f"{url}/v1"
        ours = OpenAIClient("gpt-4o-mini", base_url=base, max_in_flight=64)
        sdk = AsyncOpenAI(base_url=base, api_key="sk-aimock-bench", max_retries=0)
        raw = httpx.AsyncClient(limits=httpx.Limits(max_connections=64, max_keepalive_connections=64), timeout=30)
        clients = {"reasoning_kit OpenAIClient": lambda: ours_call(ours), "openai AsyncOpenAI": lambda: sdk_call(sdk)}
        for call in clients.values():  # warm up: connections, imports, JIT-less caches
            await throughput(call, 200, 16)
        print(f"server: aimock on {url} (Node.js, separate process); {n} requests per measurement, best of {rounds} rounds\n")
        print(f"{'in flight':>9}  " + "  ".join(f"{name:>27}" for name in clients) + f"  {'ratio':>6}")
        results = {}
        for in_flight in (1, 16, 64):
            count = max(n // 4, 100) if in_flight == 1 else n
            best = {name: 0.0 for name in clients}
            for _ in range(rounds):
                for name, call in clients.items():
                    best[name] = max(best[name], await throughput(call, count, in_flight))
            results[in_flight] = best
            a, b = best.values()
            print(f"{in_flight:>9}  " + "  ".join(f"{v:>21.0f} req/s" for v in best.values()) + f"  {a / b:>5.2f}x")
        raw_fn = raw_call(raw, f"{base}/chat/completions")
        await latency(raw_fn, 50)
        lat = {"bare httpx POST + json.loads": [], **{k: [] for k in clients}}
        fns = {"bare httpx POST + json.loads": raw_fn, **clients}
        for _ in range(rounds):
            for name, fn in fns.items(): lat[name].append(await latency(fn, max(n // 10, 100)))
        med = {k: min(v) for k, v in lat.items()}
        bare = med["bare httpx POST + json.loads"]
        print("\nlatency, one call at a time (median, best round):")
        for name, v in med.items():
            extra = "" if name.startswith("bare") else f"   added: {(v - bare) * 1e6:+.0f} us"
            print(f"  {name:>29}: {v * 1e6:7.0f} us{extra}")
        print(f"\nreasoning_kit's own work per call (body + JSON encode, JSON decode + parse, no I/O): {cpu_per_call() * 1e6:.1f} us")
        await ours.aclose(); await sdk.close(); await raw.aclose()
        return results, med
    finally:
        proc.terminate()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=1500, help="requests per throughput measurement")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best is reported")
    args = ap.parse_args()
    asyncio.run(main(args.requests, args.rounds))
