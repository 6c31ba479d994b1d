"""Issue 14, a Memory file under crashes and concurrency, with real processes: kill -9 at random points while
notes are written never leaves an unreadable file; two processes adding at once lose nothing; a lock held too
long is a clear error; secrets never reach the file."""
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.effects.memory import Memory, MemoryLocked, known_secrets, scrub_known

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

WRITER = """
import sys
from reasoning_kit.effects.memory import Memory
m = Memory(sys.argv[1])
print("ready", flush=True)
for i in range(int(sys.argv[3])):
    m.add(f"{sys.argv[2]} note {i} " + "filler words " * 40, tags=[sys.argv[2]])
"""


def writer(path, who, n):
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), who, str(n)], env=ENV, stdout=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    "A memory file with 200 notes, copied fresh for each kill."
    p = tmp_path_factory.mktemp("seed") / "m.jsonl"
    m = Memory(p)
    for i in range(200):
        m.add(f"seed note {i} " + "filler words " * 40)
    return p.read_bytes()


def forked_writer(path: Path, durability: str = "fsync") -> int:
    "A child process (forked: no new interpreter to start) adding notes to `path` until it is killed."
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            m = Memory(path, durability=durability)
            os.write(w, b"r")
            for i in range(100_000):
                m.add(f"w note {i} " + "filler words " * 40)
        finally:
            os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"r"
    os.close(r)
    return pid


@settings(max_examples=30, deadline=None)
@given(delay=st.floats(0.0, 0.2), durability=st.sampled_from(["fsync", "flush"]))
def test_kill_9_mid_write_never_leaves_an_unreadable_file(seeded, tmp_path_factory, delay, durability):
    p = tmp_path_factory.mktemp("kill") / "m.jsonl"
    p.write_bytes(seeded)
    pid = forked_writer(p, durability)
    time.sleep(delay)
    os.kill(pid, 9); os.waitpid(pid, 0)
    m = Memory(p)  # no repair needed: the old file or the new one, never half of one
    assert len(m) >= 200 and [n.n for n in m] == list(range(len(m)))
    assert all(n.text.startswith(("seed note", "w note")) for n in m)


def test_two_processes_adding_at_once_lose_nothing(tmp_path):
    p = tmp_path / "shared.jsonl"
    Memory(p)
    procs = [writer(p, who, 60) for who in ("alice", "bob")]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    m = Memory(p)
    assert len(m) == 120 and [n.n for n in m] == list(range(120))
    for who in ("alice", "bob"):
        assert [n.text.split()[2] for n in m if n.tags == [who]] == [str(i) for i in range(60)]
    assert sorted(x.name for x in tmp_path.iterdir()) == [".shared.jsonl.lock", "shared.jsonl"]  # no temporary files left


def test_a_store_opened_earlier_sees_notes_added_by_another_process_before_writing(tmp_path):
    p = tmp_path / "m.jsonl"
    early = Memory(p)
    early.add("first")
    assert writer(p, "other", 3).wait(timeout=60) == 0
    assert early.add("after the others").n == 4  # read again under the lock: nothing overwritten
    assert [n.text.split()[0] for n in Memory(p)] == ["first", "other", "other", "other", "after"]


HOLDER = """
import fcntl, sys, time
f = open(sys.argv[1], "a"); fcntl.flock(f.fileno(), fcntl.LOCK_EX); print("held", flush=True); time.sleep(60)
"""


def test_a_lock_held_too_long_is_a_clear_error(tmp_path):
    p = tmp_path / "m.jsonl"
    m = Memory(p, lock_timeout=0.3)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / ".m.jsonl.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(MemoryLocked, match=r"m.jsonl: another process has been writing it for over 0.3 s"):
            m.add("blocked")
    finally:
        holder.kill(); holder.wait()
    assert m.add("now it can").n == 0 and len(Memory(p)) == 1
    with pytest.raises(ValueError, match="lock_timeout"):
        Memory(p, lock_timeout=-1)
    with pytest.raises(ValueError, match="durability must be one of 'fsync', 'flush'"):
        Memory(p, durability="sometimes")


def test_secrets_are_scrubbed_before_writing(tmp_path, monkeypatch):
    key, given_key = "sk-test-MEMORYSECRET-9a8b7c6d", "client-key-5f4e3d2c1b"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    assert key in known_secrets()
    p = tmp_path / "m.jsonl"
    m = Memory(p, secrets=[given_key])
    m.add(f"upstream echoed Authorization: Bearer {key} and {given_key[:12]}", about=f"task with {key[3:15]}")
    raw = p.read_text()
    for s in (key, given_key):
        assert not any(s[i:i + 8] in raw for i in range(len(s) - 7))
    assert "Bearer ***" in raw and m.notes[0].text.startswith("upstream echoed Authorization: Bearer ***")
    assert scrub_known("nothing secret here") == "nothing secret here"
