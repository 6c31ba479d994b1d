"Shared helpers for the tests: scripted models that finish in a seeded random order."
import asyncio
import random

from reasoning_kit.llm import FakeLLMClient


def jittered(fn, seed: int, max_delay: float = 0.002) -> FakeLLMClient:
    """A FakeLLMClient running `fn`, each call sleeping a seeded random time first, so that parallel
    calls complete in an order that changes with `seed`."""
    rng = random.Random(seed)

    async def model(request):
        await asyncio.sleep(rng.random() * max_delay)
        return fn(request)

    return FakeLLMClient(model)


def run(coro):
    return asyncio.run(coro)
