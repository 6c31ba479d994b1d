"""Game of 24 (reasoning_kit.tasks.game24): the safe evaluator, the yes/no `check` and the named check `check_24`
with its messages, where the puzzle's numbers come from, the CSV loader, the solver and the generator."""
import csv
from fractions import Fraction
from pathlib import Path

import pytest

from reasoning_kit.tasks import game24
from reasoning_kit.tasks.game24 import check_24, eval_arithmetic, puzzle_numbers, verdict

from importlib.resources import files
CSV = files("reasoning_kit.tasks") / "data" / "24.csv"  # package data: the tests need nothing beside the repo
TASK = "Make 24 from 3, 3, 8, 8"


# --- the evaluator -------------------------------------------------------------------------------------


@pytest.mark.parametrize("expr", [
    "__import__('os').system('echo pwned')", "open('/etc/passwd').read()", "(lambda: 24)()", "x", "[24][0]",
    "9 ** 9 ** 9", "24 if 1 else 0", "-24 * -1", "8 // 3", "1e3", "True + 23", "'24'",
])
def test_eval_arithmetic_refuses_anything_but_arithmetic(expr):
    with pytest.raises((ValueError, SyntaxError)):
        eval_arithmetic(expr)


# --- check: yes or no, the paper's reading of an answer --------------------------------------------------


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


def test_check_and_check_24_share_one_verdict():
    for answer in ["(13 - 9) * (10 - 4)", "(10 - 4) * (13 - 9) + 0", "4 * 6", "13 - 9 - 10 + 4 * 6", "open('x')", ""]:
        ok, message = verdict(answer, [4, 9, 10, 13])
        assert game24.check(answer, "4 9 10 13") is ok
        assert check_24(answer, {"input": {"task": "4 9 10 13"}}) == (ok, message)


# --- check_24: a named check with messages a model can act on -----------------------------------------------


@pytest.mark.parametrize("answer,ok,message", [
    ("8 / (3 - 8 / 3)", True, ""),
    ("(8 / (3 - 8 / 3)) = 24.", True, ""),
    ("8 ÷ (3 − 8 ÷ 3)", True, ""),
    ("8 + 8 + 3 + 3", False, "8 + 8 + 3 + 3 = 22, not 24"),
    ("8 * 3", False, "8 * 3 uses 3, 8, but the numbers are 3, 3, 8, 8: use each exactly once"),
    ("8 / 3", False, "8 / 3 uses 3, 8, but the numbers are 3, 3, 8, 8: use each exactly once"),
    ("(3 + 3) * 8 / 8", False, "(3 + 3) * 8 / 8 = 6, not 24"),
    ("8 * (3 - 3) / 8 + 24", False, "8 * (3 - 3) / 8 + 24 uses 3, 3, 8, 8, 24, but the numbers are 3, 3, 8, 8: use each exactly once"),
    ("8 / (3 - 3) + 8", False, "8 / (3 - 3) + 8: 8 / (3 - 3) divides by zero"),
    ("", False, "the answer is empty: give one arithmetic expression"),
    ("(" * 300 + "1" + ")" * 300, False, "the answer is 601 characters long: give one short arithmetic expression"),
    ("((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((3)))", False, None),
    ("import os", False, "'import os' is not an arithmetic expression"),
])
def test_check_24(answer, ok, message):
    got = check_24(answer, {"input": {"task": TASK}})
    assert got[0] is ok
    if message is not None:
        assert got[1] == message


def test_puzzle_numbers_sources():
    assert puzzle_numbers({"input": {"numbers": [1, 2, 3, 4]}}) == [1, 2, 3, 4]
    assert puzzle_numbers({"input": {"numbers": "4 9 10 13"}}) == [4, 9, 10, 13]
    assert puzzle_numbers({"input": {"task": "Use 4 9 10 13 to make 24"}}) == [4, 9, 10, 13]
    assert puzzle_numbers({"input": {}, "numbers": "1,1,4,6"}) == [1, 1, 4, 6]
    with pytest.raises(ValueError, match="four numbers"):
        puzzle_numbers({"input": {"task": "Make 24 from 1 and 2"}})


def test_check_24_accepts_solutions_to_real_puzzles_and_rejects_near_misses():
    rows = list(csv.DictReader(CSV.open()))
    puzzles = [r["Puzzles"] for r in rows[:15] + rows[900:915]]  # easy ones and some of the paper's test set
    solved = 0
    for p in puzzles:
        expr = game24.solve(p)
        if expr is None:
            continue
        solved += 1
        ctx = {"input": {"task": f"Use {p} to make 24", "numbers": p}}
        assert check_24(expr, ctx) == (True, ""), (p, expr)
        assert check_24(f"{expr} + 1", ctx)[0] is False  # one number too many
        assert eval_arithmetic(expr)[0] == 24
    assert solved >= 25


# --- the puzzle set, the solver, the generator -----------------------------------------------------------


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


def test_the_puzzle_set_ships_with_the_package_with_its_licence():
    assert len(game24.puzzles()) == 1362 and game24.puzzles(900, 1000) == game24.load(CSV, 900, 1000)
    data = files("reasoning_kit.tasks") / "data"
    licence = (data / "LICENSE-24.csv.txt").read_text()
    assert "MIT License" in licence and "Copyright (c) 2023 Shunyu Yao" in licence
    assert "princeton-nlp/tree-of-thought-llm" in (data / "SOURCE.md").read_text()
