"""Cancelling a run, with real asyncio cancellation at random points: run.finished is the last event, in
memory and on disk; no task outlives the run; asyncio has nothing to warn about; everything logged stays."""
import asyncio
import gc
import json
import re
import warnings

import pytest
from hypothesis import example, given, settings, strategies as st

from reasoning_kit.algos.debate import Debate
from reasoning_kit.algos.self_consistency import SelfConsistency
from reasoning_kit.algos.tot import TreeOfThoughts
from reasoning_kit.core.events import Log
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Engine, Status, fold_run

from _support import run, system_of, user_of

SOME = settings(max_examples=40, deadline=None)


def debate_model(request):
    if "judge" in system_of(request).lower(): return "Answer: 12"
    if "Other agents" in user_of(request) and "[C]" in system_of(request): raise ConnectionError("C's model is down")
    return f"Answer: {10 + len(user_of(request)) % 3}"


def tot_model(request):
    u = user_of(request)
    if request.role == "evaluator":
        if sum(map(ord, u)) % 5 == 0: raise ConnectionError("the evaluator is down")
        return json.dumps({"score": sum(map(ord, u)) % 9})
    return f"FINAL: {sum(map(ord, u)) % 50}" if len(re.findall(r"\n\d+\. ", u)) >= 2 else f"step {sum(map(ord, u)) % 7}"


def sc_model(request):
    if (request.seed or 0) % 4 == 0: raise ConnectionError("sample lost")
    return f"Answer: {(request.seed or 0) % 3 + 11}"


ALGOS = {
    "debate": (lambda: Debate(agents=3, rounds=2, personas=["[A] careful", "[B] fast", "[C] skeptical"]), debate_model),
    "tot": (lambda: TreeOfThoughts(depth=3, width=2, branching=3, stop_score=None), tot_model),
    "sc": (lambda: SelfConsistency(samples=7, mode="separate"), sc_model),
}


def waiting(fn, delays) -> FakeLLMClient:
    "A scripted model whose i-th call waits `delays[i]` loop turns (0: a long wait) before answering."
    count = iter(range(10**9))

    async def model(request):
        d = delays[next(count) % len(delays)]
        if d == 0: await asyncio.sleep(3600)  # a call that only cancellation ends
        for _ in range(d): await asyncio.sleep(0)
        return text(fn(request))

    return FakeLLMClient(model)


async def cancelled_run(name, delays, at, how, path):
    """Run `name`, cancelling it when its `at`-th event is logged (`how`: run.cancel() or the caller's task
    being cancelled); then check that nothing is left behind. Returns the outcome (None if cancelled from outside)."""
    loop, complaints = asyncio.get_running_loop(), []
    loop.set_exception_handler(lambda _, ctx: complaints.append(ctx.get("message")))
    make, fn = ALGOS[name]
    async with Engine() as engine:
        LLMHandler(waiting(fn, delays)).attach(engine)
        seen, runs, fired = [], [], []  # fired: the kind of the event the cancel came at ("wait": the timeout below)

        def on_event(e):
            seen.append(e)
            if len(seen) == at:
                if not fired: fired.append(e.kind)
                (runs[0].cancel() if how == "run.cancel" else caller.cancel())

        async def start_and_wait():  # the caller's task: it starts the run and awaits it
            runs.append(engine.start(make(), {"task": "6 x 2?"}, log=path))
            runs[0].log.subscribe(on_event)
            return await runs[0]
        caller = asyncio.ensure_future(start_and_wait())
        await asyncio.wait([caller], timeout=0.2)  # every call waiting forever before event `at`: cancel it now
        if not caller.done() and len(seen) < at:
            fired.append("wait"); (runs[0].cancel() if how == "run.cancel" else caller.cancel())
        try: out = await caller
        except asyncio.CancelledError:
            assert how == "outside"; out = None
        run = runs[0]
        assert run.done  # the run itself has ended, however it was cancelled
        events = list(run.log)
        for _ in range(50): await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        assert list(run.log) == events and events[-1].kind == "run.finished"  # nothing after the run's last event
        assert [e.kind for e in events].count("run.finished") == 1
        assert {t for t in asyncio.all_tasks() if t is not asyncio.current_task()} == set()  # no task outlives the run
        on_disk = Log.read(path).events
        assert [e.model_dump() for e in on_disk] == [e.model_dump() for e in events]  # the file and memory agree
        state = fold_run(on_disk)
        if out is not None: assert state.status == out.status.value
        elif fired == ["run.finished"]:  # the caller was cancelled by the run's last event: the run had already
            assert state.status != "cancelled"  # ended, as its log says, and the cancel came too late to change that
        else: assert state.status == "cancelled"
    gc.collect(); await asyncio.sleep(0)
    assert complaints == []  # no "Task exception was never retrieved", nothing else either
    return out, state, events


@SOME
@example(name="sc", delays=[1], at=25, how="outside")  # the cancel reaches the caller from run.finished itself
@given(name=st.sampled_from(sorted(ALGOS)), delays=st.lists(st.integers(0, 6), min_size=1, max_size=12),
       at=st.integers(1, 40), how=st.sampled_from(["run.cancel", "outside"]))
