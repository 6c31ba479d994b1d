"""How close reasoning_kit runs to the floor: per-call overhead, critical path, replay, memory, fold and read (issue 11).

    python benchmarks/overhead.py [--runs 20] [--kept 1000] [--quick]

The workload is a Tree of Thoughts beam of 110 model calls (depth 3, width 5, branching 5, no early stop)
against an instant scripted model, run three ways in the same process:

- floor: the same beam as a bare asyncio loop (f-strings for prompts, `asyncio.gather` per level, a sort),
- engine alone: the same beam hand-written over the Engine (`ctx.llm`, `ctx.gather`, one event per level),
- TreeOfThoughts: the library's algorithm, as a user runs it.

Times are CPU time (time.process_time), the median of 5 samples of `runs` runs each, so other work on the
machine does not inflate them. Nothing is frozen out of the garbage collector and no request is prebuilt:
the engine runs as a user would, its log always on. Every figure is printed beside its ratio against the
floor (or the live run) measured in the same run, and the issue's target.

Before issue 11 (main at 523745a, 2 cores shared with other work; the dropped-outcomes row was measured
after the kept ones then, so its figure is noise):

                                                      value unit        ratio   target (issue 11)
    floor: bare asyncio beam                            9.5 us/call      1.0x   
    engine alone: the beam over the Engine            191.3 us/call     20.2x   target <= 3x
    TreeOfThoughts, log in memory                     335.1 us/call     35.5x   target <= 4x
    TreeOfThoughts, log to a file (flush)             480.6 us/call     50.8x   
    critical path, 10 ms model: wall time             186.6 ms           3.1x   ratio vs 2 x depth latencies; target <= 1.1
    replay of a recorded run                          270.6 us/call      1.4x   live / replay; target >= 5x
    fold of a 30,002-event log                        315.7 k ev/s              target >= 1,000k events/s
    read the JSON Lines log (validated, 4.5 MB)         4.8 MB/s                target >= 100 MB/s
    memory of a finished 110-call ToT Outcome         567.1 KiB                 1528 B/event over 380 events; target <= 100 KiB
    1,000 ToT runs, outcomes kept (RSS growth)        583.7 MiB                 target < 100 MiB
    1,000 more runs, outcomes dropped (RSS growth)     -154.7 KiB/run             one FakeLLMClient keeps 1782 requests (keep=1000)

After issue 11 (this branch at 9ae96e8, same machine, load average about 7 on its 2 cores; the read and fold
floors were added to the benchmark then; the critical path's wall time is mostly waiting for a core: the run's
CPU is 26 ms, so on an idle core it would take about 60 + 26 ms):

                                                      value unit        ratio   target (issue 11)
    floor: bare asyncio beam                           17.4 us/call      1.0x   
    engine alone: the beam over the Engine            120.7 us/call      6.9x   target <= 3x
    TreeOfThoughts, log in memory                     212.6 us/call     12.2x   target <= 4x
    TreeOfThoughts, log to a file (flush)             329.2 us/call     18.9x   
    critical path, 10 ms model: wall time             157.9 ms           2.6x   ratio vs 2 x depth latencies; target <= 1.1
    replay of a recorded run                          188.8 us/call      1.3x   live / replay; target >= 5x
    fold of a 30,002-event log                        482.1 k ev/s              target >= 1,000k events/s
    read the JSON Lines log (validated, 4.5 MB)        15.8 MB/s         2.3x   vs json.loads of each line; target >= 100 MB/s
      fold with a reducer that does nothing         10730.3 k ev/s              the floor of a fold on this machine
    memory of a finished 110-call ToT Outcome         444.3 KiB                 1197 B/event over 380 events; target <= 100 KiB
    250 runs, outcomes dropped (RSS growth)             0.0 KiB/run             one FakeLLMClient keeps 1474 requests (keep=1000)
    1,000 ToT runs, outcomes kept (RSS growth)        445.4 MiB                 target < 100 MiB

Then ThoughtNode became a slotted dataclass (main at 17d2dd1, the machine idle: load average 0.4; the parser floor row
was added then). On this machine the per-call figures move by up to 20% from one run of this script to the next,
idle or not; the memory figures are exact:

                                                      value unit        ratio   target (issue 11)
    floor: bare asyncio beam                           15.0 us/call      1.0x   
    engine alone: the beam over the Engine            134.6 us/call      9.0x   target <= 3x
    TreeOfThoughts, log in memory                     192.5 us/call     12.8x   target <= 4x
    TreeOfThoughts, log to a file (flush)             284.1 us/call     19.0x   
    critical path, 10 ms model: wall time              93.2 ms           1.6x   ratio vs 2 x depth latencies; target <= 1.1 (the run's CPU: 27 ms)
    replay of a recorded run                          147.2 us/call      1.3x   live / replay; target >= 5x
    fold of a 30,002-event log                        507.8 k ev/s              target >= 1,000k events/s
    read the JSON Lines log (validated, 4.5 MB)        16.4 MB/s         2.1x   vs json.loads of each line; target >= 100 MB/s
      orjson.loads of each line, nothing checked       45.8 MB/s                the floor of a read on this machine: no validated read can beat its parser
      fold with a reducer that does nothing          8382.6 k ev/s              the floor of a fold on this machine
    memory of a finished 110-call ToT Outcome         380.9 KiB                 1026 B/event over 380 events; target <= 100 KiB
    250 runs, outcomes dropped (RSS growth)             0.0 KiB/run             one FakeLLMClient keeps 1474 requests (keep=1000)
    1,000 ToT runs, outcomes kept (RSS growth)        379.3 MiB                 target < 100 MiB

Then the log kept appended events packed and the run's answers shared them (main at 9e487b8, idle machine: load
average 0.6; the row folding the live log was added then). Against the previous table, the timing rows differ by
no more than this machine's noise; the memory rows are the change:

                                                      value unit        ratio   target (issue 11)
    floor: bare asyncio beam                            8.8 us/call      1.0x   
    engine alone: the beam over the Engine            109.1 us/call     12.4x   target <= 3x
    TreeOfThoughts, log in memory                     166.8 us/call     19.0x   target <= 4x
    TreeOfThoughts, log to a file (flush)             307.8 us/call     35.1x   
    critical path, 10 ms model: wall time              89.9 ms           1.5x   ratio vs 2 x depth latencies; target <= 1.1 (the run's CPU: 29 ms)
    replay of a recorded run                          155.0 us/call      1.3x   live / replay; target >= 5x
    fold of a 30,002-event log                        584.2 k ev/s              target >= 1,000k events/s
      the same, folded from the live log itself       260.6 k ev/s              its events are kept packed, so each is built as the fold reads it
    read the JSON Lines log (validated, 4.5 MB)        16.5 MB/s         1.9x   vs json.loads of each line; target >= 100 MB/s
      orjson.loads of each line, nothing checked       37.8 MB/s                the floor of a read on this machine: no validated read can beat its parser
      fold with a reducer that does nothing         13541.4 k ev/s              the floor of a fold on this machine
    memory of a finished 110-call ToT Outcome          93.8 KiB                 253 B/event over 380 events; target <= 100 KiB
    250 runs, outcomes dropped (RSS growth)             4.0 KiB/run             one FakeLLMClient keeps 1474 requests (keep=1000)
    1,000 ToT runs, outcomes kept (RSS growth)         88.1 MiB                 target < 100 MiB

(The dropped-outcomes row moves between 0 and 4 KiB a run from one run of this script to the next: tracemalloc
finds 45 bytes a run kept after warm-up, so the rest is the allocator's, not a leak.)

Then models got straight-line trusted builders (trusted_builder), the scripted client built a str reply's response
once, Log.read kept what it read packed, and TreeOfThoughts built each request once (main at 19928ea). Measured on a
faster machine (2 cores, idle), this script run four times, alternating the commit before (a5a045a) and this one, so
both see the same machine; each pair below is before -> after, from the second round (the first agrees within 10%,
but for the file row: 135 -> 99):

                                                  before     after   unit      ratio before -> after
    floor: bare asyncio beam                         5.5       5.2   us/call
    engine alone: the beam over the Engine          51.6      43.3   us/call   9.4x -> 8.3x   (target <= 3x)
    TreeOfThoughts, log in memory                   73.5      62.7   us/call  13.4x -> 12.0x  (target <= 4x)
    TreeOfThoughts, log to a file (flush)          111.4     102.0   us/call  20.3x -> 19.6x
    critical path, 10 ms model: wall time           72.3      71.1   ms        1.2x -> 1.2x   (target <= 1.1; run CPU 12 -> 11 ms)
    replay of a recorded run                        67.3      61.2   us/call   1.0x -> 1.0x   (target >= 5x)
    fold of a 30,002-event log                     900.2     955.5   k ev/s                   (target >= 1,000k)
    read the JSON Lines log (validated, 4.5 MB)     27.1      38.9   MB/s      parser floor 76-79 MB/s (target >= 100)
    memory of a finished 110-call ToT Outcome       94.3      94.2   KiB                      (target <= 100)
    1,000 ToT runs, outcomes kept (RSS growth)      75.0      73.9   MiB                      (target < 100)

Then the fold looked each kind up once and put answers straight into Results' columns, and Log.read parsed a
whole file in one msgspec pass, its payloads checked and kept as text (main at 93866e6). Measured by running this
script twice each, alternating the commit before (2c832b8) and this one, on a noisy 2-core VM: the floor moved from
5.6 to 9.0 us between runs, so the per-call rows below are noise, not change (neither commit touches a live call's
path beyond the fold). The fold and read rows are medians of five more alternating runs of fold_and_read alone:

                                                  before           after            unit
    floor: bare asyncio beam                      5.8, 9.0         7.7, 5.6         us/call
    engine alone: the beam over the Engine        7.2x, 6.7x       6.3x, 8.1x       (target <= 3x)
    TreeOfThoughts, log in memory                 11.0x, 7.8x      9.0x, 13.2x      (target <= 4x)
    critical path, 10 ms model: wall time         1.2x, 1.2x       1.3x, 1.2x       (target <= 1.1)
    replay of a recorded run                      1.0x, 1.0x       1.1x, 1.2x       (target >= 5x)
    fold of a 30,002-event log                    873              921              k ev/s, median of 5 (594-1063 from run to run)
    read the JSON Lines log (validated, 4.5 MB)   35.5             125.2            MB/s, median of 5 (target >= 100)
      orjson.loads of each line, nothing checked  55-73            55-73            MB/s
      msgspec's one pass alone                    -                192-265          MB/s
      read, then fold: a file to its state        151 (23 MB/s)    274 (41 MB/s)    k ev/s, median of 5
    memory of a finished 110-call ToT Outcome     92.7, 93.8       94.2, 94.1       KiB (target <= 100)
    1,000 ToT runs, outcomes kept (RSS growth)    73.0, 75.4       83.7, 84.0       MiB (target < 100)

The RSS row depends on the heap the earlier rows leave behind: run alone (memory() after nothing else) both commits
grow 89.4 MiB. A fold of llm.result events costs about 1.9 us each, three times a request's and eight times a domain
event's: that row is most of what is left between the fold and 1M events/s.

Where the rest goes, measured beside this script (diagnostics, not part of it): with a client that hands back one
prebuilt response the engine beam costs 29 us a call, so the scripted client's work is about 13 us of the 43; the
garbage collector takes about 11 us a call (gc disabled: 36 us), most of it full collections walking the process's
heap after each run's survivors, which are mostly the requests FakeLLMClient keeps (keep=0: 43.5 -> 39 us). Replay
runs the algorithm again and logs every call again (request, answer marked replayed), skipping only the client, so
with an instant scripted model it cannot be much cheaper than live; against a real model it skips the whole wait.

Then (main at this round's end) the per-call and replay rows took their samples in turn and print the median
of the sample-by-sample ratios, and the critical path got a row for the bare asyncio beam under the same 10 ms
model: on this VM it takes 1.065-1.075x by itself (waking up six times costs about 3 ms of CPU here), which
leaves the engine about 2 ms of CPU for the 1.1x target. Timings on this VM move by 20% between runs, so the
code changes of this round were measured by instructions executed (valgrind --tool=callgrind, the difference
between 10 and 30 runs, PYTHONHASHSEED=0), which repeat exactly:

                                                  before (87f43dd)   after      unit
    engine alone: the beam over the Engine        326,275            306,416    instructions/call (-6.1%)
    TreeOfThoughts, log in memory                 491,875            468,092    instructions/call (-4.8%)
    floor: bare asyncio beam                       53,450                       instructions/call
    fold, per event (30,002-event log)              7,076              6,367    instructions/event (-10%)
      of it, an llm.result                         13,177             11,056
    fold, timed (alternating runs)                945-1,019k       1,047-1,153k events/s

The changes: the fold puts an answer without a *args call; the offsets columns are array("Q") (an append to
"q" goes through the argument parser: 72 ns, against 36); events and trusted models set pydantic's three slots
through their descriptors instead of object.__setattr__ (an Event: 500 -> 380 ns); with_call_ids checks a reply
without a generator, and the scripted client skips inspect.isawaitable for a str (212 ns). In time these are
inside this machine's noise for the per-call rows (engine 7.1-7.3x -> 7.0-7.4x, ToT 10.7-10.8x -> 10.3-10.5x).

Then the question turned from "what is left to cut" to "how low can a logged call go", and the second row was
added: `least_model` makes the floor's calls with nothing but what the targets leave no engine to skip, the
public types built trusted (an LLMRequest and its Message; an LLMResponse, its Choice, Message and Usage), each
logged in its log form and folded by the RunReducer, in one straight-line coroutine: no handler, no task per
call, no budget, no replay index, no dedupe. Main at this round's end, one run of this script (the floor at
7.8 us; this VM runs about 40% slower today than in the tables above):

    floor: bare asyncio beam                            7.8 us/call      1.0x
      least a logged call costs (see least_model)      39.6 us/call      5.1x   (samples 4.9-6.7x)
    engine alone: the beam over the Engine             63.5 us/call      8.2x   target <= 3x
    TreeOfThoughts, log in memory                      96.0 us/call     12.4x   target <= 4x
    critical path, 10 ms model: wall time              74.9 ms           1.25x  target <= 1.1 (bare asyncio: 1.05x)
    replay of a recorded run                           90.3 us/call      1.0x   target >= 5x

With the collector off the bound is the same within noise (4.9x), so it is the objects and the log, not the
collector. Timed alone (timeit), its pieces are: the request built 2.5 us and written in log form 1.9 us, its
event appended and folded 3.8 us; the response built 3.4 us, in log form 2.4 us, appended and folded 5.8 us.
So with these types and the log always on, a call cannot cost less than about 5x the floor here, and the
engine's own machinery (keys and dedupe, budget, a task per call, the handler and the scripted client) costs
the other 3x; the 3x and 4x targets sit below the bound itself. The critical path follows: 110 calls at the
bound's 40 us are 4.4 ms of CPU on the path, which with the loop's own 1.05x puts even the bound near 1.12x.
Replay cannot reach 5x while it reruns the algorithm: with the client's cost gone, what is left is the
algorithm's own work and the engine's per-call bookkeeping, and the algorithm alone is about a third of a
live ToT call. Tried this round and dropped: sending each call of a gather as soon as it is admitted and
making only the logging of its answer wait for the loop to turn (so answers come back spread out); the
critical path stayed where it was (median of 15 runs, three alternating pairs: 73.5/74.0/73.9 ms against
73.2/72.6/73.8), because the request side of a call, which is serial before the last call goes out, is
the larger part, not the answer side.

Then (main at e565705, issue 30's last criterion) the question was where the critical path's time goes, measured
three ways on this VM (2 AMD EPYC vCPUs; no hardware counters, so CPU time and callgrind's instruction counts):

- Wall time is the ideal plus the run's CPU. Fifteen runs of each, in turn: ToT 76.4-85.9 ms (one outlier at 102.5)
  with 15.8-21.4 ms of CPU, and ToT's wall time less the 60 ms ideal less its CPU is 0.6-0.8 ms in 12 of the 15;
  bare asyncio 64.4-69.8 ms with 3.8-5.2 ms of CPU. The ratio, run by run: 1.13-1.23, median 1.20. With a
  uniform 10 ms model a wave's requests leave together and its answers come back together, so nothing the run
  does overlaps a wait: every instruction is on the path.
- A run that waits costs more CPU than the same run back to back. Medians of three rounds, in CPU ms a run:

                                     instant    sleep(0)   1 ms model   3 ms model   10 ms model
      TreeOfThoughts over the engine   6.5-9.9    6.7-7.6    11.5-13.6    15.3-16.9    14.3-16.2
      bare asyncio beam                0.6-1.1    0.7-0.8     2.2-3.0      2.7-3.7      4.3-4.4

  Six times a run the process sleeps in epoll while the model "works", and comes back to cold caches: ToT's
  larger working set pays about 7 ms for it against bare asyncio's 3 ms. Keeping the core busy for 2 ms after
  the first answer of each wave (a spin in the model) took 0.7-2.0 ms off it, no more: not the clock ramping
  up after a sleep, but the caches. Hot, ToT's 7 ms would put it at
  about 67 ms, 1.03x of bare; cold, as measured, 1.20x. 1.1x of bare needs at most about 11.5 ms of CPU under
  waits: 30-40% less CPU per call.
- Instructions per call (callgrind, the difference between 30 and 10 runs, PYTHONHASHSEED=0, exact): floor 53,307;
  least a logged call costs 225,685; engine alone 305,412; ToT 468,135. A ToT call is the logged-call bound
  (48%), the engine's keys, tasks, budget path, handler and scripted client (17%), and ToT's own prompts,
  parsing and its 1.5 domain events a call, each logged and folded (35%). An engine with no machinery at all
  beyond logging would save 17%, short of the 30-40% the target needs here.

Tried and dropped:
- Sending each request of a gather as soon as it is logged whenever no budget needs the level admitted whole (the
  `sleep(0)` only under a token, cost or calls budget): 468,127 -> 453,841 instructions a call (-3%), wall time
  the same (77.1-79.5 ms against 77.7-80.2), and it gives up a documented guarantee (a gather is admitted whole
  before any answer), which test_a_run_that_died_resumes_from_its_log checks.
- An event loop on select() instead of epoll (microsecond timeouts, where epoll rounds up to the millisecond):
  72.0-75.6 ms, inside the epoll loop's spread (71.5-73.3). Not the timers.
- The garbage collector off, or frozen (with the first change in place): 76.9-77.5 and 74.8-75.1 ms against 72.9-74.6
  with it on. Not the collector.
"""
import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from reasoning_kit.algos import TreeOfThoughts
from reasoning_kit.core.events import Log, _loads, fold  # _loads: the per-line reader's JSON parser (orjson, or json without it)
from reasoning_kit.core import events as _events
_lines_of = getattr(_events, "_lines_of", None)  # the one-pass parse Log.read makes first (msgspec), None without msgspec
from reasoning_kit.models import Choice, FakeLLMClient, LLMHandler, LLMRequest, LLMResponse, Message, Usage, log_form
from reasoning_kit.core._trusted import trusted_builder
from reasoning_kit.engine import Algorithm, Engine, RunReducer

