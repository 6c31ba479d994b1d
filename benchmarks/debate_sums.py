"""Are Debate's and SelfConsistency's final answers to one-digit sums numbers on a real small model? (issue 43)

    python benchmarks/debate_sums.py live  OUT_DIR [--sums 30] [--threads 1]   # run on SmolLM2, keep every log
    python benchmarks/debate_sums.py replay OUT_DIR                            # re-read the kept logs with this code

30 sums `a + b` (a, b in 1..9, fixed by a seeded random draw) phrased "What is a + b? Reply with the number.", Debate
with its default settings (3 agents, 1 round, a judge) and SelfConsistency(samples=5) on SmolLM2-135M-Instruct
(reasoning_kit.models.local.serve, 4 slots), every reply capped at 96 tokens by the budget. `live` writes each run's
log to OUT_DIR; `replay` runs the same algorithms against those logs with a model that refuses every call, so the
replies are the recorded ones and only the reading of them (extraction, the kind, the judge) is this code's. Prints,
per algorithm: final answers that are numbers, honest abstentions (no answer), other (sentences), and correct sums.

Measured (replies branch, shared 2-core VM, load average 6 to 10 from other work; 1 thread; live runs, so each
side's replies are its own draw with the same seeds):

                                  numbers  abstained  other  right  judge ignored  seconds
    Debate()  before (fccb48e)       22/30       0       8     11        -           534
    Debate()  after  (69f75b1)       29/30       1       0     17       11           599
    SelfConsistency(5) before        29/30       0       1     24        -           140
    SelfConsistency(5) after         29/30       0       1     24        -           137

Debate: 73% of final answers were numbers, 100% are now numbers or an abstention; its judge named an answer no
debater gave in 11 of 30 runs, now ignored (the vote decided). SelfConsistency: the same 30 answers (its one
sentence, "two and seven are two different numbers", comes from a run whose five samples were all words).
`replay` of the after logs with the final code of the branch gives the same table and asks the model nothing.
"""
import asyncio, json, random, re, sys, time
from pathlib import Path

from reasoning_kit.algos.debate import Debate
from reasoning_kit.algos.self_consistency import SelfConsistency
from reasoning_kit.core.events import Log
from reasoning_kit.engine import Budget, Engine
from reasoning_kit.models import FakeLLMClient, LLMHandler

rng = random.Random(43)
SUMS = [(rng.randint(1, 9), rng.randint(1, 9)) for _ in range(30)]
ALGOS = {"debate": Debate, "self_consistency": lambda: SelfConsistency(samples=5)}
BUDGET = Budget(call_tokens=96)

def task(a, b): return {"task": f"What is {a} + {b}? Reply with the number."}

async def go(mode, out, n, threads):
    out = Path(out); out.mkdir(parents=True, exist_ok=True)
    server = None
    if mode == "live":
        from reasoning_kit.models.local import serve
        server = serve("smollm2", slots=4, threads=threads)
        client = LLMHandler(server.model)
    else:
        def refuse(request): raise AssertionError("replay asked the model")
        client = LLMHandler(FakeLLMClient(refuse))
    try:
        rows = {}
        async with Engine() as engine:
            client.attach(engine)
            for name, make in ALGOS.items():
                t0 = time.time()
                async def one(k, a, b):
                    p = out / f"{name}_{k:02d}.jsonl"
                    kw = {"replay": Log.read(p)} if mode == "replay" else {}
                    o = await engine.run(make(), task(a, b), budget=BUDGET, seed=k, **kw)
                    if mode == "live": o.log.write(p)
                    return o
                outs = await asyncio.gather(*(one(k, a, b) for k, (a, b) in enumerate(SUMS[:n])))
                answers = [o.value.get("answer") if isinstance(o.value, dict) else None for o in outs]
                num = sum(a is not None and re.fullmatch(r"-?\d+(\.\d+)?", a) is not None for a in answers)
                none = sum(a is None for a in answers)
                right = sum(a == str(x + y) for a, (x, y) in zip(answers, SUMS))
                extra = {}
                if name == "debate":
                    extra["judge_ignored"] = sum(any(e.kind == "debate.judge_ignored" for e in o.log.events) for o in outs)
                rows[name] = dict(runs=n, numbers=num, abstained=none, other=n - num - none, right=right,
                                  seconds=round(time.time() - t0), answers=answers, **extra)
                print(name, {k: v for k, v in rows[name].items() if k != "answers"}, flush=True)
                print("   ", answers, flush=True)
        (out / f"summary_{mode}.json").write_text(json.dumps(rows, indent=1))
    finally:
        if mode == "live": await client.aclose(); server.close()

if __name__ == "__main__":
    args = sys.argv[1:]
    mode, out = args[0], args[1]
    n = int(args[args.index("--sums") + 1]) if "--sums" in args else 30
    threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 1
    asyncio.run(go(mode, out, n, threads))
