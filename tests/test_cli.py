"""The command line, run as a user runs it: `python -m reasoning_kit ...` in a subprocess, on the
frozen v0.1 fixture logs."""
import json
import subprocess
import sys

from reasoning_kit.events import Log
from reasoning_kit.__main__ import main

from _support import FIXTURES

LOG = FIXTURES / "reflexion_v0.1.jsonl"


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "reasoning_kit", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def test_events_lists_every_event_in_order():
    p = cli("events", LOG)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    events = Log.read(LOG)
    assert len(lines) == len(events)
    assert [(int(l.split()[0]), l.split()[1], l.split()[2]) for l in lines] == [(e.seq, e.kind, e.key or "-") for e in events]
    assert '"algorithm":"reflexion"' in lines[0]


def test_events_kind_filter_and_width():
    p = cli("events", LOG, "--kind", "llm.", "--width", "20")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines and all(l.split()[1].startswith("llm.") for l in lines)
    assert all(len(l.split(None, 3)[3]) <= 20 for l in lines)


def test_result_folds_the_frozen_log_to_its_expected_result():
    for name in ("reflexion", "debate", "swarm", "self_consistency", "generate_test_repair"):
        p = cli("result", FIXTURES / f"{name}_v0.1.jsonl")
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        expected = json.loads((FIXTURES / f"{name}_v0.1.expected.json").read_text())
        assert out["status"] == expected.get("status", "ok") and out["result"] == expected.get("value", expected.get("result")), name


def test_corrupt_line_is_named_with_exit_code_2(tmp_path):
    lines = LOG.read_text().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(lines[:6]) + "{not json\n" + "".join(lines[7:]))
    for command in ("events", "result"):
        p = cli(command, bad)
        assert p.returncode == 2
        assert f"{bad}:7: not valid JSON" in p.stderr and "Traceback" not in p.stderr


def test_truncated_log_needs_repair(tmp_path):
    cut = tmp_path / "cut.jsonl"
    text = LOG.read_text()
    cut.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 15])  # the last event cut short
    p = cli("result", cut)
    assert p.returncode == 2 and "truncated" in p.stderr and "repair" in p.stderr
    p = cli("result", cut, "--repair")
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "unfinished"


def test_missing_file_and_not_a_log(tmp_path):
    p = cli("events", tmp_path / "nope.jsonl")
    assert p.returncode == 2 and "nope.jsonl: no such file" in p.stderr
    other = tmp_path / "other.jsonl"
    other.write_text('{"hello": 1}\n')
    p = cli("result", other)
    assert p.returncode == 2 and "not a reasoning_kit log" in p.stderr
    p = cli("frobnicate")
    assert p.returncode == 2 and "invalid choice" in p.stderr


def test_demo_writes_logs_that_result_reads(tmp_path):
    p = cli("demo", "--logs", tmp_path)
    assert p.returncode == 0, p.stderr
    assert [l.split()[:2] for l in p.stdout.splitlines()] == [["reflexion", "ok"], ["debate", "ok"], ["swarm", "ok"], ["tree", "ok"]]
    assert sorted(f.name for f in tmp_path.iterdir()) == ["debate.jsonl", "reflexion.jsonl", "swarm.jsonl", "tree.jsonl"]
    out = json.loads(cli("result", tmp_path / "swarm.jsonl").stdout)
    assert out["algorithm"] == "swarm" and out["result"]["agent"] == "billing"


def test_main_in_process(capsys):
    assert main(["result", str(LOG)]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 5
