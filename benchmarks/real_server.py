"""Does reasoning_kit keep a real server busy? Completion tokens per second through the engine, beside a plain
httpx client sending the same requests with the same concurrency (issue 30).

    python benchmarks/real_server.py [--items 6] [--max-tokens 32] [--rounds 3] [--slots 4] [--threads 1]

Starts llama-server (reasoning_kit.models.local.serve, SmolLM2-135M, `slots` slots; `-n max_tokens` caps every reply at
the server, so both sides send byte-identical bodies) and, per algorithm (SelfConsistency with separate samples,
Debate, ToT), runs `items` tasks at once through `engine.run`. The plain client then sends the very bodies the
engine sent (rebuilt from each run's log by the same client's `_body`), item by item in the same waves (the
requests a run issued together, before any of them was answered, go together; the next wave waits for the last
answer of the one before), all items at once, at most `slots` requests open (an asyncio.Semaphore and an httpx pool
of that size), and reads completion tokens from the server's own usage. Decoding is greedy (temperature 0), so the
same prompt gets the same reply whoever sends it and both sides do the same work (sampled replies differ in length
and in what the prefix cache holds).

Every slot's prompt cache is emptied before each side's turn and the server's RAM prompt cache is off (`--cache-ram
0`; else the side that goes second reads the prompts the other just sent from a cache), and who goes first
alternates by round. On a shared machine the server's own speed moves by 20-30% between turns, so beside the best
tokens per second of each side (and their ratio, target >= 0.95x; and the median of each round's ratio, the two
sides measured back to back) it prints what does not depend on the server's speed: the mean number of requests in
flight (time with a request open, summed, over the wall time; `slots` is the most there can be). Needs `bash
scripts/setup.sh --local` once (llama-server and the model cached).

Measured (perf branch, 2 shared cores, load average about 5 with two other developers' llama-servers running;
items 6, rounds 3; each round's rk/plain tokens per second, the two sides back to back):

                                                 calls   best rk   best plain   best/best   rounds' ratios   in flight rk / plain
    SelfConsistency(samples=5, separate)            30      29.9         31.6       0.95x   0.95 0.98 0.98        3.93 / 3.94
    Debate(agents=3, rounds=1)                      42      13.4         14.5       0.93x   0.98 0.97 0.88        3.95 / 3.97
    TreeOfThoughts(depth=2, width=2, branching=2)   32      20.8         20.4       1.02x   1.03 1.09 1.02        3.93 / 3.97

Both sides keep the 4 slots equally busy (3.93-3.97 requests in flight of 4); what moves the ratio is the server's
own time per request from one turn to the next (a timed Debate pair: 4.4 s a request through reasoning_kit, 3.8 s
plain, both with about 3.96 in flight; the next pair 3.2 s and 3.0 s). Before the slots were emptied between turns
the side that went second read the other's prompts from the cache (ToT: 0.65x). llama-server started with all
cores' threads (-t 2) on this loaded machine made about 1 token a second; --threads 1 (the default here) about 20.

Again on the perf2 branch (the engine sends a gathered request as soon as it is admitted), load average 2.1 at the
start and 1.5 at the end (other work on the machine):

                                                 calls   best rk   best plain   best/best   rounds' ratios   in flight rk / plain
    SelfConsistency(samples=5, separate)            30      45.3         43.7       1.04x   0.92 0.80 1.04        3.93 / 3.93
    Debate(agents=3, rounds=1)                      42      23.6         22.4       1.06x   0.98 1.01 1.05        3.94 / 3.97
    TreeOfThoughts(depth=2, width=2, branching=2)   33      31.5         31.8       0.99x   0.97 0.99 1.04        3.96 / 3.95

Every algorithm is at or above 0.95x best against best; the rounds' ratios still move with the server's own speed
from one turn to the next (SelfConsistency's second round: 32.4 against 40.7 tokens a second, both sides with 3.93
requests in flight).
"""
import argparse
import asyncio
import json
import tempfile
import time

import httpx