DEPTH, WIDTH, BRANCHING = 3, 5, 5
_request_t, _message_t, _choice_t, _usage_t, _response_t = map(trusted_builder, (LLMRequest, Message, Choice, Usage, LLMResponse))
CALLS = BRANCHING * 2 + (DEPTH - 1) * WIDTH * BRANCHING * 2  # 110
TASK = {"task": "Make 24 from 4 9 10 13."}


def score_of(key: str) -> int: return sum(map(ord, key)) % 10  # a deterministic score per node


def script(request, key):
    "The instant model: a distinct step per proposal key, a score for each score key."
    return str(score_of(key)) if key.endswith("/score") else f"step {key}"


# --- the floor: the same beam, bare asyncio -------------------------------------------------------------
async def floor_model(prompt: str, key: str) -> str: return script(None, key)


async def floor_beam(model=floor_model) -> list:
    beam = [("n", [])]
    for level in range(1, DEPTH + 1):
        jobs = [(f"{p}.{i}", path) for p, path in beam for i in range(1, BRANCHING + 1)]
        steps = await asyncio.gather(*[model(f"{TASK['task']}\nSteps: {path}\nWrite the next step.", f"tot/{k}/propose")
                                       for k, path in jobs])
        cands = [(k, [*path, s]) for (k, path), s in zip(jobs, steps)]
        scores = await asyncio.gather(*[model(f"{TASK['task']}\nSteps: {path}\nHow promising?", f"tot/{k}/score")
                                        for k, path in cands])
        ranked = sorted(zip(cands, map(float, scores)), key=lambda x: -x[1])
        beam = [c for c, _ in ranked[:WIDTH]]
    return beam


