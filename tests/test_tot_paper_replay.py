"""The paper's own search, replayed through this API: a small reference breadth-first search written from the paper's
description of its Game of 24 code (every line of a proposal reply a candidate, duplicates valued 0, a value cache keyed
by the value prompt and shared by every puzzle, greedy top 5 keeping the candidates' order on ties, four steps, no early
stop), against TreeOfThoughts with prompt hooks, on the same scripted "recorded" model. Same final beams, same calls.

The prompt text is this project's own wording (tests/fixtures/my_game24_prompts.json), not the paper's."""
import itertools
import json
import random
from collections import Counter
from fractions import Fraction
from pathlib import Path

from reasoning_kit.algos.tot import TreeOfThoughts
from reasoning_kit.models.clients import CachedClient
from reasoning_kit.models import FakeLLMClient, LLMHandler, user
from reasoning_kit.engine import Engine
from reasoning_kit.tasks import game24

from _support import run

MY = json.loads((Path(__file__).parent / "fixtures" / "my_game24_prompts.json").read_text())
VALUE_MAP = {"impossible": 0.001, "likely": 1, "sure": 20}


# -- the paper's prompt logic, on our own prompt text ------------------------------------------------------------

def current_numbers(y: str) -> str:
    return y.strip().split("\n")[-1].split("left: ")[-1].split(")")[0]

def propose_prompt(x: str, y: str) -> str:
    cur = current_numbers(y if y else x)
    return MY["answer"].format(input=x, steps=y) if cur == "24" else MY["propose"].format(input=cur)

def value_prompt(x: str, y: str) -> str:
    last = y.strip().split("\n")[-1]
    if "left: " not in last: return MY["judge"].format(input=x, answer=last.lower().replace("answer: ", ""))
    return MY["value"].format(input=current_numbers(y))

def unwrap(x: str, y: str, outputs: list[str]) -> float:
    if len(y.strip().split("\n")) == 4 and "answer" not in y.lower(): return 0
    names = [o.split("\n")[-1] for o in outputs]
    return sum(v * names.count(n) for n, v in VALUE_MAP.items())


# -- the "recorded" model: a reply is a pure function of the prompt and the sample's place in the request ----------

def _steps(nums: list[Fraction]) -> list[str]:
    out = []
    for i, j in itertools.combinations(range(len(nums)), 2):
        a, b = sorted((nums[i], nums[j]), reverse=True)
        rest = [x for k, x in enumerate(nums) if k not in (i, j)]
        for op, v in (("+", a + b), ("-", a - b), ("*", a * b)) + ((("/", a / b),) if b else ()):
            out.append(f"{game24.fmt(a)} {op} {game24.fmt(b)} = {game24.fmt(v)} (left: {' '.join(map(game24.fmt, sorted(rest + [v])))})")
    return out

def recorded(prompt: str, i: int) -> str:
    rng = random.Random(f"{prompt}|{i}")
    head, rest = prompt.split("\n", 1)
    if head == "[my propose v1]":
        try: nums = [Fraction(t) for t in rest.split("\n")[0].removeprefix("Numbers: ").split()]
        except (ValueError, ZeroDivisionError): return "I cannot continue."
        steps = _steps(nums) if len(nums) > 1 else []
        lines = rng.sample(steps, min(len(steps), rng.randint(3, 12)))
        if lines and rng.random() < 0.3: lines.insert(rng.randrange(len(lines)), rng.choice(lines))  # a repeated line
        if rng.random() < 0.2: lines.append("Those are the steps.")  # a line that is not a step
        return "\n".join(lines) + ("\n" if rng.random() < 0.3 else "")  # sometimes a trailing empty line
    if head == "[my answer v1]":
        puzzle = rest.split("\n")[0].removeprefix("Puzzle: ")
        good = game24.solve(puzzle)
        return f"Answer: {good if good and rng.random() < 0.7 else '(1 + 2) * 8'} = 24"
    if head == "[my value v1]":
        try: ok = game24.solvable([Fraction(t) for t in rest.split("\n")[0].removeprefix("Can ").removesuffix(" reach 24? Reply sure, likely or impossible.").split()])
        except (ValueError, ZeroDivisionError): ok = False
        return rng.choice(["sure", "sure", "likely"] if ok else ["impossible", "impossible", "likely"])
    puzzle, answer = rest.split("\n")[0].removeprefix("Puzzle: "), rest.split("\n")[1].removeprefix("Answer: ")
    return "sure" if game24.check(answer, puzzle) == (rng.random() < 0.9) else "impossible"