from reasoning_kit.models import local
from reasoning_kit.algos import Debate, SelfConsistency, TreeOfThoughts
from reasoning_kit.models.transport import PooledTransport
from reasoning_kit.models.wire import json_text
from reasoning_kit.engine import Engine
from reasoning_kit.models import LLMHandler, LLMRequest
from reasoning_kit.models.core import from_log_form

TASKS = [f"What is {a} + {b}? Reply with the number." for a, b in [(3, 4), (7, 8), (2, 9), (6, 6), (5, 8), (9, 9),
                                                                   (4, 7), (8, 3), (1, 6), (7, 7), (9, 2), (5, 5)]]


def algorithms():
    "Greedy decoding (temperature 0): the same prompt gets the same reply on both sides, so both do the same work."
    return {"SelfConsistency(samples=5, separate)": SelfConsistency(samples=5, mode="separate", temperature=0),
            "Debate(agents=3, rounds=1)": Debate(agents=3, rounds=1, temperature=0),
            "TreeOfThoughts(depth=2, width=2, branching=2)": TreeOfThoughts(depth=2, width=2, branching=2, stop_score=None,
                                                                            temperature=0, generate="propose")}


class Timed(httpx.AsyncBaseTransport):
    "A transport that notes when each chat request went out and when its whole answer was back."
    def __init__(self, inner: httpx.AsyncBaseTransport): self.inner, self.spans = inner, []
    async def handle_async_request(self, request):
        t = time.perf_counter(); r = await self.inner.handle_async_request(request); await r.aread()
        if request.url.path.endswith("/chat/completions"): self.spans.append(time.perf_counter() - t)
        return httpx.Response(r.status_code, headers=r.headers, content=r.content, extensions=r.extensions)
    async def aclose(self): await self.inner.aclose()


def waves(log) -> list[list[dict]]:
    "A run's model requests, in the groups it issued together: a wave ends at the first answer after it."
    out, open_ = [], False
    for e in log:
        if e.kind == "llm.request":
            if not open_: out.append([]); open_ = True
            out[-1].append(e.data["request"])
        elif e.kind in ("llm.result", "llm.error"): open_ = False
    return out


async def through_engine(model: str, algorithm, tasks, slots: int) -> tuple[int, float, list, dict]:
    "Completion tokens and seconds for `tasks` run at once through the engine; each run's waves; cache figures."
    async with Engine() as engine:
        timed = Timed(PooledTransport(slots))  # the pool the client would make itself, timed
        handler = LLMHandler(model, transport=timed); handler.attach(engine)
        t = time.perf_counter()
        outs = await asyncio.gather(*(engine.run(algorithm, {"task": task}) for task in tasks))
        wall = time.perf_counter() - t
        client = handler.client
        assert all(o.status.value == "ok" for o in outs), [o.error for o in outs]
        def body(r: dict) -> bytes:
            q = from_log_form(LLMRequest, r); return json_text(client._body(q, client._model_for(q), False)).encode()
        bodies = [[[body(r) for r in w] for w in waves(o.log)] for o in outs]
        usage = {"prompt": sum(o.state.prompt_tokens for o in outs), "cached": sum(o.state.cached_tokens for o in outs),
                 "calls": sum(o.calls for o in outs), "in_flight": client.max_in_flight, "busy": sum(timed.spans) / wall}
        await client.aclose()
    return sum(o.state.completion_tokens for o in outs), wall, bodies, usage


def cold(server) -> None:
    "Empty every slot's prompt cache, so that neither side reads prompts the other one just sent."
    for i in range(server.server_slots):
        httpx.post(f"{server.url}/slots/{i}?action=erase", timeout=30).raise_for_status()


