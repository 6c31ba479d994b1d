"""Tokens per second of a llama-server build on the default local model (SmolLM2-135M-Instruct Q4_1), so that the
build `reasoning-kit build-server` makes can be compared with another one on the same machine, in the same run.

    python benchmarks/local_build.py [PROGRAM ...]   # default: the library's own build (reasoning_kit.models.local.find_server)

For each program: one request alone (1 slot), then 8 requests over 4 slots; 128 completion tokens each (ignore_eos),
three rounds, the median printed, and each build's figure as a ratio of the first's.

Measured on this project's 2-core VM (x86_64), 2026-12-06, llama-cpp-python 0.3.36's llama.cpp, the two builds one after
the other on a quiet machine (tokens/s, median of 3):
  Release -O3, GGML_NATIVE=ON (reasoning-kit build-server):  1 request 126.9,  8 requests over 4 slots 189.1
  -O1, GGML_NATIVE=OFF (the tests' earlier build):           1 request 129.1 (1.02x),  8 over 4 slots 162.7 (0.86x)
Under heavy load from other processes the same script gave 2.4 against 5.1 and 10.1 against 8.2: meaningless, so measure
on a quiet machine.
"""
import asyncio
import statistics
import sys
import time

import httpx

from reasoning_kit.models import local
N_TOKENS = 128


async def generate(url: str, requests: int) -> float:
    "Completion tokens per second for `requests` requests sent together."
    body = {"messages": [{"role": "user", "content": "Count from one upwards in words."}], "max_tokens": N_TOKENS,
            "temperature": 0, "ignore_eos": True}
    async with httpx.AsyncClient(timeout=600) as client:
        t0 = time.perf_counter()
        rs = await asyncio.gather(*(client.post(url + "/v1/chat/completions", json=body) for _ in range(requests)))
        dt = time.perf_counter() - t0
    return sum(r.json()["usage"]["completion_tokens"] for r in rs) / dt


def measure(program: str) -> dict:
    out = {}
    for slots, requests in ((1, 1), (4, 8)):
        with local.serve("smollm2", slots=slots, program=program) as s:
            asyncio.run(generate(s.url, 1))  # warm up
            out[(slots, requests)] = statistics.median(asyncio.run(generate(s.url, requests)) for _ in range(3))
    return out


def main(programs: list[str]) -> None:
    programs = programs or [str(local.find_server())]
    base = None
    for p in programs:
        r = measure(p)
        base = base or r
        print(p)
        for (slots, requests), tps in r.items():
            print(f"  {requests} request(s) over {slots} slot(s): {tps:7.1f} tokens/s  ({tps / base[(slots, requests)]:.2f}x the first)")


if __name__ == "__main__":
    main(sys.argv[1:])