# --- the engine alone: the same beam over the Engine ----------------------------------------------------
class Beam(Algorithm):
    "The floor's beam over the Engine: keyed model calls, a gather per level, one event per level."
    name = "bench_beam"

    def initial(self): return {"beam": []}
    def apply(self, s, e):
        if e.kind == "beam.selected": s["beam"] = e.data["beam"]

    async def run(self, ctx):
        beam = [("n", [])]
        for level in range(1, DEPTH + 1):
            jobs = [(f"{p}.{i}", path) for p, path in beam for i in range(1, BRANCHING + 1)]
            steps = await ctx.gather(*[ctx.llm(f"{TASK['task']}\nSteps: {path}\nWrite the next step.", key=f"tot/{k}/propose")
                                       for k, path in jobs])
            cands = [(k, [*path, s.text]) for (k, path), s in zip(jobs, steps)]
            scores = await ctx.gather(*[ctx.llm(f"{TASK['task']}\nSteps: {path}\nHow promising?", key=f"tot/{k}/score")
                                        for k, path in cands])
            ranked = sorted(zip(cands, (float(r.text) for r in scores)), key=lambda x: -x[1])
            beam = [c for c, _ in ranked[:WIDTH]]
            ctx.emit("beam.selected", level=level, beam=[k for k, _ in beam])

    def result(self, s): return {"answer": s["beam"][0] if s["beam"] else None}


