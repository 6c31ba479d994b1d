"""Game of 24: the checker, the solver, the CSV loader, and a Tree of Thoughts smoke run on the paper's
test set (ranks 901-1000) with a scripted model that knows the answers."""
from fractions import Fraction
from pathlib import Path

import pytest

from reasoning_kit.algos.tot import TreeOfThoughts
from reasoning_kit.llm import FakeLLMClient, LLMHandler
from reasoning_kit.runtime import Budget, Engine, Status
from reasoning_kit.tasks import game24

from _support import jittered, run

CSV = Path(__file__).resolve().parents[2] / "shared" / "data" / "game24" / "24.csv"
needs_csv = pytest.mark.skipif(not CSV.exists(), reason=f"the puzzle file is not at {CSV}")


def paper_tot(**kw) -> TreeOfThoughts:
    "The paper's Game of 24 setting (propose, value x3, greedy beam of 5, four levels, no early stop)."
    return TreeOfThoughts(**{**dict(depth=4, width=5, branching=5, generate="propose", evaluate="value", n_evaluate=3,
                                    stop_score=None, prompts=game24.prompts), **kw})


@pytest.mark.parametrize("answer, puzzle, ok", [
    ("(13 - 9) * (10 - 4)", "4 9 10 13", True),
    ("Answer: (13 - 9) * (10 - 4) = 24", "4 9 10 13", True),
    ("Steps: ...\nAnswer: 8 / (3 - 8 / 3) = 24", "3 3 8 8", True),
    ("(13 \u2212 9) * (10 - 4)", "4 9 10 13", False),  # a unicode minus is not an operator we read
    ("(10 - 4) * (13 - 9) + 0", "4 9 10 13", False),
    ("10 * 4 - 13 - 9 + 6", "4 9 10 13", False),
    ("4 * 6", "4 9 10 13", False),
    ("2 ** 3 * 3", "2 3 3", False),
    ("24 / (1 - 1)", "1 1 24", False),
    ("open('x')", "1 2 3 4", False),
    ("", "1 2 3 4", False),
    (None, "1 2 3 4", False),
])
def test_check_is_exact(answer, puzzle, ok):
    assert game24.check(answer, puzzle) is ok


@needs_csv
def test_the_csv_loads_and_the_test_set_is_solvable():
    puzzles = game24.load(CSV)
    assert len(puzzles) == 1362 and puzzles[0] == "1 1 4 6"
    test_set = game24.load(CSV, 900, 1000)
    assert len(test_set) == 100 and test_set == puzzles[900:1000]
    for p in test_set:
        assert game24.check(game24.solve(p), p), p


def test_load_names_a_wrong_file(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="no 'Puzzles' column"):
        game24.load(bad)


def test_solver_and_generator():
    assert game24.solve("1 1 1 1") is None and game24.solvable([Fraction(1, 3), 8])
    puzzles = game24.generate(30, seed=3)
    assert len(set(puzzles)) == 30 and puzzles == game24.generate(30, seed=3)
    assert all(game24.check(game24.solve(p), p) for p in puzzles)


@needs_csv
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
