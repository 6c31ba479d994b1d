"""Issue 32, the engine side of a newcomer's first hour: wrong input gets a clear error where it is given, and
resume=True does not silently add an unrelated run to a file."""
import asyncio
import inspect
import pydoc

import pytest

from reasoning_kit.engine import Budget, Engine
from reasoning_kit.core.events import Log
from reasoning_kit.models import FakeLLMClient, LLMHandler

from test_engine import Levels, answer


def run(alg, inp=None, **kw):
    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(answer)).attach(engine)
            return await engine.run(alg, inp or {}, **kw)
    return asyncio.run(go())


def test_a_budget_that_is_not_a_budget_is_named():
    with pytest.raises(TypeError, match=r"budget must be a Budget, e\.g\. Budget\(calls=5\), got int 5"):
        run(Levels(), budget=5)
    assert run(Levels(width=1, levels=1), budget=Budget(calls=5)).status.value == "ok"


@pytest.mark.parametrize("method", ["run", "start"])
def test_a_misspelt_keyword_is_named_with_the_nearest_and_the_accepted_ones(method):
    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(answer)).attach(engine)
            out = getattr(engine, method)(Levels(), {}, bugdet=Budget(calls=1))
            return await out if inspect.isawaitable(out) else out
    with pytest.raises(TypeError) as e:
        asyncio.run(go())
    assert str(e.value) == (f"Engine.{method}: unknown keyword 'bugdet' (did you mean 'budget'?); accepted: "
                            "budget, replay, log, seed, retry_errors, resume, new_run, durability, parent")


def test_help_on_engine_run_shows_its_keywords():
    params = inspect.signature(Engine.run).parameters
    for k in ("budget", "replay", "log", "seed", "resume", "new_run", "durability"):
        assert k in params and params[k].kind is inspect.Parameter.KEYWORD_ONLY
    assert "budget" in pydoc.render_doc(Engine.run) and "resume" in pydoc.render_doc(Engine.run)


def test_resume_refuses_a_file_whose_finished_run_is_another_unless_a_new_run_is_asked_for(tmp_path):
    path = tmp_path / "run.jsonl"
    first = run(Levels(width=2, levels=1), log=path)
    n = len(Log.read(path))
    same = run(Levels(width=2, levels=1), log=path, resume=True)  # the same run: served from the file
    assert same.value == first.value and same.served.get("llm") == 2
    for alg, inp, says in ((Levels(width=3, levels=1), {}, "config.width 2 -> 3"),
                           (Levels(width=2, levels=1), {"task": "other"}, 'input.task null -> "other"')):
        before = path.read_text()
        with pytest.raises(ValueError) as e:
            run(alg, inp, log=path, resume=True)
        assert says in str(e.value) and "holds a finished run of another algorithm, input or configuration" in str(e.value)
        assert "new_run=True" in str(e.value) and path.read_text() == before  # nothing appended
    wider = run(Levels(width=3, levels=1), log=path, resume=True, new_run=True)  # asked for: a new run in the same file
    assert wider.status.value == "ok" and len(Log.read(path)) > n
    assert sum(e.kind == "run.started" for e in Log.read(path)) == 3
    with pytest.raises(ValueError, match="new_run=True goes with resume=True"):
        run(Levels(), log=tmp_path / "x.jsonl", new_run=True)


def test_a_scripted_model_or_a_client_of_the_wrong_type_is_refused_where_it_is_given():
    with pytest.raises(TypeError, match=r"FakeLLMClient: model must be a function fn\(request\) or fn\(request, key\) returning the reply, got str 'hello' \(for one fixed reply"):
        FakeLLMClient("hello")
    with pytest.raises(TypeError, match="LLMHandler: int 42 is not a client"):
        LLMHandler(42)
    with pytest.raises(TypeError, match="is not a client"):
        LLMHandler(routes={"judge": "not-a-provider-string" and 3.5})
