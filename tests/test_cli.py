"""The command line, run as a user runs it: `python -m reasoning_kit ...` in a subprocess, on the
frozen v0.1 fixture logs."""
import json
import subprocess
import sys

from reasoning_kit.core.events import Log
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


ADDED_SINCE_FROZEN = {"debate": {"texts"}, "self_consistency": {"texts"}}  # the raw replies beside the answers (#35)


def test_result_folds_the_frozen_log_to_its_expected_result():
    for name in ("reflexion", "debate", "swarm", "self_consistency", "generate_test_repair"):
        p = cli("result", FIXTURES / f"{name}_v0.1.jsonl")
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        expected = json.loads((FIXTURES / f"{name}_v0.1.expected.json").read_text())
        added = ADDED_SINCE_FROZEN.get(name, set())  # result keys added since the log was frozen (each checked in its own test)
        assert set(out["result"]) - set(expected.get("value", expected.get("result"))) == added, name
        kept = {k: v for k, v in out["result"].items() if k not in added}
        assert out["status"] == expected.get("status", "ok") and kept == expected.get("value", expected.get("result")), name


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


# ---- issue 14: more bad inputs, each named by file and line ---------------------------------------

def _first(lines, kind):
    return next(i for i, l in enumerate(lines) if _json.loads(l).get("kind") == kind)

MORE = {
    "llm_result": (lambda ls: _edit(ls, _first(ls, "llm.result"), lambda d: d["data"].update(result={"choices": "x"})),
                   lambda ls: f":{_first(ls, 'llm.result') + 1}: ", "llm.result is malformed: choices"),
    "no_parent": (lambda ls: _edit(ls, _first(ls, "tot.proposed"), lambda d: d["data"].pop("parent")),
                  lambda ls: f":{_first(ls, 'tot.proposed') + 1}: ", "lacks the field 'parent'"),
    "config_str": (lambda ls: _edit(ls, 1, lambda d: d["data"].update(config="x")), lambda ls: ":2: ", "config must be a JSON object"),
}

@_pytest.mark.parametrize("name", sorted(MORE))
def test_more_bad_logs_name_the_line(name, tree_lines, tmp_path):
    make, where, what = MORE[name]
    (tmp_path / f"{name}.jsonl").write_text("\n".join(make(tree_lines)) + "\n")
    p = _cli("result", f"{name}.jsonl", cwd=tmp_path)
    line = p.stderr.strip()
    assert p.returncode == 2 and "\n" not in line and "Traceback" not in line, p.stderr
    assert f"{name}.jsonl{where(tree_lines)}" in line and what in line, line

def test_bytes_that_are_not_utf8_are_named_by_line(tree_lines, tmp_path):
    raw = ("\n".join(tree_lines[:3]) + "\n").encode() + b'{"seq": 2, "kind": "x", "key": "\xed\xa0\x80", "data": {}}\n'
    (tmp_path / "bytes.jsonl").write_bytes(raw)
    for cmd in ("events", "result"):
        p = _cli(cmd, "bytes.jsonl", cwd=tmp_path)
        assert p.returncode == 2 and "bytes.jsonl:4: not UTF-8 text" in p.stderr and "Traceback" not in p.stderr

RSS = """
import resource, runpy, sys
sys.argv = ["reasoning-kit", *sys.argv[1:]]
try: runpy.run_module("reasoning_kit", run_name="__main__")
except SystemExit: pass
finally: print("maxrss", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""

def _peak_kb(*args, cwd):
    env = {**_os.environ, "PYTHONPATH": str(_ROOT)}
    p = _sp.run([_sys.executable, "-c", RSS, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    return p, int(p.stderr.split("maxrss")[-1].split()[0])

def test_a_big_log_is_streamed_not_read_whole(tree_lines, tmp_path):
    "A 50 MB log: events and result run in a few MB more than a tiny log needs, far below the file's size."
    head, started, rest = tree_lines[0], tree_lines[1], tree_lines[2:]
    filler = "x" * 1000
    with open(tmp_path / "big.jsonl", "w") as f:
        f.write(head + "\n" + started + "\n")
        n = 1
        while f.tell() < 50 << 20:
            f.write(_json.dumps({"seq": n, "at": 0.0, "kind": "note.filler", "key": None, "data": {"text": filler}}) + "\n"); n += 1
        for l in rest:
            d = _json.loads(l); d["seq"] = n; n += 1; f.write(_json.dumps(d) + "\n")
    (tmp_path / "small.jsonl").write_text("\n".join(tree_lines) + "\n")
    size_kb = (tmp_path / "big.jsonl").stat().st_size // 1024
    for cmd in ("result", "events"):
        small, base = _peak_kb(cmd, "small.jsonl", cwd=tmp_path)
        big, peak = _peak_kb(cmd, "big.jsonl", cwd=tmp_path)
        assert small.returncode == big.returncode == 0
        assert peak - base < size_kb // 5, f"{cmd}: peak RSS grew {(peak - base) // 1024} MB for a {size_kb // 1024} MB log"
        if cmd == "result":
            assert _json.loads(big.stdout)["answer"] == _json.loads(small.stdout)["answer"]
        else:
            assert big.stdout.count("\n") == n


# --- serve from the terminal: one line that names the cause (issue 43) ----------------------------


def test_serve_on_a_busy_port_says_so_in_one_line_before_starting_anything(capsys):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); s.listen()
        port = s.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"port {port} on 127.0.0.1 is in use" in err and err.startswith("reasoning-kit serve: ")


def test_serve_names_a_bad_option_once(capsys):
    assert main(["serve", "--slots", "0"]) == 2
    err = capsys.readouterr().err
    assert err == "reasoning-kit serve: slots must be 1 to 64, got 0\n"


def test_every_serve_option_has_help_and_the_description_is_current(capsys):
    import pytest
    with pytest.raises(SystemExit): main(["serve", "--help"])
    out = capsys.readouterr().out
    for opt in ("--slots", "--port", "--context", "--threads"):
        line = next(l for l in out.splitlines() if l.strip().startswith(opt))
        assert len(line.split(opt.upper().lstrip("-"), 1)[-1].strip()) > 10, line  # a help text after the metavar
    with pytest.raises(SystemExit): main(["--help"])
    assert "serve a local model" in capsys.readouterr().out


def test_a_server_that_exits_is_explained_by_its_error_line():
    from reasoning_kit.models.local import _cause
    log = "\n".join(["build: 1 (abc)", "system info: n_threads = 2", "main: loading model",
                     "couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080", "main: exiting due to HTTP server error", ""])
    assert _cause(log) == "couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080"
    assert _cause("") == "its log is empty" and _cause("a\nb\n") == "b"
