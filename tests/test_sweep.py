"""sweep: one tidy table over a grid, the same table however often it is run or resumed, a changed
configuration refused, a sweep (one configuration, so a (task, key) names one call) killed with -9 resumes without asking any answered call twice,
a cassette reproduces the table exactly, and one shared rate limit per model holds across concurrently running items."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.sweep import eval as rk_eval
from reasoning_kit.algos import TreeOfThoughts
from reasoning_kit.sweep.eval import on_answer
from reasoning_kit.core.events import Log
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.engine import Engine
from reasoning_kit.sweep import COLUMNS, format_summary, pareto_front, summarize, sweep_sync
from reasoning_kit.tasks import game24

PUZZLES = game24.puzzles(900, 903)
CHECK = on_answer(game24.check)


def tot(width):
    return TreeOfThoughts(depth=4, width=width, branching=4, generate="propose", evaluate="value", n_evaluate=1,
                          stop_score=None, prompts=game24.prompts)


def scripted():
    e = Engine()
    LLMHandler(FakeLLMClient(game24.oracle)).attach(e)
    return e


def timeless(rows):
    return [{k: v for k, v in r.items() if k not in ("seconds", "resumed", "log")} for r in rows]


def test_table_shape_and_no_cycle_with_eval():
    import importlib, sys as _sys
    src = open(rk_eval.__file__).read()
    assert "reasoning_kit.sweep" not in src and "import_module" not in src  # eval never reaches up into sweep
    with pytest.raises(AttributeError): rk_eval.sweep_sync
    res = sweep_sync({"b1": tot(1), "b2": tot(2)}, PUZZLES, engine=scripted, check=CHECK, progress=False)
    assert [(r["config"], r["item"]) for r in res.rows] == [(c, i) for c in ("b1", "b2") for i in range(3)]
    assert all(list(r) == COLUMNS or set(r) == set(COLUMNS) for r in res.rows)
    assert all(r["correct"] and r["calls"] > 0 and r["tokens_in"] > 0 for r in res.rows)
    s = summarize(res.rows)
    assert [x["config"] for x in s] == ["b1", "b2"] and s[0]["calls_per_item"] < s[1]["calls_per_item"]
    assert pareto_front(s) == ["b1"]  # same accuracy, fewer calls
    assert "b2" in format_summary(s) and res.config["version"]


@settings(max_examples=3, deadline=None)
@given(st.integers(2, 6))
def test_same_table_at_any_concurrency(concurrency):
    ref = sweep_sync({"b1": tot(1)}, PUZZLES, engine=scripted, check=CHECK, progress=False, concurrency=1)
    res = sweep_sync({"b1": tot(1)}, PUZZLES, engine=scripted, check=CHECK, progress=False, concurrency=concurrency)
    assert timeless(res.rows) == timeless(ref.rows)


def test_directory_reads_back_and_refuses_a_changed_configuration(tmp_path):
    args = dict(engine=scripted, check=CHECK, progress=False, dir=tmp_path)
    first = sweep_sync({"b1": tot(1)}, PUZZLES, **args)
    asked = []
    def counting():
        asked.append(1)
        return scripted()
    again = sweep_sync({"b1": tot(1)}, PUZZLES, **{**args, "engine": counting})
    assert again.rows == first.rows and asked == []  # everything finished: read back, nothing run
    assert len((tmp_path / "table.csv").read_text().splitlines()) == 1 + len(PUZZLES)
    assert json.loads((tmp_path / "config.json").read_text())["seed"] == 0
    with pytest.raises(ValueError, match="another configuration.*width"):
        sweep_sync({"b1": tot(2)}, PUZZLES, **args)
    with pytest.raises(ValueError, match="another configuration.*tasks"):
        sweep_sync({"b1": tot(1)}, PUZZLES[:2], **args)


SCRIPT = r'''
import sys, time
from reasoning_kit.algos import TreeOfThoughts
from reasoning_kit.sweep.eval import on_answer
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.engine import Engine
from reasoning_kit.sweep import sweep_sync
from reasoning_kit.tasks import game24
d, asked, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
def factory(item):
    def fn(request, key):
        time.sleep(delay)
        with open(asked, "a") as f: f.write(item["task"] + "\t" + key + "\n")
        return game24.oracle(request)
    e = Engine(); LLMHandler(FakeLLMClient(fn)).attach(e); return e
tot = lambda w: TreeOfThoughts(depth=4, width=w, branching=4, generate="propose", evaluate="value", n_evaluate=1,
                               stop_score=None, prompts=game24.prompts)
sweep_sync({"b2": tot(2)}, game24.puzzles(900, 903), engine=factory,
           check=on_answer(game24.check), dir=d, concurrency=2, progress=False)
'''


def answered(d: Path) -> set[tuple[str, str]]:
    "(task, key) of every model call with a result in the experiment's logs."
    out = set()
    for f in (d / "logs").rglob("*.jsonl"):
        log = Log.read(f, repair=True)
        task = next(e.data["input"]["task"] for e in log if e.kind == "run.started")
        out |= {(task, e.key) for e in log if e.kind == "llm.result"}
    return out


@pytest.mark.parametrize("after", [10, 45])
def test_kill_9_then_resume_asks_no_answered_call_twice(tmp_path, after):
    tmp = tmp_path
    d, asked, script = tmp / "exp", tmp / "asked.txt", tmp / "run.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    p = subprocess.Popen([sys.executable, str(script), str(d), str(asked), "0.01"], env=env)
    while p.poll() is None and (not asked.exists() or len(asked.read_text().splitlines()) < after):
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL); p.wait()
    before = answered(d) if d.exists() else set()
    n = len(asked.read_text().splitlines()) if asked.exists() else 0
    subprocess.run([sys.executable, str(script), str(d), str(asked), "0"], env=env, check=True)
    again = [tuple(l.split("\t")) for l in asked.read_text().splitlines()[n:]]
    assert not (set(again) & before), "an answered call was asked again after resuming"
    ref = sweep_sync({"b2": tot(2)}, PUZZLES, engine=scripted, check=CHECK, progress=False)
    got = [json.loads(l) for l in (d / "rows.jsonl").read_text().splitlines()]
    got = sorted(got, key=lambda r: (r["config"], r["item"]))
    assert timeless(got) == timeless(sorted(ref.rows, key=lambda r: (r["config"], r["item"])))


def test_a_cassette_reproduces_the_table_exactly(tmp_path):
    from reasoning_kit.models.cassettes import Cassette
    tape = tmp_path / "tape.json"
    def engine_of(client):
        e = Engine()
        LLMHandler(client).attach(e)
        return e
    grid = {"b1": tot(1), "b2": tot(2)}
    recorded = sweep_sync(grid, PUZZLES, engine=engine_of(Cassette(tape, FakeLLMClient(game24.oracle), mode="record")),
                          check=CHECK, progress=False, dir=tmp_path / "rec", seed=7)
    replayed = sweep_sync(grid, PUZZLES, engine=engine_of(Cassette(tape)),  # no model behind it: any new call fails
                          check=CHECK, progress=False, dir=tmp_path / "rep", seed=7)
    assert timeless(replayed.rows) == timeless(recorded.rows) and all(r["status"] == "ok" for r in replayed.rows)
    assert (tmp_path / "rep" / "table.csv").read_text().count("\n") == (tmp_path / "rec" / "table.csv").read_text().count("\n")
    cfg = json.loads((tmp_path / "rep" / "config.json").read_text())
    from reasoning_kit import __version__
    assert cfg["seed"] == 7 and cfg["version"] == __version__  # seeds and the library version recorded


def test_one_rate_limit_holds_across_concurrent_items(monkeypatch):
    """Six requests a minute for the model, four items at once, each with its own engine and client: on a fake clock,
    no window of the run ever holds more calls than the bucket allows (6 at once, then one every 10 s)."""
    import asyncio
    import types
    from reasoning_kit.models import errors
    now = [0.0]
    async def fake_sleep(s, *a):
        now[0] += s
        await asyncio.sleep(0)
    monkeypatch.setattr(errors, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(errors, "asyncio", types.SimpleNamespace(sleep=fake_sleep, Lock=asyncio.Lock))
    at = []
    def factory():
        e = Engine()
        LLMHandler(FakeLLMClient(lambda req: (at.append(now[0]), game24.oracle(req))[1])).attach(e)
        return e
    res = sweep_sync({"b1": tot(1)}, PUZZLES + game24.puzzles(910, 911), engine=factory, check=CHECK, progress=False,
                     concurrency=4, rate_limits={"*": 6})
    assert all(r["correct"] for r in res.rows) and len(at) == sum(r["calls"] for r in res.rows) > 12
    for i, t in enumerate(at):
        for j in range(i, len(at)):
            assert j - i + 1 <= 6 + (at[j] - t) / 10 + 1e-9, f"{j - i + 1} calls in {at[j] - t:.1f}s"
    assert max(at) >= (len(at) - 6) * 10 - 1e-6  # and the limit was what paced them


def test_executor_and_rate_limits_are_checked():
    with pytest.raises(ValueError, match=r"executor must be one of \['local', 'ray'\]"):
        sweep_sync({"b1": tot(1)}, PUZZLES, engine=scripted, check=CHECK, progress=False, executor="dask")
    with pytest.raises(ValueError, match="positive"):
        sweep_sync({"b1": tot(1)}, PUZZLES, engine=scripted, check=CHECK, progress=False, rate_limits={"*": 0})


def test_experiment_file_takes_rate_limits_and_a_new_version_warns(tmp_path):
    from reasoning_kit.sweep import sweep_from_file
    f = tmp_path / "exp.json"
    f.write_text(json.dumps({"tasks": ["4 9 10 13"], "dir": "out", "rate_limits": {"*": 600}, "concurrency": 2,
                             "configs": {"b1": {"algorithm": "TreeOfThoughts", "depth": 4, "width": 1, "branching": 4, "generate": "propose",
                                                "evaluate": "value", "n_evaluate": 1, "stop_score": None, "prompts": "game24"}}}))
    assert [r["correct"] for r in sweep_from_file(f).rows] == [True]
    cfg = tmp_path / "out" / "config.json"
    cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "version": "0.0.1"}))
    with pytest.warns(RuntimeWarning, match="started with reasoning_kit 0.0.1"):
        again = sweep_from_file(f)
    assert [r["correct"] for r in again.rows] == [True]
    f.write_text(json.dumps({**json.loads(f.read_text()), "rate_limits": {"*": -1}}))
    with pytest.raises(ValueError, match="positive"):
        sweep_from_file(f)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(1, 30), st.lists(st.booleans(), min_size=4, max_size=4)),
                min_size=2, max_size=6, unique_by=lambda t: (t[0], t[1])))
def test_best_within_budget_picks_the_best_configuration_within_each_budget(grid):
    "On made-up tables: each row's configurations fit the budget and none of the method's fitting ones is more accurate."
    from reasoning_kit.sweep import SweepResult, best_within_budget
    labels = {f"{m}{c}": (m, c, ok) for m, c, ok in grid}
    rows = [{"config": l, "item": i, "correct": ok[i], "calls": c, "cached": 0, "tokens_in": 0, "tokens_out": 0, "cost": 0.0}
            for l, (m, c, ok) in labels.items() for i in range(4)]
    res = SweepResult(config={"configs": {l: {"algorithm": m, "config": {}} for l, (m, _, _) in labels.items()}}, rows=rows)
    if not {m for m, _, _ in grid} >= {"a", "b"}:
        with pytest.raises(ValueError, match="names no configuration"): best_within_budget(res, "a", "b")
        return
    acc = {l: sum(ok) / 4 for l, (_, _, ok) in labels.items()}
    out = best_within_budget(res, "a", "b", n_boot=50)
    budgets = sorted({c for _, c, _ in grid})
    assert [r["budget"] for r in out] == [x for x in budgets if any(m == "a" and c <= x for m, c, _ in grid) and any(m == "b" and c <= x for m, c, _ in grid)]
    for r in out:
        for side in ("a", "b"):
            fits = [l for l, (m, c, _) in labels.items() if m == side and c <= r["budget"]]
            assert r[side] in fits and r[f"{side}_accuracy"] == acc[r[side]] == max(acc[l] for l in fits)
            assert r[f"{side}_spend"] == labels[r[side]][1] <= r["budget"]  # what that side actually spends
        assert r["difference"] == r["a_accuracy"] - r["b_accuracy"] and -1 <= r["ci_low"] <= r["ci_high"] <= 1


def test_when_one_worker_fails_the_others_take_no_more_jobs():
    "A row that cannot be handed on (say the disk is full) ends the sweep: the other workers stop, none runs on unseen."
    import asyncio
    from reasoning_kit.algos import SelfConsistency
    from reasoning_kit.engine import Engine
    from reasoning_kit.models import FakeLLMClient, LLMHandler
    from reasoning_kit.sweep import LocalExecutor
    calls = []
    def model(request): calls.append(1); return "Answer: 7"
    def engine():
        e = Engine(); LLMHandler(FakeLLMClient(model)).attach(e); return e
    async def go():
        rows = []
        def on_row(row):
            rows.append(row)
            if len(rows) == 1: raise OSError("No space left on device")
        jobs = [("sc", SelfConsistency(samples=1), i, {"task": f"{i} + 7?"}) for i in range(40)]
        with pytest.raises(OSError, match="No space left"):
            await LocalExecutor(concurrency=4).run(jobs, on_row, engine=engine, check=lambda r, x: True, budget=None, seed=0, root=None, limits=None)
        at_raise = len(calls)
        await asyncio.sleep(0.2)  # time enough for the 36 jobs left, were anyone still taking them
        return rows, at_raise, len(calls)
    rows, at_raise, later = asyncio.run(go())
    assert later == at_raise and at_raise < 10, (at_raise, later)
