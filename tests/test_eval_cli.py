"""sweep_from_file: the experiment file `reasoning-kit eval FILE` runs (the CLI subcommand needs the
integrator's wiring in 34_cli; these tests call the library function directly)."""
import json

import pytest

from reasoning_kit.eval import format_summary, sweep_from_file


def experiment(tmp_path):
    "A small experiment file: ToT with a beam of one on two of the paper's puzzles, scripted."
    f = tmp_path / "exp.json"
    f.write_text(json.dumps({"tasks": {"game24": [900, 902]}, "model": "scripted:game24", "check": "game24", "dir": "out",
                             "configs": {"b1": {"algorithm": "TreeOfThoughts", "depth": 4, "width": 1, "branching": 4,
                                                "generate": "propose", "evaluate": "value", "n_evaluate": 1,
                                                "stop_score": None, "prompts": "game24"}}}))
    return f


def test_json_experiment_file(tmp_path):
    f = experiment(tmp_path)
    res = sweep_from_file(f)
    assert [r["correct"] for r in res.rows] == [True, True]
    assert (tmp_path / "out" / "table.csv").exists()
    text = format_summary(res.summary())
    assert text.splitlines()[1].startswith("b1") and "100.0%" in text


def test_unknown_algorithm_is_named(tmp_path):
    f = tmp_path / "exp.toml"
    f.write_text('tasks = ["4 9 10 13"]\n[configs.x]\nalgorithm = "NoSuch"\n')
    with pytest.raises(ValueError, match="configs.x.algorithm: no algorithm named 'NoSuch'"):
        sweep_from_file(f)


def test_reasoning_kit_eval_prints_the_summary_and_resumes(tmp_path):
    import subprocess, sys
    f = experiment(tmp_path)
    cli = lambda *a: subprocess.run([sys.executable, "-m", "reasoning_kit", *a], capture_output=True, text=True, timeout=120)
    first, again = cli("eval", str(f)), cli("eval", str(f))  # the second reads the finished directory back
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert "b1" in first.stdout and "100.0%" in first.stdout and again.stdout == first.stdout
    missing = cli("eval", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "no such experiment file" in missing.stderr and "Traceback" not in missing.stderr
