"""Sweeps at scale (issue 30): the local executor holds `concurrency` workers, not a task per job, so a 10,000-item
grid costs no memory per job waiting; cached prompt tokens reach the table and the summary."""
import asyncio
import tracemalloc

from reasoning_kit.sweep import grid as sw  # run_job is looked up where LocalExecutor runs it
from reasoning_kit.algos import SelfConsistency
from reasoning_kit.engine import Engine
from reasoning_kit.models import FakeLLMClient, LLMHandler, LLMResponse, Usage
from reasoning_kit.models.core import Choice, Message


def test_local_executor_runs_every_job_with_at_most_concurrency_open(monkeypatch):
    open_, most, tasks_seen = [0], [0], []

    async def fake_run_job(label, algorithm, index, input, **spec):
        open_[0] += 1; most[0] = max(most[0], open_[0]); tasks_seen.append(len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        open_[0] -= 1
        return {"config": label, "item": index}
    monkeypatch.setattr(sw, "run_job", fake_run_job)
    rows = []
    jobs = [("a", None, i, {}) for i in range(500)]
    asyncio.run(sw.LocalExecutor(3).run(jobs, rows.append))
    assert sorted(r["item"] for r in rows) == list(range(500))
    assert most[0] == 3
    assert max(tasks_seen) <= 3 + 1  # the workers and the main task: no task waits per job


def test_waiting_jobs_cost_no_memory(monkeypatch):
    async def fake_run_job(label, algorithm, index, input, **spec):
        await asyncio.sleep(0); return None

    def peak(n: int) -> int:
        jobs = [("a", None, i, {}) for i in range(n)]
        tracemalloc.start()
        try:
            asyncio.run(sw.LocalExecutor(4).run(jobs, lambda r: None))
            return tracemalloc.get_traced_memory()[1]
        finally: tracemalloc.stop()
    monkeypatch.setattr(sw, "run_job", fake_run_job)
    small, big = peak(200), peak(4200)
    assert (big - small) / 4000 < 100, (small, big)  # bytes a waiting job adds to the peak (a task per job: over 1 KB)


def test_cached_prompt_tokens_reach_the_table_and_the_summary():
    def model(request):
        return LLMResponse(choices=[Choice(message=Message(role="assistant", content="Answer: 7"))] * request.n,
                           usage=Usage(prompt_tokens=10, completion_tokens=3, cached_tokens=6))

    def engine():
        e = Engine(); LLMHandler(FakeLLMClient(model)).attach(e); return e
    res = sw.sweep_sync({"sc": SelfConsistency(samples=1)}, ["a", "b"], engine=engine,
                        check=lambda r, x: r.get("answer") == "7", progress=False)
    assert [r["tokens_cached"] for r in res.rows] == [6, 6] and [r["tokens_in"] for r in res.rows] == [10, 10]
    [s] = res.summary()
    assert (s["prompt_tokens"], s["cached_tokens"]) == (20, 12)
    assert str(res).splitlines()[-1].split() == ["all", "prompt", "tokens", "20,", "cached", "12", "(60%)"]