def test_cancel_at_any_point_leaves_nothing_behind(tmp_path_factory, name, delays, at, how):
    path = tmp_path_factory.mktemp("cancel") / "run.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, state, events = asyncio.run(cancelled_run(name, delays, at, how, path))
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, (RuntimeWarning, ResourceWarning))], [str(w.message) for w in caught]
    if at < len(events):  # the cancel came before the run ended: it ended cancelled, keeping what was logged
        assert state.status == "cancelled" and state.pending.keys() <= {e.key for e in events if e.kind == "llm.request"}
    if how == "run.cancel": assert out.status.value == state.status and out.log.events == events


def test_cancelling_a_debate_while_its_calls_wait():
    "The issue's case: five results were appended after run.finished and asyncio warned."
    async def go(path):
        loop, complaints = asyncio.get_running_loop(), []
        loop.set_exception_handler(lambda _, ctx: complaints.append(ctx.get("message")))
        release = asyncio.Event()

        async def slow(request):
            await release.wait()
            raise ConnectionError("down")  # each one fails, after the cancel: nobody must be left to read it

        async with Engine() as engine:
            LLMHandler(FakeLLMClient(slow)).attach(engine)
            run = engine.start(Debate(agents=5, rounds=1), {"task": "6 x 2?"}, log=path)
            for _ in range(5): await asyncio.sleep(0)
            run.cancel(); release.set()
            out = await run
            n = len(out.log)
            await asyncio.sleep(0.02); gc.collect(); await asyncio.sleep(0)
        return out, n, complaints
    import tempfile, pathlib
    path = pathlib.Path(tempfile.mkdtemp()) / "debate.jsonl"
    out, n, complaints = asyncio.run(go(path))
    kinds = [e.kind for e in out.log]
    assert out.status == Status.CANCELLED and kinds[-1] == "run.finished" and len(out.log) == n
    assert kinds.count("llm.request") == 5 and "llm.result" not in kinds and "llm.error" not in kinds
    assert len(Log.read(path)) == n and complaints == []


def test_cancel_before_the_run_starts_runs_nothing():
    async def go():
        async with Engine() as engine:
            model = FakeLLMClient(lambda r: "Answer: 1")
            LLMHandler(model).attach(engine)
            run = engine.start(SelfConsistency(samples=3), {"task": "x"})
            run.cancel()
            return await run, model
    out, model = asyncio.run(go())
    assert out.status == Status.CANCELLED and model.calls == 0
    assert [e.kind for e in out.log] == ["run.started", "run.finished"]


def test_cancel_after_the_end_changes_nothing():
    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lambda r: "Answer: 1")).attach(engine)
            run = engine.start(SelfConsistency(samples=3), {"task": "x"})
            run.log.subscribe(lambda e: run.cancel() if e.kind == "run.finished" else None)
            out = await run
            run.cancel()
            return out, await run
    out, again = asyncio.run(go())
    assert out.status == again.status == Status.OK and out.value["answer"] == "1"


def test_ctrl_c_in_a_script_is_one_traceback_that_names_the_cause(tmp_path):
    "A real SIGINT while run_sync waits on a model: one KeyboardInterrupt, not asyncio's CancelledError chained to it."
    import os, signal, subprocess, sys, textwrap, time
    script = tmp_path / "slow.py"
    script.write_text(textwrap.dedent("""
        import asyncio, sys
        from reasoning_kit import Engine, FakeLLMClient, LLMHandler, SelfConsistency
        async def slow(request):
            print("asked", flush=True); await asyncio.sleep(3600)
        engine = Engine(); LLMHandler(FakeLLMClient(slow)).attach(engine)
        engine.run_sync(SelfConsistency(samples=2, mode="separate"), {"task": "6 + 7?"}, log=sys.argv[1])
    """))
    log = tmp_path / "run.jsonl"
    p = subprocess.Popen([sys.executable, str(script), str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "asked"  # the run is waiting on its model
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0 and err.count("Traceback") == 1 and "CancelledError" not in err, err
    assert err.strip().splitlines()[-1] == "KeyboardInterrupt: the run was interrupted (Ctrl-C); its log ends with run.finished, status cancelled"
    assert Log.read(log).events[-1].data["status"] == "cancelled"


def test_a_run_cancelled_from_outside_shows_as_one_line_in_ipython():
    from reasoning_kit.engine import Interrupted

    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lambda r: asyncio.sleep(3600))).attach(engine)
            task = asyncio.ensure_future(engine.run(SelfConsistency(samples=2, mode="separate"), {"task": "?"}))
            await asyncio.sleep(0.05); task.cancel()
            try: await task
            except asyncio.CancelledError as e: return e
    e = run(go())
    assert isinstance(e, Interrupted) and isinstance(e, asyncio.CancelledError)
    assert e._render_traceback_() == [f"Interrupted: {e}"] and "cancelled from outside" in str(e)
