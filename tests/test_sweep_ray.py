"""The Ray executor: on a local Ray instance (2 CPUs), the same sweep gives the same table as the local executor,
item for item, and the same experiment directory (config, one log per (configuration, item), rows, table)."""
import json
import sys

import pytest

ray = pytest.importorskip("ray")

from reasoning_kit.algos import TreeOfThoughts
from reasoning_kit.eval import on_answer
from reasoning_kit.llm import FakeLLMClient, LLMHandler
from reasoning_kit.runtime import Engine
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
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
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
