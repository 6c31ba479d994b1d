"""Kill -9 in the middle of a run, then resume in place: the helper tests/test_best_of_n.py and
tests/test_mcts.py share. The child imports `make` and `model` from the test module named."""
import asyncio
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

from reasoning_kit.core.events import Log
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.engine import Engine

CHILD = textwrap.dedent("""
    import asyncio, os, signal, sys
    sys.path.insert(0, {tests!r})
    from {module} import make, model, handlers
    from reasoning_kit.models import FakeLLMClient, LLMHandler
    from reasoning_kit.engine import Engine

    calls = 0
    async def counted(req):
        global calls
        calls += 1
        if calls == {kill_at}: os.kill(os.getpid(), signal.SIGKILL)  # a real kill -9, in the middle of the run
        await asyncio.sleep(0.001 * (calls % 3))
        return model(req)

    async def main():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(counted)).attach(engine)
            for h in handlers(): h.attach(engine)
            await engine.run(make(), {{"task": "6 x 2?"}}, log={log!r}, resume=True)
    asyncio.run(main())
""")


def resume(path, make, model, handlers):
    "Resume the log at `path` in this process; returns (outcome, client)."
    client = FakeLLMClient(model)

    async def go():
        async with Engine() as engine:
            LLMHandler(client).attach(engine)
            for h in handlers(): h.attach(engine)
            return await engine.run(make(), {"task": "6 x 2?"}, log=path, resume=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return asyncio.run(go()), client


def crash_then_resume(path: Path, module: str, kill_at: int, make, model, handlers):
    """Run the module's `make()` on its `model` in a child killed -9 at its `kill_at`-th model call, then resume
    here. Returns (model calls answered, or failed, before the kill: their keys; the outcome; the client)."""
    script = CHILD.format(tests=str(Path(__file__).parent), module=module, log=str(path), kill_at=kill_at)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode in (-9, 0), proc.stderr  # 0: the run needed fewer calls than kill_at
    kept = Log.read(path, repair=True) if path.exists() else Log()
    answered = {e.key for e in kept if e.kind in ("llm.result", "llm.error")}  # a logged failure is served too
    out, client = resume(path, make, model, handlers)
    return answered, out, client