async def plain_httpx(url: str, runs: list, slots: int) -> tuple[int, float, int, float]:
    "The same bodies, the same waves, all runs at once, at most `slots` open: completion tokens, seconds, cached prompt tokens, mean in flight."
    sem, cached = asyncio.Semaphore(slots), [0]
    timed = Timed(httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=slots, max_keepalive_connections=slots)))
    async with httpx.AsyncClient(transport=timed, timeout=300) as http:
        async def post(body: bytes) -> int:
            async with sem:
                r = await http.post(url, content=body, headers={"content-type": "application/json"})
            r.raise_for_status()
            u = json.loads(r.content)["usage"]; cached[0] += (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            return u["completion_tokens"]

        async def one(run) -> int:
            n = 0
            for wave in run: n += sum(await asyncio.gather(*map(post, wave)))
            return n
        t = time.perf_counter()
        tokens = sum(await asyncio.gather(*map(one, runs)))
        wall = time.perf_counter() - t
        return tokens, wall, cached[0], sum(timed.spans) / wall


async def main(items: int, max_tokens: int, rounds: int, slots: int, threads: int):
    saves = tempfile.mkdtemp(prefix="slots-")  # llama-server erases a slot's cache only when it may save slots
    with local.serve("smollm2", slots=slots, threads=threads, extra_args=["-n", str(max_tokens), "--slot-save-path", saves, "--cache-ram", "0"]) as server:
        url = server.base_url + "/chat/completions"
        await plain_httpx(url, [[[json.dumps({"messages": [{"role": "user", "content": t}]}).encode()] for t in TASKS[:slots]]], slots)  # warm up
        print(f"server: {server!r}; {server.server_slots} slots; replies capped at {max_tokens} tokens by the server; "
              f"{items} items at once per algorithm; best of {rounds} rounds, who goes first alternating")
        with open("/proc/loadavg") as f: print("load average at start:", f.read().split()[:3])
        print(f"\n{'':46} {'':>5} {'completion tokens per second':>35}   {'mean in flight':>14}")
        print(f"{'algorithm':46} {'calls':>5} {'reasoning_kit':>14} {'plain httpx':>13} {'ratio':>6}   {'rk':>6} {'plain':>6}   prompt tokens (cached)")
        tasks = (TASKS * (items // len(TASKS) + 1))[:items]
        ratios = {}
        for name, algorithm in algorithms().items():
            rk, hx, bodies = [], [], None
            for r in range(rounds):  # alternate who goes first (the plain client sends the bodies of the last engine round)
                for side in (("rk", "hx") if r % 2 == 0 else ("hx", "rk")):
                    cold(server)
                    if side == "rk":
                        tok, wall, bodies, usage = await through_engine(server.model, algorithm, tasks, slots)
                        rk.append((tok / wall, usage["busy"]))
                    else:
                        htok, hwall, hcached, hbusy = await plain_httpx(url, bodies, usage["in_flight"]); hx.append((htok / hwall, hbusy))
            best_rk, best_hx = max(rk), max(hx)
            ratios[name] = best_rk[0] / best_hx[0]
            print(f"{name:46} {usage['calls']:>5} {best_rk[0]:>8.1f} tok/s {best_hx[0]:>7.1f} tok/s {ratios[name]:>5.2f}x   "
                  f"{sum(b for _, b in rk) / rounds:>6.2f} {sum(b for _, b in hx) / rounds:>6.2f}   "
                  f"{usage['prompt']} ({usage['cached']} cached; plain: {hcached})")
            per = sorted(a / b for (a, _), (b, _) in zip(rk, hx))
            print(f"{'':46} {'':>5} rounds (rk/plain tok/s): " + ", ".join(f"{a:.1f}/{b:.1f}" for (a, _), (b, _) in zip(rk, hx))
                  + f"; the rounds' ratios: median {per[len(per) // 2]:.2f}x, {per[0]:.2f}-{per[-1]:.2f}")
        with open("/proc/loadavg") as f: print("\nload average at end:", f.read().split()[:3])
        return ratios


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=6, help="tasks run at once per algorithm")
    ap.add_argument("--max-tokens", type=int, default=32, help="completion tokens per reply (the server's -n)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best of each side is printed")
    ap.add_argument("--slots", type=int, default=4, help="llama-server slots (-np)")
    ap.add_argument("--threads", type=int, default=1, help="llama-server threads (-t); on a loaded machine more threads than idle cores spin and crawl")
    a = ap.parse_args()
    asyncio.run(main(a.items, a.max_tokens, a.rounds, a.slots, a.threads))
