"""The gateway on one llama-server, in one run (issue #41):

(a) a plain model through the gateway (pass-through) against httpx straight to the server: tokens/s;
(b) `self_consistency+...` and `tree_of_thoughts+...` under 8 concurrent clients: requests/s, slots busy, and the
    gateway's usage against the server's own /metrics counters;
(c) the same self-consistency request through optillm's proxy (installed in a separate venv: give its python with
    --optillm, e.g. /tmp/optillm-venv/bin/python): accuracy, wall time, reported vs generated tokens.

    PYTHONPATH=. python3 benchmarks/gateway.py [--optillm /tmp/optillm-venv/bin/python] [--out bench.json]

Every number is measured here; nothing is assumed. The machine's other load shows up in them: run it on a quiet one.

Measured 2026-12-07 on a shared 2-core machine under a load average of 4 to 12 (other benchmarks and test suites were
running: SmolLM2-135M decoded at 4-7 tokens/s instead of its usual ~100), llama-server with 4 slots, all SmolLM2-135M:

| part | what | result |
|---|---|---|
| (a) `--rounds 3` | pass-through vs httpx straight to llama-server, 8 requests x 48 tokens, 4 at once | 6.2 vs 6.3 tokens/s (best round each): 0.98x; one-token requests, median of 20 alternated: 655 ms vs 687 ms (the gateway's own cost is under the noise) |
| (b) | `self_consistency+` (4 samples, 32 tokens), 8 clients at once | 8 requests in 285 s: 0.028 requests/s, 3.59 of 4 slots busy on average; completion tokens reported 900 = 900 generated (/metrics), prompt tokens processed 116 = 116 |
| (b) | `tree_of_thoughts+` (depth 1, width 2, branching 2), 8 clients | 8 requests (32 calls) in 436 s: 0.018 requests/s, 3.83 slots busy; completion 852 = 852, prompt 1759 = 1759 |
| (c) `--only c --items 4 --tokens 64` | self-consistency, 5 samples at temperature 1, gateway vs optillm 0.4.0, item by item alternating | wall time 196 s vs 337 s: the gateway 1.72x faster (one n=5 request decoded on the slots together, against optillm's five in a row); completion tokens reported 922 = 922 generated vs optillm's 338 of 978 generated (it drops truncated samples from its count); accuracy 0/4 both (a 135M model at temperature 1 does not add two-digit numbers) |

optillm was installed in its own venv: `python -m venv /tmp/optillm-venv; pip install --no-deps optillm` and, for its
proxy's imports, `flask openai cerebras-cloud-sdk z3-solver numpy networkx sympy aiohttp httpx pyyaml math-verify`.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time

import httpx
import uvicorn

from reasoning_kit.algos.answers import extract
from reasoning_kit.apps.gateway import Gateway
from reasoning_kit.models.local import serve


def free_port() -> int:
    with socket.socket() as s: s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


def metrics(url: str) -> dict:
    text = httpx.get(url + "/metrics", timeout=60).text
    return {m[1]: float(m[2]) for m in re.finditer(r"^llamacpp:(\w+) ([0-9.e+]+)$", text, re.M)}


class Serving:
    "The gateway on a socket, in a thread."
    def __init__(self, app):
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
    def __enter__(self):
        self.thread.start()
        while not self.server.started: time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}/v1"
    def __exit__(self, *exc): self.server.should_exit = True; self.thread.join(30)


class SlotWatch:
    "The mean number of busy slots, sampled from llama-server's /slots while a phase runs."
    def __init__(self, url: str): self.url, self.samples, self.stop = url, [], threading.Event()
    def _run(self):
        with httpx.Client(timeout=30) as c:
            while not self.stop.is_set():
                try: self.samples.append(sum(bool(s.get("is_processing")) for s in c.get(self.url + "/slots").json()))
                except (httpx.HTTPError, ValueError): pass
                self.stop.wait(0.2)
    def __enter__(self): self.t = threading.Thread(target=self._run, daemon=True); self.t.start(); return self
    def __exit__(self, *exc): self.stop.set(); self.t.join(30)
    @property
    def mean(self) -> float: return sum(self.samples) / len(self.samples) if self.samples else 0.0


async def fire(url: str, bodies: list[dict], concurrency: int) -> tuple[float, list[dict]]:
    "POST every body to url/chat/completions, `concurrency` at once; (wall seconds, responses)."
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=64)) as c:
        async def one(b):
            async with sem:
                r = await c.post(url + "/chat/completions", json=b)
                r.raise_for_status(); return r.json()
        t0 = time.perf_counter()
        out = await asyncio.gather(*[one(b) for b in bodies])  # in the bodies' order
        return time.perf_counter() - t0, out


def pass_through(direct: str, gateway: str, model: str, rounds: int = 2, requests: int = 8, tokens: int = 48, latency_requests: int = 20) -> dict:
    "(a): the same fixed-length requests straight to the server and through the gateway, rounds interleaved."
    body = lambda i: {"model": model, "messages": [{"role": "user", "content": f"Count upwards from {i}."}], "max_tokens": tokens,
                      "temperature": 0, "ignore_eos": True}
    rates = {"direct": [], "gateway": []}
    for _ in range(rounds):
        for name, url in (("direct", direct), ("gateway", gateway)):
            wall, rs = asyncio.run(fire(url, [body(i) for i in range(requests)], 4))
            rates[name].append(sum(r["usage"]["completion_tokens"] for r in rs) / wall)
    best = {k: max(v) for k, v in rates.items()}
    lat = {"direct": [], "gateway": []}  # the gateway's own cost, apart from decoding: one-token requests, alternated one by one
    with httpx.Client(timeout=120) as c:
        for i in range(2 * latency_requests):
            name, url = (("direct", direct), ("gateway", gateway))[i % 2]
            t0 = time.perf_counter()
            c.post(url + "/chat/completions", json={**body(i), "max_tokens": 1}).raise_for_status()
            lat[name].append(time.perf_counter() - t0)
    med = {k: sorted(v)[len(v) // 2] * 1000 for k, v in lat.items()}
    return {"direct_tokens_per_s": round(best["direct"], 1), "gateway_tokens_per_s": round(best["gateway"], 1),
            "ratio": round(best["gateway"] / best["direct"], 3), "rounds": rates,
            "one_token_median_ms": {k: round(v, 1) for k, v in med.items()}, "overhead_ms": round(med["gateway"] - med["direct"], 1)}


QUESTIONS = [(a, b) for a, b in ((random.Random(i).randint(2, 30), random.Random(100 + i).randint(2, 30)) for i in range(12))]


def under_load(gateway: str, llama_url: str, up: str, clients: int = 8, each: int = 1, tokens: int = 32) -> dict:
    "(b): self_consistency and tree_of_thoughts, `clients` at once, with the gateway's usage checked against /metrics."
    configs = {"self_consistency": {"samples": 4}, "tree_of_thoughts": {"depth": 1, "width": 2, "branching": 2}}
    out = {}
    for name, config in configs.items():
        bodies = [{"model": f"{name}+{up}", "max_tokens": tokens, "messages": [{"role": "user", "content": f"What is {a} + {b}?"}],
                   "reasoning_kit": {"config": config}} for a, b in QUESTIONS[:clients * each]]
        before = metrics(llama_url)
        with SlotWatch(llama_url) as w: wall, rs = asyncio.run(fire(gateway, bodies, clients))
        after = metrics(llama_url)
        used = sum(r["usage"]["completion_tokens"] for r in rs)
        fresh = sum(r["usage"]["prompt_tokens"] - r["usage"]["prompt_tokens_details"]["cached_tokens"] for r in rs)
        out[name] = {"requests": len(rs), "clients": clients, "seconds": round(wall, 2), "requests_per_s": round(len(rs) / wall, 3),
                     "mean_slots_busy": round(w.mean, 2), "calls": sum(r["reasoning_kit"]["calls"] for r in rs),
                     "completion_tokens_reported": used, "completion_tokens_generated": int(after["tokens_predicted_total"] - before["tokens_predicted_total"]),
                     "prompt_tokens_processed_reported": fresh, "prompt_tokens_processed_by_server": int(after["prompt_tokens_total"] - before["prompt_tokens_total"])}
    return out


def accuracy_run(url: str, model: str, items: list, extra: dict, llama_url: str, tokens: int = 96, concurrency: int = 1) -> dict:
    "(c): self-consistency on `items` through one endpoint: accuracy, wall time, reported vs generated completion tokens."
    bodies = [{"model": model, "max_tokens": tokens, "temperature": 1.0, "messages": [{"role": "user", "content": f"What is {a} + {b}? Give the number."}], **extra}
              for a, b in items]
    before = metrics(llama_url)
    wall, rs = asyncio.run(fire(url, bodies, concurrency))
    after = metrics(llama_url)
    answers = [extract(r["choices"][0]["message"]["content"] or "", "number").answer for r in rs]
    right = sum(x == str(a + b) for x, (a, b) in zip(answers, items))
    return {"items": len(items), "correct": right, "accuracy": round(right / len(items), 3), "seconds": round(wall, 2),
            "completion_tokens_reported": sum(r["usage"]["completion_tokens"] for r in rs),
            "completion_tokens_generated": int(after["tokens_predicted_total"] - before["tokens_predicted_total"])}


def _sum(parts: list[dict]) -> dict:
    out = {k: sum(p[k] for p in parts) for k in ("items", "correct", "seconds", "completion_tokens_reported", "completion_tokens_generated")}
    return {**out, "seconds": round(out["seconds"], 2), "accuracy": round(out["correct"] / out["items"], 3)}


def against_optillm(gw: str, up: str, llama_url: str, items: list, tokens: int, python: str | None) -> dict:
    "(c): the same self-consistency request (5 samples at temperature 1) through the gateway and through optillm, item by item, alternating."
    ours, theirs, proc = [], [], None
    if python:
        port = free_port()
        env = {**os.environ, "OPENAI_API_KEY": "none", "PYTHONPATH": ""}
        proc = subprocess.Popen([python, "-c", "import sys, optillm; sys.exit(optillm.main())", "--base-url", llama_url + "/v1",
                                 "--port", str(port), "--log", "warning"], env=env, stdout=subprocess.DEVNULL, stderr=open("/tmp/optillm-bench.log", "w"))
        url, deadline = f"http://127.0.0.1:{port}/v1", time.monotonic() + 120
        while time.monotonic() < deadline:
            try: httpx.get(url.removesuffix("/v1") + "/health", timeout=2); break
            except httpx.TransportError: time.sleep(0.5)
    try:
        for item in items:
            ours.append(accuracy_run(gw, f"self_consistency+{up}", [item], {"reasoning_kit": {"config": {"samples": 5}}}, llama_url, tokens))
            if proc is not None: theirs.append(accuracy_run(url, "self_consistency-smollm2", [item], {}, llama_url, tokens))
            print(json.dumps({"gateway": ours[-1], "optillm": theirs[-1] if theirs else None}), flush=True)
    finally:
        if proc is not None: proc.terminate(); proc.wait(30)
    return {"gateway": _sum(ours), **({"optillm": _sum(theirs)} if theirs else {})}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--optillm", help="the python of a venv where optillm is installed (pip install --no-deps optillm, flask, openai, ...)")
    p.add_argument("--items", type=int, default=4, help="(c): questions, each answered with 5 samples (optillm's fixed number)")
    p.add_argument("--tokens", type=int, default=96, help="(c): max_tokens of each sample")
    p.add_argument("--rounds", type=int, default=2, help="(a): rounds, each 8 requests straight and 8 through the gateway")
    p.add_argument("--only", choices=["a", "b", "c"], help="run one part only")
    p.add_argument("--out", help="write the results as JSON here")
    a = p.parse_args(argv)
    results = {}
    with serve("smollm2", slots=4) as llama:
        up = llama.model
        with Serving(Gateway([up]).app) as gw:
            if a.only in (None, "a"):
                results["pass_through"] = pass_through(llama.url + "/v1", gw, up, rounds=a.rounds)
                print(json.dumps(results["pass_through"]), flush=True)
            if a.only in (None, "b"):
                results["under_load"] = under_load(gw, llama.url, up)
                print(json.dumps(results["under_load"]), flush=True)
            if a.only in (None, "c"): results["self_consistency"] = against_optillm(gw, up, llama.url, QUESTIONS[:a.items], a.tokens, a.optillm)
    if a.out:
        with open(a.out, "w") as f: json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
