"""Tree of Thoughts on the Game of 24: the paper's test set (ranks 901-1000) with a scripted model that knows the
answers, order independence and a budget. The game24 module's own tests (checks, solver, loader) are in test_game24.py."""
from pathlib import Path

import pytest

from reasoning_kit.algos.tot import TreeOfThoughts
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.engine import Budget, Engine, Status
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
        assert out.calls <= tot.max_calls == (1 + 5 + 5 + 5) * (1 + 5)


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



# -- the paper's configuration: up to 25 proposals kept from one reply, max_calls a true bound ----------------

import json
import re

from hypothesis import given, settings, strategies as st

from reasoning_kit.models import LLMRequest, user
from reasoning_kit.models.fake import text

PAPER = dict(depth=4, width=5, branching=25, generate="propose", evaluate="value", n_evaluate=3, select="greedy", stop_score=None)


def test_the_papers_configuration_is_accepted_with_25_proposals_per_node():
    tot = TreeOfThoughts(**PAPER)
    assert (tot.branching, tot.max_calls) == (25, (1 + 5 + 5 + 5) * (1 + 25))  # one proposal call per beam node, a score per step
    with pytest.raises(ValueError, match="width \\* branching = 125 exceeds the limit of 25 \\(in 'sample' mode\\)"):
        TreeOfThoughts(**{**PAPER, "generate": "sample"})


def lister(salt: int, most: int, full: bool):
    "Each proposal reply lists distinct steps (`most` of them when `full`, else a number set by the prompt); scores vary."
    def model(request):
        u = request.messages[-1].content
        if request.role == "evaluator": return text(json.dumps({"score": (sum(map(ord, u)) + salt) % 10}))
        n = most if full else 1 + (sum(map(ord, u)) + salt) % (most + 3)  # sometimes more than `branching`: the rest are cut
        return text("\n".join(f"step {salt}.{k}" for k in range(n)))
    return model


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, 4), width=st.integers(1, 5), branching=st.integers(1, 25), salt=st.integers(0, 10**6),
       full=st.booleans())
def test_calls_never_exceed_max_calls_and_steps_kept_never_exceed_branching(depth, width, branching, salt, full):
    tot = TreeOfThoughts(depth=depth, width=width, branching=branching, generate="propose", n_evaluate=3, stop_score=None)
    async def main():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lister(salt, branching, full))).attach(engine)
            return await engine.run(tot, {"task": "make 24"})
    out = run(main())
    s = out.state.algo
    assert out.status == Status.OK and out.calls <= tot.max_calls
    assert all(len(s.children(i)) <= branching for i in s.nodes)
    if full:
        assert all(len(s.children(i)) == branching for lvl in range(depth) for i in s.nodes if s.nodes[i].depth == lvl
                   and s.nodes[i].status in ("root", "kept"))  # every expanded node kept all `branching` steps of its list
    if full and width == 1:  # every beam node full at every level: the bound is reached exactly
        assert out.calls == tot.max_calls == depth * (1 + branching)


def test_the_papers_search_within_max_calls_and_its_final_beam():
    tot = TreeOfThoughts(**{**PAPER, "prompts": game24.prompts})
    todo = game24.puzzles(900, 905)
    async def main():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(game24.oracle)).attach(engine)
            return [await engine.run(tot, {"task": p}, budget=Budget(calls=tot.max_calls)) for p in todo]
    for puzzle, out in zip(todo, run(main())):
        assert out.status == Status.OK and out.calls <= tot.max_calls
        beam = out.value["beam"]
        assert beam and all(set(b) == {"node", "answer", "path", "score"} for b in beam)
        assert [b["score"] for b in beam] == sorted((b["score"] for b in beam), reverse=True)  # best first: beam[0] is top-1
        assert beam[0]["answer"] == out.value["answer"] and any(game24.check(b["answer"], puzzle) for b in beam)


# -- prompts=: a user's own prompt file, reproduced character for character --------------------------------

MY = json.loads((Path(__file__).parent / "fixtures" / "my_game24_prompts.json").read_text())


def my_prompt_text(task: str, path: list[str], what: str) -> str:
    "The exact text the user's prompt file gives for a node: propose (or answer, once 24 is left), value (or judge)."
    if what == "propose":
        if game24.left(task, path) == "24": return MY["answer"].format(input=task, steps="\n".join(path))
        return MY["propose"].format(input=game24.left(task, path))
    answer = game24.final_answer(path[-1])
    if answer is not None: return MY["judge"].format(input=task, answer=answer)
    return MY["value"].format(input=game24.left(task, path))


MY_HOOKS = {"propose_prompt": lambda task, path, k: [user(my_prompt_text(task, path, "propose"))],
            "value_prompt": lambda task, path: [user(my_prompt_text(task, path, "value"))],
            "parse_steps": game24.prompts.parse_steps, "parse_value": game24.prompts.parse_value,
            "final_answer": game24.final_answer}


def my_model(request):
    "Answers the user's prompts by asking the package's scripted solver the same question in its own format."
    u = request.messages[0].content
    head, rest = u.split("\n", 1)
    if head == "[my propose v1]": q = game24.PROPOSE_PROMPT.format(input=re.match(r"Numbers: (.*)", rest).group(1))
    elif head == "[my answer v1]":
        m = re.match(r"Puzzle: (.*)\nSteps:\n(.*)\nWrite", rest, re.S); q = game24.ANSWER_PROMPT.format(input=m.group(1), steps=m.group(2))
    elif head == "[my value v1]": q = game24.VALUE_PROMPT.format(input=re.match(r"Can (.*) reach 24\?", rest).group(1))
    else:
        m = re.match(r"Puzzle: (.*)\nAnswer: (.*)\nIs it", rest, re.S); q = game24.JUDGE_PROMPT.format(input=m.group(1), answer=m.group(2))
    return game24.oracle(LLMRequest(messages=[user(q)]))


def test_a_users_own_prompt_file_is_sent_character_for_character():
    tot = TreeOfThoughts(**{**PAPER, "branching": 8, "prompts": MY_HOOKS})
    puzzle = "4 5 6 10"
    async def main():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(my_model)).attach(engine)
            return await engine.run(tot, {"task": puzzle})
    out = run(main())
    assert out.status == Status.OK and game24.check(out.value["answer"], puzzle)
    s, seen = out.state.algo, set()
    for e in out.log:
        if e.kind != "llm.request": continue
        node, what = re.match(r"tot/(.*)/(expand|score)", e.key).groups()
        expected = my_prompt_text(puzzle, s.steps(node), "propose" if what == "expand" else "value")
        assert e.data["request"]["messages"] == [{"role": "user", "content": expected}]  # no system prompt added, nothing changed
        seen.add(expected.split("\n", 1)[0])
    assert seen == {"[my propose v1]", "[my answer v1]", "[my value v1]", "[my judge v1]"}  # the switch to the answer prompt happened