# -- the reference search ----------------------------------------------------------------------------------------

def reference_bfs(x: str, value_cache: dict, calls: Counter, steps=4, width=5, n_evaluate=3) -> list[str]:
    ask = lambda prompt, n: (calls.update(["call"]), [recorded(prompt, i) for i in range(n)])[1]
    ys = [""]
    for _ in range(steps):
        new_ys = [y + line + "\n" for y in ys for line in ask(propose_prompt(x, y), 1)[0].split("\n")]
        values, local = [], {}
        for y in new_ys:
            if y in local: values.append(0); continue
            p = value_prompt(x, y)
            if p not in value_cache: value_cache[p] = unwrap(x, y, ask(p, n_evaluate))
            local[y] = value_cache[p]; values.append(value_cache[p])
        ys = [new_ys[i] for i in sorted(range(len(new_ys)), key=lambda i: values[i], reverse=True)[:width]]
    return ys


# -- the same search through this API ----------------------------------------------------------------------------

def y_of(path: list[str]) -> str: return "".join(s + "\n" for s in path)

VALUES: dict[str, float] = {}  # the paper caches a prompt's value after its four-steps rule, so the hook keeps it by prompt too
def paper_value(task: str, path: list[str], texts: list[str]) -> float:
    return VALUES.setdefault(value_prompt(task, y_of(path)), unwrap(task, y_of(path), texts))

HOOKS = {"propose_prompt": lambda task, path, k: [user(propose_prompt(task, y_of(path)))],
         "parse_steps": lambda task, path, text, k: text.split("\n")[:k],  # every line, as the paper's code
         "final_answer": lambda step: step[len("Answer:"):].strip() if step.startswith("Answer:") else None,
         "value_prompt": lambda task, path: [user(value_prompt(task, y_of(path)))],
         "parse_value": paper_value}

PAPER = TreeOfThoughts(depth=4, width=5, branching=25, generate="propose", evaluate="value", n_evaluate=3, select="greedy",
                       stop_score=None, duplicates="zero", finals="expand", parallel=False, prompts=HOOKS)


class ValueCache:
    "The paper's value cache: evaluator calls through a CachedClient shared by every run; proposals always asked."
    def __init__(self, inner): self.inner, self.cached = inner, CachedClient(inner, by="request")
    async def complete(self, request, call=None):
        return await (self.cached if request.role == "evaluator" else self.inner).complete(request, call)


def scripted():
    asked = Counter()
    def fn(request):
        p = request.messages[-1].content
        i = asked[p] % request.n; asked[p] += 1  # the n samples of one request are asked one after another
        return recorded(p, i)
    return FakeLLMClient(fn)


def test_a_replay_through_the_api_keeps_the_papers_beams_and_calls():
    puzzles = game24.puzzles(900, 915)
    cache, counted = {}, Counter(); VALUES.clear()
    expected = [reference_bfs(x, cache, counted) for x in puzzles]
    model = scripted()
    async def main():
        async with Engine() as engine:
            LLMHandler(ValueCache(model)).attach(engine)
            return [await engine.run(PAPER, {"task": x}) for x in puzzles]
    outs = run(main())
    for x, ys, out in zip(puzzles, expected, outs):
        s = out.state.algo
        assert [y_of(s.steps(i)) for i in s.beam] == ys, x
        solved_ref = any(game24.check(y.strip().split("\n")[-1], x) for y in ys)
        assert any(game24.check(b["answer"], x) for b in out.value["beam"]) == solved_ref, x
    assert sum(o.calls for o in outs) == model.calls == counted["call"]  # cache hits are not calls, in both
    assert sum(o.cached.get("llm", 0) for o in outs) > 0  # and the shared value cache was used across puzzles
    assert sum(any(game24.check(b["answer"], x) for b in o.value["beam"]) for x, o in zip(puzzles, outs)) > 0
