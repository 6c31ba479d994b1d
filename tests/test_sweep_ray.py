"""The Ray executor: on a local Ray instance (2 CPUs), the same sweep gives the same table as the local executor,
item for item, and the same experiment directory (config, one log per (configuration, item), rows, table); a cut log
is continued; a worker killed with SIGKILL mid-item is rerun by Ray and asks none of the calls it had answered."""
import json
import os
import signal
import sys

import pytest

ray = pytest.importorskip("ray")

from reasoning_kit.algos import TreeOfThoughts
from reasoning_kit.sweep.eval import on_answer
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.engine import Engine
from reasoning_kit.sweep import sweep_sync
from reasoning_kit.sweep.ray import RayExecutor
from reasoning_kit.tasks import game24

PUZZLES = game24.puzzles(900, 904)
CHECK = on_answer(game24.check)
CONFIGS = {f"tot-b{w}": TreeOfThoughts(depth=4, width=w, branching=4, generate="propose", evaluate="value", n_evaluate=1,
                                       stop_score=None, prompts=game24.prompts) for w in (1, 2)}


def scripted():
    e = Engine()
    LLMHandler(FakeLLMClient(game24.oracle)).attach(e)
    return e


@pytest.fixture(scope="module")
def local_ray():
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    try: ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception:  # a loaded machine can make Ray's own agents miss its start-up deadline: one more try
        ray.shutdown(); ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def timeless(rows):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def test_ray_table_equals_the_local_one_item_for_item(local_ray, tmp_path):
    args = dict(engine=scripted, check=CHECK, progress=False)
    local = sweep_sync(CONFIGS, PUZZLES, dir=tmp_path / "local", **args)
    on_ray = sweep_sync(CONFIGS, PUZZLES, dir=tmp_path / "ray", executor=RayExecutor(concurrency=4), **args)
    assert len(on_ray.rows) == len(CONFIGS) * len(PUZZLES)
    assert timeless(on_ray.rows) == timeless(local.rows)
    assert all(r["correct"] and r["calls"] > 0 for r in on_ray.rows)
    files = lambda d: sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())
    assert files(tmp_path / "ray") == files(tmp_path / "local")
    assert json.loads((tmp_path / "ray" / "config.json").read_text()) == json.loads((tmp_path / "local" / "config.json").read_text())
    again = sweep_sync(CONFIGS, PUZZLES, dir=tmp_path / "ray", executor="ray", **args)  # finished: read back, nothing sent
    assert again.rows == on_ray.rows


def test_the_driver_keeps_no_coroutine_per_waiting_job(local_ray):
    "At most `concurrency` jobs are in hand in the driver at once, however many wait: a 10,000-item sweep's memory stays flat."
    import asyncio
    jobs = [(label, alg, i, {"task": p} if isinstance(p, str) else p) for label, alg in CONFIGS.items() for i, p in enumerate(PUZZLES)]  # as sweep makes them
    rows, tasks = [], []
    def on_row(row): rows.append(row); tasks.append(len(asyncio.all_tasks()))
    asyncio.run(RayExecutor(concurrency=2).run(jobs, on_row, engine=scripted, check=CHECK, budget=None, seed=0, root=None, limits=None))
    assert len(rows) == len(jobs) == 8 and all(r["correct"] for r in rows)
    assert tasks[0] == max(tasks) == 3, tasks  # the run's own task and two workers at work, never a task for each of the 8 jobs


def test_without_shared_storage_logs_travel_with_the_jobs(local_ray, tmp_path):
    from reasoning_kit.core.events import Log
    from reasoning_kit.engine import fold_run
    args = dict(engine=scripted, check=CHECK, progress=False)
    local = sweep_sync(CONFIGS, PUZZLES[:2], dir=tmp_path / "local", **args)
    shipped = sweep_sync(CONFIGS, PUZZLES[:2], dir=tmp_path / "shipped", executor=RayExecutor(shared_storage=False), **args)
    assert timeless(shipped.rows) == timeless(local.rows)
    for r in shipped.rows:  # each log came back and was written where a local sweep writes it
        events = lambda d: sorted((e.kind, e.key or "") for e in Log.read(d / r["log"]))
        assert events(tmp_path / "shipped") == events(tmp_path / "local") and fold_run(Log.read(tmp_path / "shipped" / r["log"])).status == "ok"


def test_ray_resumes_a_cut_log(local_ray, tmp_path):
    args = dict(engine=scripted, check=CHECK, progress=False, dir=tmp_path)
    first = sweep_sync({"tot-b2": CONFIGS["tot-b2"]}, PUZZLES[:2], executor=RayExecutor(), **args)
    log = tmp_path / first.rows[1]["log"]
    log.write_text("".join(log.read_text().splitlines(True)[:25]))  # item 1 as a killed worker leaves it
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(l for l in rows.read_text().splitlines(True) if json.loads(l)["item"] == 0))
    again = sweep_sync({"tot-b2": CONFIGS["tot-b2"]}, PUZZLES[:2], executor=RayExecutor(), **args)
    assert again.rows[0] == first.rows[0]  # read back
    assert 0 < again.rows[1]["resumed"] < again.rows[1]["calls"]  # continued from the cut log, not started afresh
    same = lambda r: {k: v for k, v in r.items() if k not in ("seconds", "resumed")}
    assert same(again.rows[1]) == same(first.rows[1])


def test_a_killed_worker_is_rerun_and_asks_no_answered_call_twice(local_ray, tmp_path):
    asked, marker = tmp_path / "asked.txt", tmp_path / "killed"
    def factory(item):
        def fn(request, key):
            if item["task"] == PUZZLES[1] and not marker.exists() and asked.exists() and \
                    sum(l.startswith(item["task"]) for l in asked.read_text().splitlines()) >= 8:
                marker.write_text(str(os.getpid())); os.kill(os.getpid(), signal.SIGKILL)  # the worker dies mid-item
            with open(asked, "a") as f: f.write(f"{item['task']}\t{key}\n")
            return game24.oracle(request)
        e = Engine()
        LLMHandler(FakeLLMClient(fn)).attach(e)
        return e
    res = sweep_sync({"tot-b2": CONFIGS["tot-b2"]}, PUZZLES[:3], engine=factory, check=CHECK, progress=False,
                     dir=tmp_path / "exp", executor=RayExecutor(retries=1))
    assert marker.exists(), "the worker was never killed"
    lines = asked.read_text().splitlines()
    assert len(lines) == len(set(lines)), "a call answered before the kill was asked again"
    ref = sweep_sync({"tot-b2": CONFIGS["tot-b2"]}, PUZZLES[:3], engine=scripted, check=CHECK, progress=False)
    same = lambda rows: [{k: v for k, v in r.items() if k not in ("seconds", "resumed", "log")} for r in rows]
    assert same(res.rows) == same(ref.rows) and res.rows[1]["resumed"] >= 8


def test_rate_limits_are_held_by_one_actor_for_the_whole_cluster(local_ray):
    "Every model call of every worker took its share from the one limiter actor (so the limit holds cluster-wide)."
    ex = RayExecutor(concurrency=4)
    res = sweep_sync(CONFIGS, PUZZLES, engine=scripted, check=CHECK, progress=False, executor=ex, rate_limits={"*": 60_000})
    assert ex.granted == sum(r["calls"] for r in res.rows) > 0
    ex = RayExecutor(concurrency=4)
    sweep_sync(CONFIGS, PUZZLES[:1], engine=scripted, check=CHECK, progress=False, executor=ex, rate_limits={"some-other-model": 1})
    assert ex.granted == 0  # a limit for another model takes nothing from these calls