# --- the least a logged call can cost: the beam's calls, made of the public types, logged and folded ---------
def least_model(reducer_for=lambda: RunReducer(Beam())):
    """A model for `floor_beam` that does, per call, only what no engine can skip with these types and the log
    on: the request built (trusted, as the engine builds it), logged, the response built, logged, both folded.
    No handler, no task per call, no budget, no replay index, no dedupe: a bound from below, not an engine."""
    log, reducer = Log(), reducer_for()
    state = reducer.initial(); log.subscribe(lambda e: reducer.apply(state, e))

    async def call(prompt: str, key: str) -> str:
        request = _request_t(messages=[_message_t(role="user", content=prompt)])
        log.append("llm.request", {"request": log_form(request)}, key=key)
        out = script(request, key)
        response = _response_t(choices=[_choice_t(message=_message_t(role="assistant", content=out))], model="fake",
                               usage=_usage_t(prompt_tokens=len(prompt.split()), completion_tokens=len(out.split())))
        log.append("llm.result", {"result": log_form(response)}, key=key)
        return response.text
    return call


def tot() -> TreeOfThoughts: return TreeOfThoughts(depth=DEPTH, width=WIDTH, branching=BRANCHING, stop_score=None)


async def engine_run(alg, model=script, client=None, **kw):
    async with Engine() as engine:
        LLMHandler(client or FakeLLMClient(model)).attach(engine)
        return await engine.run(alg, TASK, **kw)


