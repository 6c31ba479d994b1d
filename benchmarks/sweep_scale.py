"""Sweeps at scale (issue 30): items per second beside `engine.run` one by one, memory kept per run, and resume
after kill -9 with nothing asked twice. Scripted model, local executor, an experiment directory (a log per run).

    python benchmarks/sweep_scale.py [--items 10000] [--small 1000] [--resume 2000] [--ray 0]   # --small 0: only the resume and Ray parts

Two configurations (TreeOfThoughts depth 2, width 2, branching 2: 12 calls; SelfConsistency, 5 samples in one call)
over `items` tasks. Each sweep runs in a fresh process (so its peak RSS is its own): `small` items, then `items`
items; memory kept per run is the difference of the two peaks over the difference in runs. Resume: a sweep of
`resume` items is killed with SIGKILL once a fifth of its rows are written, then run again in the same directory;
every log is then read back and each model call's key must have been answered by the model exactly once
(answers served from a log on resume are marked `replayed`). `--ray N`: the same sweep of N items on Ray with
2 workers (a local 2-CPU instance), beside the local executor on the same N.

Measured (perf branch, 2 shared cores, load average 3.5-5; the executor's change is the only one between the rows):

                                                      before (task per job)      after (workers)
    engine.run one by one (no directory)              682 items/s                679 items/s
    sweep of 1,000 items, directory                   308 items/s, 51.8 MiB      198 items/s, 50.2 MiB  (machine busier)
    sweep of 10,000 items, directory                  305 items/s, 92.7 MiB      296 items/s, 77.0 MiB
    memory kept per run (peak RSS over 18,000 runs)   2381 B                     1558 B
    resume, 10,000 items killed at 4,000 rows         -                          130,000 calls, 0 asked twice, 21 served
    Ray, 1,000 items, 2 CPUs (start included)         -                          20.4 items/s (local: 70.9, same load)

Ray at 10,000 items (perf2 branch, 2 workers on a local 2-CPU instance, load average 2.1 at the start; Ray's own
processes are others than the driver, so their resident memory is sampled every 0.5 s over the driver's process tree):

                                   items/s (start included)   peak RSS, driver   peak RSS, driver + Ray's processes
    local executor, 1,000 items        344.6                      50.7 MiB          -
    local executor, 10,000 items       327.5                      78.0 MiB          -
    Ray, 1,000 items                    62.0                     144.4 MiB          1,016.9 MiB
    Ray, 10,000 items                   74.5 (134 s)             185.5 MiB          1,119.2 MiB

Ray costs about 1 GB of its own (raylet, GCS, dashboard, two workers) whatever the size; over the 18,000 more runs
the driver grows 41 MiB (2.4 KB a run, against the local executor's 1.5 KB) and the whole tree 102 MiB.

Then the Ray executor took LocalExecutor's shape: `concurrency` workers take the next job as they finish one, where it
had made a coroutine for each of the 20,000 jobs at the start, each waiting on a semaphore (main at 5df91f6 and after,
idle machine, load average 0.7-1.1):

                                   items/s (start included)   peak RSS, driver   peak RSS, driver + Ray's processes
    Ray, 1,000 items                    62.0 -> 49.6              144.4 -> 141.5 MiB     1,016.9 -> 1,214.1 MiB
    Ray, 10,000 items                   74.5 -> 104.9             185.5 -> 171.0 MiB     1,119.2 -> 1,103.2 MiB

The driver now grows 29.5 MiB over the 18,000 more runs: 1.7 KB a run (2.4 KB before; the local executor's 1.5 KB).
Ray's own processes move by 100-200 MiB from one start to the next, whatever the sweep. At 1,000 items Ray's start
(about 10 s here) is most of the time, so that row's items per second says more about the start than the sweep.
"""
import argparse
import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reasoning_kit.algos import SelfConsistency, TreeOfThoughts
from reasoning_kit.engine import Engine
from reasoning_kit.models import FakeLLMClient, LLMHandler

CONFIGS = {"tot": TreeOfThoughts(depth=2, width=2, branching=2, stop_score=None), "sc": SelfConsistency(samples=5)}
CALLS = 0


def model(request, key):
    "Instant and deterministic: a step per proposal, a score per key, an answer per sample."
    global CALLS; CALLS += 1
    if key.endswith("/score"): return str(sum(map(ord, key)) % 10)
    if key.startswith("tot/"): return f"step {key}"
    return "Answer: 7"


def engine() -> Engine:
    e = Engine(); LLMHandler(FakeLLMClient(model, keep=0)).attach(e); return e


def tasks(n: int) -> list[str]: return [f"What is {i} + 7 - {i}?" for i in range(n)]
def check(result, input) -> bool: return result.get("answer") is not None


