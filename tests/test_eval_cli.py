"""sweep_from_file: the experiment file `reasoning-kit eval FILE` runs (the CLI subcommand needs the
integrator's wiring in 34_cli; these tests call the library function directly)."""
import json

import pytest

from reasoning_kit.sweep import format_summary, sweep_from_file


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


def cli(*args, cwd=None):
    import subprocess, sys
    return subprocess.run([sys.executable, "-m", "reasoning_kit", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


GOOD = {"tasks": {"game24": [900, 901]}, "model": "scripted:game24", "check": "game24",
        "configs": {"b1": {"algorithm": "TreeOfThoughts", "depth": 4, "width": 1, "branching": 4, "generate": "propose",
                           "evaluate": "value", "n_evaluate": 1, "stop_score": None, "prompts": "game24"}}}
b1 = GOOD["configs"]["b1"]


@pytest.mark.parametrize("name,spec,says", [
    ("modle", {**GOOD, "modle": "x"}, "modle: unknown key (did you mean 'model'?); accepted: configs, tasks, model"),
    ("concurency", {**GOOD, "concurency": 2}, "concurency: unknown key (did you mean 'concurrency'?)"),
    ("widht", {**GOOD, "configs": {"b1": {**b1, "widht": 2}}}, "configs.b1.widht: not a setting of TreeOfThoughts (did you mean 'width'?)"),
    ("no configs", {k: v for k, v in GOOD.items() if k != "configs"}, "configs: missing: a table of label"),
    ("no tasks", {k: v for k, v in GOOD.items() if k != "tasks"}, "tasks: missing"),
    ("tasks string", {**GOOD, "tasks": "game24"}, 'tasks: a list of tasks, a task set with its arguments such as {"game24": [start, stop]}, or "module:function" returning a list, got "game24"'),
    ("top-level list", [GOOD], "an experiment is a table of keys (configs, tasks"),
    ("range [900]", {**GOOD, "tasks": {"game24": [900]}}, "tasks.game24: a range [start, stop] of the puzzles, whole numbers with 0 <= start < stop <= 1362, got [900]"),
    ("unknown model", {**GOOD, "model": "gpt-5"}, "model: 'gpt-5' names no provider"),
    ("unknown provider", {**GOOD, "model": "opneai:gpt-4o"}, "model: 'opneai' is no provider ("),
    ("bad concurrency", {**GOOD, "concurrency": 0}, "concurrency: a whole number from 1 to 1024, got 0"),
])
def test_a_bad_experiment_file_is_one_line_before_anything_runs(tmp_path, name, spec, says):
    f = tmp_path / "exp.json"
    f.write_text(json.dumps({**spec, "dir": "out"} if isinstance(spec, dict) else spec))
    r = cli("eval", str(f))
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    assert r.stderr == f"reasoning-kit: error: {f}: {says}" + r.stderr.split(says, 1)[1] and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()  # nothing ran, no directory made


def test_yaml_given_to_the_json_reader_and_a_yaml_file_are_named(tmp_path):
    f = tmp_path / "exp.json"; f.write_text("configs:\n  b1:\n    algorithm: TreeOfThoughts\n")
    r = cli("eval", str(f))
    assert r.returncode == 2 and r.stderr.strip() == (f"reasoning-kit: error: {f}: line 1: not valid JSON (Expecting value at column 1): "
                                                       "this looks like YAML, which is not read; write JSON, or TOML in a .toml file")
    y = tmp_path / "exp.yaml"; y.write_text("configs: {}\n")
    r = cli("eval", str(y))
    assert r.returncode == 2 and "YAML is not read: write the experiment as JSON (.json) or TOML (.toml)" in r.stderr


MINE = '''
import asyncio
from reasoning_kit.models.fake import text
def model(request):
    assert request.role == "sampler", request.role
    return text("Answer: 4")
async def slow(request):
    await asyncio.sleep(0.3)
    return text("Answer: 4")
def broken(request): raise IndexError("no reply scripted for this prompt")
def tasks(): return [f"What is {i} + {4 - i}?" for i in range(5)]
def many(): return [f"What is 2 + 2? ({i})" for i in range(12)]
def check(result, input): return result["answer"] == "4"
'''


def mine(tmp_path, **kw):
    (tmp_path / "mine.py").write_text(MINE)
    f = tmp_path / "exp.json"
    f.write_text(json.dumps({"tasks": "mine:tasks", "model": "mine:model", "check": "mine:check", "dir": "out",
                             "configs": {"sc-3": {"algorithm": "SelfConsistency", "samples": 3}}, **kw}))
    return f


def test_your_own_scripted_model_check_and_tasks_by_module_function(tmp_path):
    r = cli("eval", str(mine(tmp_path)), cwd="/")  # the module is found beside the file, whatever the working directory
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith("sc-3"))
    assert line.split()[1:5] == ["5", "100.0%", "0", "0"]  # items, accuracy, failed, errored
    bad = cli("eval", str(mine(tmp_path, check="mine:nothing")))
    assert bad.returncode == 2 and "check: module 'mine' has no function 'nothing'" in bad.stderr


def test_a_configuration_whose_items_all_failed_is_flagged_and_exits_non_zero(tmp_path):
    f = mine(tmp_path, model="mine:broken")
    r = cli("eval", str(f))
    assert r.returncode == 1, (r.returncode, r.stderr)
    row = next(l for l in r.stdout.splitlines() if l.startswith("sc-3"))
    assert row.split()[1:5] == ["5", "0.0%", "5", "0"]  # the 0% sits beside 5 failed items
    assert "sc-3: ALL 5 ITEMS FAILED: its accuracy measures nothing; first error: RuntimeError" in r.stdout
    assert "IndexError" in r.stdout and "every item failed in sc-3 (5 of 5)" in r.stderr and "Traceback" not in r.stderr


def test_ctrl_c_stops_cleanly_and_the_same_command_continues(tmp_path):
    import signal, subprocess, sys, time
    f = mine(tmp_path, tasks="mine:many", model="mine:slow", concurrency=1)
    p = subprocess.Popen([sys.executable, "-m", "reasoning_kit", "eval", str(f)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows, t0 = tmp_path / "out" / "rows.jsonl", time.monotonic()
    while not (rows.exists() and len(rows.read_text().splitlines()) >= 2):
        assert p.poll() is None and time.monotonic() - t0 < 120, p.communicate()
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    kept = len(rows.read_text().splitlines())
    assert p.returncode == 130 and "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().endswith(f"reasoning-kit: stopped: {kept} of 12 items are finished and kept in {tmp_path / 'out'}; "
                                "run the same command again to continue from there"), err
    assert 2 <= kept < 12
    again = cli("eval", str(f))
    assert again.returncode == 0 and next(l for l in again.stdout.splitlines() if l.startswith("sc-3")).split()[1:3] == ["12", "100.0%"]
    assert len(rows.read_text().splitlines()) == 12  # the kept rows were not run again
