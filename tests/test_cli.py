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


# --- issue 14: every bad input exits 2 with one line naming the file, the line and the problem
import asyncio as _asyncio, json as _json, os as _os, subprocess as _sp, sys as _sys
from pathlib import Path as _Path

import pytest as _pytest

_ROOT = _Path(__file__).resolve().parents[1]

def _cli(*args, cwd):
    env = {**_os.environ, "PYTHONPATH": str(_ROOT)}
    return _sp.run([_sys.executable, "-m", "reasoning_kit", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)

@_pytest.fixture(scope="module")
def tree_lines(tmp_path_factory):
    from reasoning_kit.__main__ import demo
    d = tmp_path_factory.mktemp("logs")
    _asyncio.run(demo(str(d), out=open(_os.devnull, "w")))
    return (d / "tree.jsonl").read_text().splitlines()

def _edit(lines, i, f):
    d = _json.loads(lines[i]); f(d); return lines[:i] + [_json.dumps(d)] + lines[i + 1:]

BAD = {
    "unknown_key": (lambda ls: _edit(ls, 1, lambda d: d["data"]["config"].update(zzz_new=1)), ":2: ", "unknown config key 'zzz_new'"),
    "bad_type": (lambda ls: _edit(ls, 1, lambda d: d["data"]["config"].update(depth={"x": []})), ":2: ", "depth"),
    "bad_value": (lambda ls: _edit(ls, 1, lambda d: d["data"]["config"].update(width=-5)), ":2: ", "width"),
    "deep": (lambda ls: ls + ['{"seq": 99, "kind": "x", "data": {"a": ' + "[" * 100000 + "]" * 100000 + "}}"], "", "nested too deeply"),
    "no_schema": (lambda ls: ['{"format": "reasoning_kit.log"}'] + ls[1:], ":1: ", "no schema version"),
}

@_pytest.mark.parametrize("name", sorted(BAD))
def test_bad_logs_exit_2_with_one_line(name, tree_lines, tmp_path):
    make, where, what = BAD[name]
    (tmp_path / f"{name}.jsonl").write_text("\n".join(make(tree_lines)) + "\n")
    p = _cli("result", f"{name}.jsonl", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    line = p.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert f"{name}.jsonl{where}" in line and what in line, line
    assert str(tmp_path) not in line  # no absolute paths

def test_control_characters_are_escaped(tree_lines, tmp_path):
    ls = _edit(tree_lines, 2, lambda d: d.update(key="tot/\x1b[31m\ud800"))
    (tmp_path / "ansi.jsonl").write_text("\n".join(ls) + "\n")
    for cmd in ("events", "result"):
        p = _cli(cmd, "ansi.jsonl", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert "\x1b" not in p.stdout and "\x1b" not in p.stderr
    assert "\\x1b[31m" in _cli("events", "ansi.jsonl", cwd=tmp_path).stdout

def test_result_reads_answer(tree_lines, tmp_path):
    (tmp_path / "t.jsonl").write_text("\n".join(tree_lines) + "\n")
    out = _json.loads(_cli("result", "t.jsonl", cwd=tmp_path).stdout)
    assert out["answer"] == out["result"]["answer"] and out["answer"]

@_pytest.mark.parametrize("target", ["afile", "/proc/no/such/dir"])
def test_demo_logs_on_a_file_or_unwritable_path(target, tmp_path):
    (tmp_path / "afile").write_text("x")
    p = _cli("demo", "--logs", target, cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and target in p.stderr and "cannot write logs" in p.stderr