# --- measuring --------------------------------------------------------------------------------------------
LOOP = asyncio.new_event_loop()


def cpu_per_call(make, runs: int, samples: int = 5) -> float:
    "Median over `samples` of the CPU time per model call of `runs` runs of `make()`."
    return statistics.median(paired([make], runs, samples)[0])


def paired(makes: list, runs: int, samples: int = 5) -> list[list[float]]:
    """CPU time per model call of `runs` runs of each of `makes`, `samples` times over, taken in turn within
    each sample: a ratio of two of them is read sample by sample, so a machine that slows down between
    samples slows both sides of it."""
    async def many(make):
        for _ in range(runs): await make()
    out = [[] for _ in makes]
    for _ in range(samples):
        for make, ts in zip(makes, out):
            t = time.process_time(); LOOP.run_until_complete(many(make)); ts.append((time.process_time() - t) / (runs * CALLS))
    return out


def ratio(xs: list[float], base: list[float]) -> tuple[float, float, float]:
    "The median, lowest and highest of the sample-by-sample ratios xs[i] / base[i]."
    r = [x / b for x, b in zip(xs, base)]
    return statistics.median(r), min(r), max(r)


def row(label, value, unit, ratio=None, target=""):
    r = f"{ratio:6.1f}x" if ratio is not None else "       "
    print(f"{label:44} {value:10.1f} {unit:9} {r}   {target}")


