"""Tree of Thoughts on the Game of 24: the paper's test set (ranks 901-1000) with a scripted model that knows the
answers, order independence and a budget. The game24 module's own tests (checks, solver, loader) are in test_game24.py."""
from pathlib import Path

import pytest

from reasoning_kit.algos.tot import TreeOfThoughts
from reasoning_kit.llm import FakeLLMClient, LLMHandler
from reasoning_kit.runtime import Budget, Engine, Status
from reasoning_kit.tasks import game24

from _support import jittered, run

from importlib.resources import files
CSV = files("reasoning_kit.tasks") / "data" / "24.csv"  # package data: the tests need nothing beside the repo


def paper_tot(**kw) -> TreeOfThoughts:
    "The paper's Game of 24 setting (propose, value x3, greedy beam of 5, four levels, no early stop)."
    return TreeOfThoughts(**{**dict(depth=4, width=5, branching=5, generate="propose", evaluate="value", n_evaluate=3,
                                    stop_score=None, prompts=game24.prompts), **kw})


def test_tree_of_thoughts_solves_the_papers_test_set_with_a_scripted_solver():
    async def main():
        results = []
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(game24.oracle)).attach(engine)
            for puzzle in game24.load(CSV, 900, 1000):
                out = await engine.run(paper_tot(), {"task": puzzle})
                results.append((puzzle, out))
        return results
    tot = paper_tot()
    for puzzle, out in run(main()):
        assert out.status == Status.OK, (puzzle, out.error)
        assert game24.check(out.value["answer"], puzzle), (puzzle, out.value)
        assert out.value["depth"] == 4 and len(out.value["path"]) == 4
        assert out.calls <= tot.max_calls == 120


def test_game24_runs_are_order_independent_and_budgeted():
    outs = [run(_once(jittered(game24.oracle, seed))) for seed in range(5)]
    for out in outs:
        assert out.value == outs[0].value and out.state.algo == outs[0].state.algo and out.calls == outs[0].calls
    cut = run(_once(FakeLLMClient(game24.oracle), budget=Budget(calls=20)))
    assert cut.status == Status.BUDGET_EXHAUSTED and cut.calls == 20 and cut.value["node"] is not None


async def _once(client, **kw):
    async with Engine() as engine:
        LLMHandler(client).attach(engine)
        return await engine.run(paper_tot(), {"task": "1 3 4 6"}, **kw)
