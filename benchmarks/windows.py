"""Debate's prompts on SmolLM2 at three context sizes: cut at the fixed 600 characters (before issue 43's sizing) and
sized from the window the server reports (after).

    python benchmarks/windows.py [--tasks 4] [--contexts 1024,2048,4096] [--threads 1]

For each context a llama-server (3 slots, that many tokens each) serves Debate(agents=3, rounds=2) on the same tasks,
every reply capped at 120 tokens, once with `peer_chars=600` and once with the default (sized). Prints, per context
and setting: the calls the server refused for want of context, agents dropped, runs that failed, the largest prompt
against the window, replies the context stopped before their 120 tokens (prompt and reply filled it), and the
characters each reply kept when shown to the others.

Measured (commit 1d1a8a8, shared 2-core VM, 1 thread, 4 tasks a setting, 7 calls a run; replies are unseeded, so each
row is its own draw):

    context  setting    refused  dropped  failed  largest prompt  stopped by context  kept chars  replies cut
      768    fixed 600     6        6       2       737 of  768          3                600          0
      768    sized         0        0       0       555 of  768          0                119         27
     1024    fixed 600     0        0       0       827 of 1024          0                600          0
     1024    sized         0        0       0       758 of 1024          0                220         24
     2048    fixed 600     0        0       0       946 of 2048          0                600          0
     2048    sized         0        0       0       912 of 2048          0                616          0
     4096    fixed 600     0        0       0       883 of 4096          0                600          0
     4096    sized         0        0       0       893 of 4096          0               1304          0

At 768 tokens the fixed bound overflows: 6 calls refused (their agents dropped, 2 of 4 debates failed) and 3 replies
stopped after a few tokens; sized, nothing is refused or starved. At 1024 the sizing is cautious: it cut 24 replies to
220 characters where the fixed 600 happened to fit (827 tokens and a 120-token reply in 1024): it keeps room for a
reply a quarter longer than the longest and counts the prompts' labels at the prompt's own (template-heavy) rate. At
2048 and 4096 nothing is cut. An earlier version took the densest reply's characters per token instead of all the
replies' (2.1 against about 3.5 here): at 2048 it cut 9 replies to 528 characters while the debate took 868 tokens.
"""
import asyncio, statistics, sys, time

from reasoning_kit.algos import Debate
from reasoning_kit.engine import Budget, Engine
from reasoning_kit.models import LLMHandler
from reasoning_kit.models.local import serve

TASKS = ["Explain step by step how to work out 17 x 23, checking each step, then give the number.",
         "A train leaves at 9:40 and arrives at 13:15. Explain step by step how long the trip takes, in minutes.",
         "Explain step by step how many legs 7 spiders and 5 ants have together, then give the number.",
         "Explain step by step what 15% of 240 is, checking the arithmetic, then give the number."]
BUDGET = Budget(call_tokens=120)


def arg(name, default):
    a = sys.argv[1:]
    return a[a.index(name) + 1] if name in a else default


async def one(model, algorithm, task):
    async with Engine() as engine:
        LLMHandler(model).attach(engine)
        return await engine.run(algorithm, {"task": task}, budget=BUDGET)


async def main():
    n, threads = int(arg("--tasks", 4)), int(arg("--threads", 1))
    contexts = [int(c) for c in arg("--contexts", "1024,2048,4096").split(",")]
    for ctx in contexts:
        with serve("smollm2", slots=3, context=ctx, threads=threads) as server:
            for label, make in [("fixed 600", lambda: Debate(agents=3, rounds=2, peer_chars=600)), ("sized", lambda: Debate(agents=3, rounds=2))]:
                t0 = time.time()
                outs = [await one(server.model, make(), t) for t in TASKS[:n]]
                errors = [e.data["error"] for o in outs for e in o.log if e.kind == "llm.error"]
                refused = sum("context" in err.lower() for err in errors)
                dropped = sum(len(o.state.algo.dropped) for o in outs)
                failed = sum(o.status.value not in ("ok", "no_solution") for o in outs)
                usage = [e.data["result"].get("usage") or {} for o in outs for e in o.log if e.kind == "llm.result"]
                prompts = [u.get("prompt_tokens", 0) for u in usage]
                starved = sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) >= ctx - 1 and u.get("completion_tokens", 0) < 120 for u in usage)
                kept = [o.state.algo.sized["chars"] if o.state.algo.sized else 600 for o in outs]
                trimmed = sum(len(o.state.algo.trimmed) for o in outs)
                print(f"context {ctx:5}  {label:9}  refused {refused:2}  dropped {dropped:2}  failed {failed}  "
                      f"largest prompt {max(prompts, default=0):5} of {ctx}  replies stopped by the context {starved:2}  kept chars {statistics.median(kept):6.0f}  "
                      f"replies cut {trimmed:3}  {time.time() - t0:5.0f}s", flush=True)

asyncio.run(main())
