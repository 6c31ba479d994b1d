"""Shared helpers for the tests: scripted models that finish in a seeded random order, runs on them in an
Engine, request keys, and the frozen v0.1 fixtures (write once, then fold and compare)."""
import asyncio
import dataclasses
import json
import random
import socket
import time
from pathlib import Path

from reasoning_kit.core.events import Log
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.engine import Engine, fold_run

FIXTURES = Path(__file__).parent / "fixtures"


def system_of(request) -> str:
    "The request's system prompt ('' when it has none)."
    return next((m.content or "" for m in request.messages if m.role == "system"), "")


def user_of(request) -> str:
    "The request's last user message ('' when it has none)."
    return next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")


def jittered(fn, seed: int, max_delay: float = 0.002) -> FakeLLMClient:
    """A FakeLLMClient running `fn`, each call sleeping a seeded random time first, so that parallel
    calls complete in an order that changes with `seed`."""
    rng = random.Random(seed)

    async def model(request):
        await asyncio.sleep(rng.random() * max_delay)
        return fn(request)

    return FakeLLMClient(model)


def run(coro):
    "Run a coroutine to the end from a plain test function."
    return asyncio.run(coro)


def run_scripted(algorithm,  # the Algorithm to run
                 model,  # the scripted model: a function of the request, or a FakeLLMClient
                 *,
                 task: str | None = None,  # shorthand for input={"task": task}
                 input: dict | None = None,  # the run's input (task, when given, is added to it)
                 seed: int | None = None,  # completion order: with a seed, each call first sleeps a seeded random time
                 budget=None, replay=None,  # passed to engine.run
                 run_seed: int = 0,  # the run's own seed (engine.run's `seed`)
                 handlers=()):  # more handlers to attach (ValidationHandler, ToolHandler), fresh for this run
    "Run `algorithm` to the end in a fresh Engine on a scripted model; returns (outcome, client)."
    if isinstance(model, FakeLLMClient):
        assert seed is None, "give a function, not a client, to have it answer in a seeded random order"
        client = model
    else:
        client = FakeLLMClient(model) if seed is None else jittered(model, seed)
    inp = dict(input or {}, **({} if task is None else {"task": task}))

    async def go():
        async with Engine() as engine:
            LLMHandler(client).attach(engine)
            for handler in handlers:
                handler.attach(engine)
            return await engine.run(algorithm, inp, budget=budget, replay=replay, seed=run_seed)

    return asyncio.run(go()), client


def request_keys(out, effect: str = "llm") -> list[str]:
    "The keys of the run's `effect` requests, in log order."
    return [e.key for e in out.log if e.kind == f"{effect}.request"]


def jsonable(state):
    "A dataclass state as it reads back from JSON (the form the fixtures store)."
    return json.loads(json.dumps(dataclasses.asdict(state)))


def read_fixture(name: str) -> tuple[Log, dict]:
    "The frozen log tests/fixtures/<name>_v0.1.jsonl and the expectations stored next to it."
    return Log.read(FIXTURES / f"{name}_v0.1.jsonl"), json.loads((FIXTURES / f"{name}_v0.1.expected.json").read_text())


def check_fixture(name: str, algorithm_class, added: dict | None = None):
    """Fold the frozen log `name` (the algorithm found through its run.started) and assert it gives the stored
    status (where stored), state and result; the result is read by `algorithm_class` rebuilt from the log's
    config. `added` names what was added since the log was frozen, with the value the old log must give:
    {"state": {field: value}, "result": {key: value}}; everything stored must still match exactly, and
    nothing else may be new. Returns (folded RunState, expectations) for further checks."""
    log, expected = read_fixture(name)
    added = {"state": {}, "result": {}, **(added or {})}
    state = fold_run(log)
    if "status" in expected:  # older fixtures (reflexion, tool_loop, swarm) store the result as "value" and no status
        assert state.status == expected["status"]
    assert jsonable(state.algo) == {**expected["state"], **jsonable_dict(added["state"])}
    result = expected["result"] if "result" in expected else expected["value"]
    assert algorithm_class.from_config(state.config).result(state.algo) == {**result, **added["result"]}
    return state, expected


def jsonable_dict(d: dict) -> dict:
    return json.loads(json.dumps(d))


def write_fixture(name: str, out) -> None:
    "Freeze the outcome `out` as the fixture `name` (run once by hand; the tests never write fixtures)."
    out.log.write(FIXTURES / f"{name}_v0.1.jsonl")
    (FIXTURES / f"{name}_v0.1.expected.json").write_text(json.dumps(
        {"status": out.status.value, "result": out.value, "state": jsonable(out.state.algo)}, indent=1) + "\n")


def free_port() -> int:
    "A TCP port on 127.0.0.1 that nothing listens on right now."
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


def wait_listening(proc, port: int, log, what: str, seconds: float, poll: float = 0.3) -> None:
    "Wait until `proc` listens on 127.0.0.1:`port`; if it exits first or `seconds` pass, fail with the end of its `log`."
    import pytest
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5): return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0); pytest.fail(f"{what} did not start on 127.0.0.1:{port}:\n{log.read().decode()[-3000:]}", pytrace=False)
            time.sleep(poll)
