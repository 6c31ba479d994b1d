"""Engine speed: framework overhead per model call, fold speed, log round trip.

    python benchmarks/engine.py [--calls 10000]

Times are CPU time of this process (time.process_time), so other work on the machine does not
inflate them. Each part runs in a fresh process with what existed before it frozen out of the
garbage collector (gc.freeze), so the figures are the engine's own cost, collector included; the
figure with the collector paused shows how much of it is Python's cyclic GC walking the growing log. Overhead is measured against a baseline in the same run: the same scripted client called directly
with the same requests, so what remains is what the engine adds (keys, fingerprints, events,
folding, budget checks, JSON of request and response). Targets (issue 2): overhead under 50 us per
call at 10,000 calls; fold over 200,000 events/s.
"""
import argparse
import asyncio
import gc
import statistics
import time

from reasoning_kit.core.events import Log, fold
from reasoning_kit.models import FakeLLMClient, LLMHandler, LLMRequest, Message
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Algorithm, Budget, Engine, RunReducer, fold_run

REPLY = text("ok")


class Sequential(Algorithm):
    "N model calls one after another, each recorded as a domain event."
    name = "bench_sequential"

    def __init__(self, n: int = 10_000, parallel: bool = False):
        self.n, self.parallel = n, parallel

    def initial(self):
        return {"answers": 0}

    def apply(self, s, e):
        if e.kind == "bench.answered": s["answers"] += 1

    async def run(self, ctx):
        if self.parallel:
            rs = await ctx.gather(*[ctx.llm(REQUESTS[i], key=f"b/{i}") for i in range(self.n)])
            for r in rs: ctx.emit("bench.answered", text=r.text)
        else:
            for i in range(self.n):
                r = await ctx.llm(REQUESTS[i], key=f"b/{i}")
                ctx.emit("bench.answered", text=r.text)

    def result(self, s):
        return s


REQUESTS: list[LLMRequest] = []


async def direct(client, n):
    for i in range(n): await client.complete(REQUESTS[i])


async def engine_run(n, parallel=False, budget=None):
    async with Engine() as engine:
        LLMHandler(FakeLLMClient(lambda r: REPLY)).attach(engine)
        return await engine.run(Sequential(n, parallel), {}, budget=budget)


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        gc.collect(); t = time.process_time(); out = fn(); times.append(time.process_time() - t)
    return min(times), out


def setup(n):
    REQUESTS[:] = [LLMRequest(messages=[Message(role="system", content="You are terse."),
                                        Message(role="user", content=f"question {i}: what is {i} + {i}?")])
                   for i in range(n)]
    gc.collect()
    gc.freeze()  # what existed before the measurement (imports, the prebuilt requests) is not the engine's heap


CONFIGS = {
    "sequential": lambda n: engine_run(n),
    "parallel": lambda n: engine_run(n, parallel=True),
    "budget": lambda n: engine_run(n, budget=Budget(calls=n, tokens=10**9, cost=1e9, seconds=3600)),
}
LABELS = {"sequential": "engine, sequential:", "parallel": "engine, all in parallel:", "budget": "engine, sequential, every limit set:"}


def overhead(n, config):
    "One process measures one configuration, so no run's leftovers inflate another's garbage collection."
    setup(n)
    t_direct, _ = best(lambda: asyncio.run(direct(FakeLLMClient(lambda r: REPLY), n)))
    per = lambda t: (t - t_direct) / n * 1e6
    if config == "sequential":
        print(f"model calls per run:              {n}")
        print(f"scripted client alone:            {t_direct / n * 1e6:7.1f} us/call (baseline, measured in each process)")
    fn = CONFIGS[config]
    t, _ = best(lambda: asyncio.run(fn(n)))
    gc.disable()
    t_nogc, _ = best(lambda: asyncio.run(fn(n)))
    gc.enable()
    print(f"{LABELS[config]:36} {t / n * 1e6:6.1f} us/call -> overhead {per(t):5.1f} us/call "
          f"({per(t_nogc):.1f} with the garbage collector paused){'  target < 50' if config == 'sequential' else ''}")


def log_speed(n):
    setup(n)
    out = asyncio.run(engine_run(n))
    log = out.log
    events = list(log)
    t_fold, state = best(lambda: fold(events, RunReducer(Sequential(n))), repeat=5)
    assert state.algo == out.state.algo
    print(f"fold:                             {len(events) / t_fold:,.0f} events/s ({len(events)} events; target > 200,000)")

    t_w, textlog = best(lambda: log.to_jsonl(), repeat=5)
    t_r, back = best(lambda: Log.from_jsonl(textlog), repeat=3)
    assert back.events == log.events
    mb = len(textlog.encode()) / 1e6
    print(f"log to JSON Lines:                {len(events) / t_w:,.0f} events/s ({mb / t_w:.0f} MB/s)")
    print(f"log from JSON Lines (validated):  {len(events) / t_r:,.0f} events/s ({mb / t_r:.0f} MB/s; {mb:.1f} MB)")

    t_replay, again = best(lambda: asyncio.run(replay(n, log)), repeat=1)
    assert again.value == out.value and again.sent == {}
    print(f"replay of the whole run:          {t_replay / n * 1e6:7.1f} us/call served from the log")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--part", choices=[*CONFIGS, "log"], default=None)
    a = ap.parse_args()
    if a.part == "log": return log_speed(a.calls)
    if a.part: return overhead(a.calls, a.part)
    import subprocess, sys
    for part in (*CONFIGS, "log"):
        subprocess.run([sys.executable, __file__, "--calls", str(a.calls), "--part", part], check=True)


async def replay(n, log):
    async with Engine() as engine:
        LLMHandler(FakeLLMClient(lambda r: REPLY)).attach(engine)
        return await engine.run(Sequential(n), {}, replay=log)


if __name__ == "__main__":
    main()
