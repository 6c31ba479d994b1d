"""Sweep overhead: items/s of `sweep` (no directory, and with an experiment directory) against running the
same items one after another with `Engine.run`, on the scripted Game of 24 model. Prints ratios to that baseline.
(The Ray executor is not built yet, so only the local executor is measured.)"""
import asyncio
import sys
import tempfile
import time

from reasoning_kit.algos import TreeOfThoughts
from reasoning_kit.eval import on_answer
from reasoning_kit.llm import FakeLLMClient, LLMHandler
from reasoning_kit.runtime import Engine
from reasoning_kit.sweep import sweep
from reasoning_kit.tasks import game24

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20
PUZZLES = game24.puzzles(900, 900 + N)
tot = TreeOfThoughts(depth=4, width=1, branching=4, generate="propose", evaluate="value", n_evaluate=1,
                     stop_score=None, prompts=game24.prompts)


def scripted():
    e = Engine()
    LLMHandler(FakeLLMClient(game24.oracle)).attach(e)
    return e


async def baseline():
    for p in PUZZLES:
        async with scripted() as e: await e.run(tot, {"task": p})


async def main():
    await baseline()  # warm up (imports, first-call caches)
    t = time.perf_counter(); await baseline(); base = time.perf_counter() - t
    print(f"engine.run one by one: {N / base:.1f} items/s")
    for label, kw in [("sweep, no directory", {}), ("sweep, experiment directory", {"dir": tempfile.mkdtemp()})]:
        t = time.perf_counter()
        await sweep({"b1": tot}, PUZZLES, engine=scripted, check=on_answer(game24.check), progress=False, concurrency=1, **kw)
        s = time.perf_counter() - t
        print(f"{label}: {N / s:.1f} items/s, {1000 * (s - base) / N:+.2f} ms per item overhead, {s / base:.2f}x baseline")

asyncio.run(main())