def overhead(runs: int):
    check = LOOP.run_until_complete(engine_run(tot()))
    assert check.calls == CALLS and check.status.value == "ok", (check.calls, check.status)
    beam = LOOP.run_until_complete(engine_run(Beam()))
    assert beam.calls == CALLS and beam.value["answer"] == LOOP.run_until_complete(floor_beam())[0][0]
    assert LOOP.run_until_complete(floor_beam(least_model()))[0][0] == beam.value["answer"]
    floor, least, eng, full = paired([floor_beam, lambda: floor_beam(least_model()), lambda: engine_run(Beam()),
                                      lambda: engine_run(tot())], runs)
    with tempfile.TemporaryDirectory() as d:
        n = iter(range(10**9))
        filed = cpu_per_call(lambda: engine_run(tot(), log=Path(d) / f"{next(n)}.jsonl"), runs)
    f = statistics.median(floor)
    row("floor: bare asyncio beam", f * 1e6, "us/call", 1.0)
    r, lo, hi = ratio(least, floor)
    row("  least a logged call costs (see least_model)", statistics.median(least) * 1e6, "us/call", r,
        f"the public types built, logged twice, folded: a bound from below (samples {lo:.1f}-{hi:.1f}x)")
    for label, xs, target in (("engine alone: the beam over the Engine", eng, "target <= 3x"),
                              ("TreeOfThoughts, log in memory", full, "target <= 4x")):
        r, lo, hi = ratio(xs, floor)
        row(label, statistics.median(xs) * 1e6, "us/call", r, f"{target} (samples {lo:.1f}-{hi:.1f}x)")
    row("TreeOfThoughts, log to a file (flush)", filed * 1e6, "us/call", filed / f)
    return check