def child(n: int, d: str | None, executor: str) -> None:
    "One sweep in this process; prints a JSON line of what it measured."
    from reasoning_kit.sweep import sweep
    t = time.perf_counter()
    kw = {"executor": "ray"} if executor == "ray" else {}
    res = asyncio.run(sweep(CONFIGS, tasks(n), engine=engine, check=check, dir=d, concurrency=4, progress=False, **kw))
    s = time.perf_counter() - t
    print(json.dumps({"items": n, "runs": len(res.rows), "seconds": s, "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "calls": CALLS, "ok": sum(r["status"] == "ok" for r in res.rows)}), flush=True)


def spawn(n: int, d: str | None, executor: str = "local", **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "--child", str(n), "--dir", d or "", "--executor", executor],
                            stdout=subprocess.PIPE, text=True, **kw)


def tree_rss_kib(root: int) -> int:
    "Resident memory of process `root` and all its descendants (a Ray driver's raylet, GCS and workers), in KiB."
    kids, rss = {}, {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit(): continue
        try:
            stat = (d / "stat").read_text(); status = (d / "status").read_text()
        except OSError: continue
        kids.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(d.name))
        rss[int(d.name)] = next((int(l.split()[1]) for l in status.splitlines() if l.startswith("VmRSS")), 0)
    todo, total = [root], 0
    while todo: pid = todo.pop(); total += rss.get(pid, 0); todo += kids.get(pid, [])
    return total


def measured(n: int, d: str | None, executor: str = "local") -> dict:
    p = spawn(n, d, executor)
    peak = 0
    if executor == "ray":  # Ray's workers are other processes: sample the whole tree's RSS while it runs
        while p.poll() is None: peak = max(peak, tree_rss_kib(p.pid)); time.sleep(0.5)
    out, _ = p.communicate()
    assert p.returncode == 0, out
    return json.loads(out.strip().splitlines()[-1]) | ({"tree_peak_kib": peak} if peak else {})


def one_by_one(n: int) -> float:
    "Items per second through engine.run, one after another, each configuration in turn (no directory)."
    async def go():
        for x in tasks(n):
            for alg in CONFIGS.values():
                async with engine() as e: await e.run(alg, {"task": x})
    t = time.perf_counter(); asyncio.run(go()); return n / (time.perf_counter() - t)


def answered_twice(d: Path) -> tuple[int, int, int]:
    "Over every log in `d`: (keys answered by the model, of them answered more than once, answers served on resume)."
    asked, twice, served = set(), 0, 0
    for f in (d / "logs").rglob("*.jsonl"):
        for line in f.read_text().splitlines()[1:]:
            try: e = json.loads(line)
            except ValueError: continue  # a torn last line
            if e.get("kind") != "llm.result": continue
            if (e.get("data") or {}).get("replayed"): served += 1; continue
            k = (f.name, f.parent.name, e.get("key"))
            twice += k in asked; asked.add(k)
    return len(asked), twice, served


def resume(n: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = spawn(n, d)
        rows = Path(d) / "rows.jsonl"
        while p.poll() is None and (not rows.exists() or rows.read_text().count("\n") < 2 * n // 5): time.sleep(0.05)
        p.send_signal(signal.SIGKILL); p.wait()
        before = rows.read_text().count("\n")
        again = measured(n, d)
        keys, twice, served = answered_twice(Path(d))
        print(f"resume after kill -9: {before:,} of {2 * n:,} rows written before the kill; the second process made "
              f"{again['calls']:,} model calls and finished {again['ok']:,} rows ok; over all logs {keys:,} calls answered by the "
              f"model, {twice} of them twice, {served} answers served from a log on resume")
        assert twice == 0 and again["ok"] == 2 * n


def scale(a) -> None:
    base = one_by_one(min(a.small, 1000))
    print(f"{'engine.run one by one (no directory)':<46} {base:8.1f} items/s  ({len(CONFIGS)} runs an item)")
    figures = {}
    for n in (a.small, a.items):
        with tempfile.TemporaryDirectory() as d:
            m = figures[n] = measured(n, d)
        print(f"{f'sweep of {n:,} items, local executor, directory':<46} {n / m['seconds']:8.1f} items/s  {n / m['seconds'] / base:5.2f}x  "
              f"peak RSS {m['maxrss_kib'] / 1024:6.1f} MiB  ({m['runs']:,} runs, {m['calls']:,} model calls)")
    m = measured(a.small, None)
    print(f"{f'sweep of {a.small:,} items, local executor, no directory':<46} {a.small / m['seconds']:8.1f} items/s  "
          f"{a.small / m['seconds'] / base:5.2f}x  (no log files, no rows.jsonl: what the directory costs)")
    s, b = figures[a.small], figures[a.items]
    print(f"memory kept per run: {(b['maxrss_kib'] - s['maxrss_kib']) * 1024 / (b['runs'] - s['runs']):.0f} B "
          f"(peak RSS difference over {b['runs'] - s['runs']:,} more runs; target <= ~2 KB)")


def main(a) -> None:
    with open("/proc/loadavg") as f: print("load average:", " ".join(f.read().split()[:3]), f"({os.cpu_count()} cores)")
    if a.small: scale(a)
    if a.resume: resume(a.resume)
    if a.ray:
        for ex in ("local", "ray"):
            with tempfile.TemporaryDirectory() as d:
                m = measured(a.ray, d, ex)
            print(f"{f'sweep of {a.ray:,} items, {ex} executor':<46} {a.ray / m['seconds']:8.1f} items/s  peak RSS {m['maxrss_kib'] / 1024:6.1f} MiB"
                  + (f" (driver; with Ray's processes {m['tree_peak_kib'] / 1024:.1f} MiB, sampled every 0.5 s)  (the time includes starting Ray)"
                     if ex == "ray" else ""))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=10_000); ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--resume", type=int, default=2000); ap.add_argument("--ray", type=int, default=0)
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--dir", default="", help=argparse.SUPPRESS); ap.add_argument("--executor", default="local", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None: child(a.child, a.dir or None, a.executor)
    else: main(a)
