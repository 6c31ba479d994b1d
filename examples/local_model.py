"""SelfConsistency on a real model the library starts itself: SmolLM2-135M-Instruct, served by llama.cpp's llama-server
on 127.0.0.1. One sample against a vote of five, on single-digit sums. Needs `bash scripts/setup.sh --local` once."""
import asyncio
import random

from reasoning_kit.models import local
from reasoning_kit.algos import SelfConsistency
from reasoning_kit.engine import Engine
from reasoning_kit.models import LLMHandler


async def accuracy(server, samples: int, sums: list[tuple[int, int]]) -> tuple[float, int]:
    "Share of sums answered right, and the tokens it took."
    right = tokens = 0
    async with Engine() as engine:
        LLMHandler(server.model).attach(engine)
        algorithm = SelfConsistency(samples=samples, temperature=0.7)
        outs = await asyncio.gather(*(engine.run(algorithm, {"task": f"What is {a} + {b}? Reply with the number."}) for a, b in sums))
    for (a, b), out in zip(sums, outs):
        right += str(out.value.get("answer")) == str(a + b)
        tokens += out.state.tokens
    return right / len(sums), tokens


async def main() -> None:
    rng = random.Random(7)
    sums = [(rng.randint(1, 9), rng.randint(1, 9)) for _ in range(20)]
    with local.serve("smollm2", slots=4) as server:
        print("serving", server.model)
        for k in (1, 5):
            acc, tokens = await accuracy(server, k, sums)
            print(f"SelfConsistency k={k}: {acc:.0%} of {len(sums)} sums right, {tokens} tokens")


asyncio.run(main())
