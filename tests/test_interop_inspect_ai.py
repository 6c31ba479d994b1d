"""The inspect_ai bridge, offline with inspect's own mock model: an algorithm runs as an inspect solver, every model
call goes through inspect's model, inspect scores the result's answer, and the run's log rides in the sample's metadata."""
import os

import pytest

pytest.importorskip("inspect_ai")
os.environ.setdefault("INSPECT_DISPLAY", "none")

from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match

from reasoning_kit.algos import Debate, SelfConsistency
from reasoning_kit.core.events import Log
from reasoning_kit.apps.inspect_ai import reasoning_kit_solver
from reasoning_kit.engine import fold_run


def mock_model(answers):
    "mockllm/model answering from `answers` in turn (usage given, so inspect counts no tokens)."
    seen = []
    def out(messages, tools, tool_choice, config):
        seen.append([m.text for m in messages])
        o = ModelOutput.from_content("mockllm/model", f"Answer: {answers[(len(seen) - 1) % len(answers)]}")
        o.usage = ModelUsage(input_tokens=3, output_tokens=2, total_tokens=5)
        return o
    return get_model("mockllm/model", custom_outputs=out), seen


@pytest.mark.parametrize("algorithm, calls", [(SelfConsistency(samples=3, mode="separate"), 3), (Debate(agents=2, rounds=0, judge=False), 2)])
def test_an_algorithm_runs_as_an_inspect_solver(tmp_path, algorithm, calls):
    model, seen = mock_model(["42", "41", "42"])
    task = Task(dataset=[Sample(input="What is 6 * 7?", target="42")], solver=reasoning_kit_solver(algorithm), scorer=match())
    log = inspect_eval(task, model=model, log_dir=str(tmp_path))[0]
    assert log.status == "success", log.error
    s = log.samples[0]
    meta = s.metadata["reasoning_kit"]
    assert len(seen) == calls == meta["calls"]  # every call went through inspect's model
    assert any("What is 6 * 7?" in t for t in seen[0])
    run = Log.from_jsonl(meta["log"])
    assert fold_run(run).status == meta["status"] == "ok" and sum(e.kind == "llm.result" for e in run) == calls
    assert s.output.completion == meta["result"]["answer"]
    if isinstance(algorithm, SelfConsistency): assert s.scores["match"].value == "C"  # the majority, 42, scored right