def critical_path(latency: float = 0.01):
    async def slow(request, key):
        await asyncio.sleep(latency); return script(request, key)

    async def slow_floor(prompt, key):
        await asyncio.sleep(latency); return script(None, key)

    def timed(make):
        walls, cpus = [], []
        for _ in range(3):
            t, c = time.perf_counter(), time.process_time(); LOOP.run_until_complete(make())
            walls.append(time.perf_counter() - t); cpus.append(time.process_time() - c)
        return statistics.median(walls), statistics.median(cpus)
    wall, cpu = timed(lambda: engine_run(tot(), slow))
    row(f"critical path, {latency * 1e3:.0f} ms model: wall time", wall * 1e3, "ms", wall / (2 * DEPTH * latency),
        f"{wall / (2 * DEPTH * latency):.3f} x (2 x depth) latencies; target <= 1.1 (the run's CPU: {cpu * 1e3:.0f} ms)")
    wall, cpu = timed(lambda: floor_beam(slow_floor))
    row("  the same beam, bare asyncio", wall * 1e3, "ms", wall / (2 * DEPTH * latency),
        f"{wall / (2 * DEPTH * latency):.3f}: the floor of this row on this machine (its CPU: {cpu * 1e3:.1f} ms, mostly waking up)")


def critical_path_parts(latency: float = 0.01, runs: int = 5):
    """Where the critical path's time goes, level by level: for each of the 2 x depth waves of calls, the time from
    the previous wave's last answer to this wave's first request (the algorithm's decision and every request of the
    wave built, logged and admitted before the first is sent), the spread of its sends, and how late its last answer
    comes back after the latency (the answers before it processed first). Medians over `runs` runs, summed over waves."""
    def parts(run):
        starts, ends = [], []
        async def slow(request, key):
            starts.append((time.perf_counter(), key)); await asyncio.sleep(latency); ends.append(time.perf_counter())
            return script(request, key)
        t0 = time.perf_counter(); LOOP.run_until_complete(run(slow)); t1 = time.perf_counter()
        waves = {}
        for (t, k), e in zip(starts, ends): waves.setdefault((k.count("."), k.endswith("/score")), []).append((t, e))
        gap = spread = late = 0.0; prev = t0
        for w in sorted(waves):
            first, last, done = min(t for t, _ in waves[w]), max(t for t, _ in waves[w]), max(e for _, e in waves[w])
            gap += first - prev; spread += last - first; late += done - last - latency; prev = done
        return gap, spread, late, t1 - prev
    for label, run in (("ToT over the engine", lambda m: engine_run(tot(), m)),
                       ("bare asyncio", lambda m: floor_beam(lambda p, k: m(None, k)))):
        got = [parts(run) for _ in range(runs)]
        gap, spread, late, tail = (statistics.median(x) * 1e3 for x in zip(*got))
        row(f"  {label}: answer -> next request", gap, "ms", None,
            f"summed over {2 * DEPTH} waves; sends spread {spread:.2f} ms, last answer {late:.2f} ms late, {tail:.2f} ms after the last")


def replay(live, runs: int):
    again = LOOP.run_until_complete(engine_run(tot(), replay=live.log))
    assert again.value == live.value and again.sent == {}, again.sent
    t_live, t_rep = paired([lambda: engine_run(tot()), lambda: engine_run(tot(), replay=live.log)], runs)
    r, lo, hi = ratio(t_live, t_rep)
    row("replay of a recorded run", statistics.median(t_rep) * 1e6, "us/call", r,
        f"live / replay; target >= 5x (samples {lo:.1f}-{hi:.1f}x)")


