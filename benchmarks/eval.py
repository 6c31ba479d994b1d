"""Sweep throughput: items per second and overhead per item of the local executor (no directory, an experiment
directory, concurrency 1 and 4) and the Ray executor (a local 2-CPU instance, started once and not counted), against
running the same items one after another with `Engine.run`, on the scripted Game of 24 model. Prints ratios to that
baseline, measured in the same run.

    python benchmarks/eval.py [N]      # N items (default 20); the Ray rows need `pip install "reasoning_kit[ray]"`"""
import asyncio
import sys
import tempfile
import time

from reasoning_kit.algos import TreeOfThoughts
from reasoning_kit.sweep.eval import on_answer
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.engine import Engine
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


async def timed(**kw) -> float:
    t = time.perf_counter()
    await sweep({"b1": tot}, PUZZLES, engine=scripted, check=on_answer(game24.check), progress=False, **kw)
    return time.perf_counter() - t


def report(label: str, s: float, base: float):
    print(f"{label:<44} {N / s:8.1f} items/s  {1000 * (s - base) / N:+8.2f} ms per item overhead  {s / base:6.2f}x baseline")


async def main():
    await baseline()  # warm up (imports, first-call caches)
    base = float("inf")
    for _ in range(2): t = time.perf_counter(); await baseline(); base = min(base, time.perf_counter() - t)  # the better of two
    print(f"{'engine.run one by one (baseline)':<44} {N / base:8.1f} items/s")
    for label, kw in [("local, concurrency 1, no directory", {"concurrency": 1}),
                      ("local, concurrency 1, experiment directory", {"concurrency": 1, "dir": tempfile.mkdtemp()}),
                      ("local, concurrency 4, experiment directory", {"concurrency": 4, "dir": tempfile.mkdtemp()})]:
        report(label, await timed(**kw), base)
    try: import ray
    except ImportError: print("ray is not installed: no Ray rows"); return
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        from reasoning_kit.sweep.ray import RayExecutor
        await timed(executor=RayExecutor(), dir=tempfile.mkdtemp())  # warm up the workers (imports)
        for label, c in [("ray (2 CPUs), 2 in flight, experiment directory", 2), ("ray (2 CPUs), 8 in flight, experiment directory", 8)]:
            report(label, await timed(executor=RayExecutor(concurrency=c), dir=tempfile.mkdtemp()), base)
    finally: ray.shutdown()

asyncio.run(main())
