"""How much of each prompt does llama-server read from its prefix cache, and does routing calls to slots help?

    python benchmarks/prefix_reuse.py [--items 4] [--rounds 2] [--max-tokens 32]

Runs TreeOfThoughts (depth 2, width 2, branching 2) and Debate (3 agents, 1 round) over `items` tasks at once
against a local llama-server (SmolLM2-135M, 4 slots, 1 thread), two ways, alternating in rounds:

- server: the server picks each request's slot itself (llama-server's default: the idle slot whose cached prompt
  is most like the new one),
- by node: each request names its slot (`id_slot`): the calls that share a prefix go to one slot. For ToT, a
  node's children's proposals share the node's path, and its children's score calls share it too; for Debate,
  agent i's answers in every round share its persona and the task. A group gets a slot on first sight, the
  least used so far, so the slots stay even.

Every measurement gets tasks never sent before and starts with every slot's cache emptied, and who goes first
alternates by round (so neither routing reads the other's prompts). The routing lives in a client wrapper below the log (`SlotRouter`): the logged requests, and so the results
and replay, are the same either way. Prints prompt tokens, cached tokens and prompt tokens evaluated
(prompt - cached) per run, and completion tokens per second, per algorithm and routing.

Measured (perf branch, 2 shared cores, load average about 5; 4 runs at once, 2 rounds; sampled replies):

    algorithm                                      routing  calls/run prompt/run cached/run evaluated/run  tok/s
    TreeOfThoughts(depth=2, width=2, branching=2)  server        12.0       1588        823           766   27.1
    TreeOfThoughts(depth=2, width=2, branching=2)  by node       12.0       1563       1103           460   32.6
    Debate(agents=3, rounds=1)                     server         7.0       1204        378           826   18.3
    Debate(agents=3, rounds=1)                     by node        7.0       1200        426           774   19.1

ToT: 0.60x the prompt tokens evaluated by node; Debate 0.94x: a debater's prompts already land on its slot
mostly by the server's own choice (its revision prompt holds the whole first answer). The routing was
measured then with the benchmark's own copy of the router; since then it runs `reasoning_kit.models.local.SlotRouter` itself,
as `server.router()` gives it. Measured so (main at 7dae735, idle 2-core VM, load average 0.4 at the start):

    algorithm                                      routing  calls/run prompt/run cached/run evaluated/run  tok/s
    TreeOfThoughts(depth=2, width=2, branching=2)  server        12.0       1613        804           809   38.0
    TreeOfThoughts(depth=2, width=2, branching=2)  by node       12.0       1611       1134           477   44.3
    Debate(agents=3, rounds=1)                     server         7.0       1134        411           723   26.2
    Debate(agents=3, rounds=1)                     by node        7.0       1126        449           677   24.2

ToT 0.59x the prompt tokens evaluated and 1.17x the tokens per second; Debate 0.94x evaluated but 0.92x the tokens
per second: its three debaters' calls each queue for their own slot while the fourth slot idles.
"""
import argparse
import asyncio
import tempfile
import time

import httpx

from reasoning_kit.models import local
from reasoning_kit.algos import Debate, TreeOfThoughts
from reasoning_kit.engine import Engine
from reasoning_kit.models import LLMHandler

def tasks(n: int, start: int) -> list[str]:
    "`n` tasks of one shape, none sent before: a measurement reads nothing from the cache but what its own runs put there."
    return [f"What is {3 + i % 7} * {start + i} + {2 + i % 5}? Reply with the number." for i in range(n)]


async def measure(model: str, algorithm, tasks, route: bool, slots: int) -> dict:
    async with Engine() as engine:
        handler = LLMHandler(model)
        if route: handler.client = local.SlotRouter(handler.client, slots)  # what server.router() gives
        handler.attach(engine)
        t = time.perf_counter()
        outs = await asyncio.gather(*(engine.run(algorithm, {"task": x}) for x in tasks))
        wall = time.perf_counter() - t
        await handler.client.aclose()
    assert all(o.status.value == "ok" for o in outs), [o.error for o in outs]
    n = len(outs); prompt = sum(o.state.prompt_tokens for o in outs); cached = sum(o.state.cached_tokens for o in outs)
    return {"runs": n, "calls": sum(o.calls for o in outs) / n, "prompt": prompt / n, "cached": cached / n,
            "evaluated": (prompt - cached) / n, "tok_s": sum(o.state.completion_tokens for o in outs) / wall}


def cold(server) -> None:
    "Empty every slot's cache (the server's RAM prompt cache stays: it only ever holds other tasks' prompts)."
    for i in range(server.server_slots): httpx.post(f"{server.url}/slots/{i}?action=erase", timeout=30).raise_for_status()


async def main(items: int, rounds: int, max_tokens: int, slots: int):
    algorithms = {"TreeOfThoughts(depth=2, width=2, branching=2)": TreeOfThoughts(depth=2, width=2, branching=2, stop_score=None),
                  "Debate(agents=3, rounds=1)": Debate(agents=3, rounds=1, personas=["You are careful.", "You are quick.", "You are skeptical."])}
    saves, fresh = tempfile.mkdtemp(prefix="slots-"), iter(range(10, 10**6, items))
    with local.serve("smollm2", slots=slots, threads=1, extra_args=["-n", str(max_tokens), "--slot-save-path", saves]) as server:
        with open("/proc/loadavg") as f: load = f.read().split()[:3]
        print(f"server: {server!r}; replies capped at {max_tokens} tokens; {items} runs at once; {rounds} alternating rounds; load {load}")
        print(f"\n{'algorithm':46} {'routing':8} {'calls/run':>9} {'prompt/run':>10} {'cached/run':>10} {'evaluated/run':>13} {'tok/s':>6}")
        for name, algorithm in algorithms.items():
            got = {False: [], True: []}
            for _ in range(rounds):
                for route in (False, True) if len(got[True]) % 2 == 0 else (True, False):  # who goes first alternates
                    cold(server); got[route].append(await measure(server.model, algorithm, tasks(items, next(fresh)), route, slots))
            for route, ms in got.items():
                avg = {k: sum(m[k] for m in ms) / len(ms) for k in ms[0]}
                print(f"{name:46} {'by node' if route else 'server':8} {avg['calls']:>9.1f} {avg['prompt']:>10.0f} {avg['cached']:>10.0f} "
                      f"{avg['evaluated']:>13.0f} {avg['tok_s']:>6.1f}")
            e0 = sum(m["evaluated"] for m in got[False]); e1 = sum(m["evaluated"] for m in got[True])
            print(f"{'':46} evaluated by node / by server: {e1 / e0:.2f}x")
        with open("/proc/loadavg") as f: print("load at end:", f.read().split()[:3])


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=4); ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=32); ap.add_argument("--slots", type=int, default=4)
    a = ap.parse_args()
    asyncio.run(main(a.items, a.rounds, a.max_tokens, a.slots))