def memory(kept: int):
    LOOP.run_until_complete(engine_run(tot()))  # warm: caches, interned kinds
    gc.collect(); tracemalloc.start(); before = tracemalloc.get_traced_memory()[0]
    out = LOOP.run_until_complete(engine_run(tot()))
    gc.collect(); size = tracemalloc.get_traced_memory()[0] - before; tracemalloc.stop()
    row("memory of a finished 110-call ToT Outcome", size / 1024, "KiB", None,
        f"{size / len(out.log):.0f} B/event over {len(out.log)} events; target <= 100 KiB")
    del out

    client = FakeLLMClient(script)  # one client for every run, as a notebook keeps one

    def rss():
        gc.collect()
        with open("/proc/self/status") as f: return next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) / 1024
    base = rss()
    dropped = max(kept // 4, 10)
    for _ in range(dropped): LOOP.run_until_complete(engine_run(tot(), client=client))
    grown = rss() - base
    row(f"{dropped:,} runs, outcomes dropped (RSS growth)", grown * 1024 / dropped, "KiB/run", None,
        f"one FakeLLMClient keeps {len(client.requests)} requests (keep={client.keep})")
    base = rss()
    outs = [LOOP.run_until_complete(engine_run(tot(), client=client)) for _ in range(kept)]
    grown = rss() - base
    row(f"{kept:,} ToT runs, outcomes kept (RSS growth)", grown, "MiB", None, "target < 100 MiB")
    del outs


class Sequential(Algorithm):
    "N model calls one after another, each recorded as a domain event (the fold and read workload)."
    name = "bench_overhead_sequential"
    def __init__(self, n: int = 10_000): self.n = n
    def initial(self): return {"answers": 0}
    def apply(self, s, e):
        if e.kind == "bench.answered": s["answers"] += 1
    async def run(self, ctx):
        for i in range(self.n):
            r = await ctx.llm(f"question {i}: what is {i} + {i}?", key=f"b/{i}")
            ctx.emit("bench.answered", text=r.text)
    def result(self, s): return {"answer": s["answers"]}


class Noop:
    def initial(self): return None
    def apply(self, s, e): pass


def fold_and_read(n: int = 10_000):
    out = LOOP.run_until_complete(engine_run(Sequential(n), model=lambda r: "ok"))
    events = list(out.log)
    def med(fn, k=5):
        ts = []
        for _ in range(k): t = time.process_time(); fn(); ts.append(time.process_time() - t)
        return statistics.median(ts)
    assert fold(events, RunReducer(Sequential(n))).algo == out.state.algo
    t = med(lambda: fold(events, RunReducer(Sequential(n))))
    row(f"fold of a {len(events):,}-event log", len(events) / t / 1e3, "k ev/s", None, "target >= 1,000k events/s")
    t_kept = med(lambda: fold(out.log, RunReducer(Sequential(n))))
    row("  the same, folded from the live log itself", len(events) / t_kept / 1e3, "k ev/s", None,
        "its events are kept packed, so each is built as the fold reads it")
    with tempfile.TemporaryDirectory() as d:
        p = out.log.write(Path(d) / "run.jsonl")
        mb = p.stat().st_size / 1e6
        assert Log.read(p).events == out.log.events
        t = med(lambda: Log.read(p), 3)
        t_json = med(lambda: [json.loads(line) for line in p.read_text(encoding="utf-8").split("\n")[1:-1]], 3)
        row(f"read the JSON Lines log (validated, {mb:.1f} MB)", mb / t, "MB/s", t_json / t,
            "vs json.loads of each line; target >= 100 MB/s")
        def per_line():  # the per-line reader's parser, alone, with the collector off as Log.read has it
            gc.disable()
            try: return list(map(_loads, p.read_text(encoding="utf-8").split("\n")[1:-1]))
            finally: gc.enable()
        row(f"  {_loads.__module__}.loads of each line, nothing checked", mb / med(per_line, 3), "MB/s", None,
            "the per-line reader's parser alone (Log.read's fallback)")
        if _lines_of is not None:
            def one_pass():  # the one-pass parse Log.read makes first, alone: msgspec, the payloads kept as text
                gc.disable()
                try: raw = p.read_bytes(); cut = raw.index(b"\n") + 1; return _lines_of(b"[" + raw[cut:-1].replace(b"\n", b",") + b"]")
                finally: gc.enable()
            row("  msgspec's one pass alone, payloads as text", mb / med(one_pass, 3), "MB/s", None,
                "the floor of Log.read on this machine: no validated read can beat its parser")
        t_back = med(lambda: fold(Log.read(p), RunReducer(Sequential(n))), 3)
        row("  read, then fold: a file to its state", len(events) / t_back / 1e3, "k ev/s", None,
            f"{mb / t_back:.1f} MB/s: a payload read from a file is built when the fold reads it")
    t_noop = med(lambda: fold(events, Noop()))
    row("  fold with a reducer that does nothing", len(events) / t_noop / 1e3, "k ev/s", None, "the floor of a fold on this machine")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20, help="runs per timing sample")
    ap.add_argument("--kept", type=int, default=1000, help="runs for the memory figures")
    ap.add_argument("--quick", action="store_true", help="fewer runs, for a smoke test")
    a = ap.parse_args()
    if a.quick: a.runs, a.kept = 2, 20
    print(f"{'':44} {'value':>10} {'unit':9} {'ratio':>7}   target (issue 11)")
    live = overhead(a.runs)
    critical_path()
    critical_path_parts()
    replay(live, a.runs)
    fold_and_read(10_000 if not a.quick else 1000)
    memory(a.kept)


if __name__ == "__main__":
    main()
