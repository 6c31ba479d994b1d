"The sandbox runner against the escapes issue 14 found in an in-process check."
import asyncio, os, stat
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.algos import GenerateTestRepair
from reasoning_kit.llm import FakeLLMClient, LLMHandler
from reasoning_kit.llm.fake import text
from reasoning_kit.engine import Budget, Engine
from reasoning_kit.sandbox import python_tests, run_python
from reasoning_kit.validate import ValidationHandler

SECRET = "sk-test-SANDBOXSECRET123456"
ESCAPE = """
w = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "_wrap_close"][0]
system = w.__init__.__globals__["system"]
environ = w.__init__.__globals__["environ"]
print("KEY=" + repr(environ.get("OPENAI_API_KEY")))
system("env > seen.txt; echo ran")
import os; print("files", os.listdir("."))
"""

@pytest.fixture
def planted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

def test_subclasses_escape_reaches_no_key(planted):
    r = asyncio.run(run_python(ESCAPE))
    assert "KEY=None" in r.stdout and "ran" in r.stdout  # os.system runs, but in an empty environment
    assert SECRET not in r.stdout + r.stderr and "SANDBOX" not in r.stdout

def test_parent_environ_via_proc(planted):
    code = "import os\ntry: print(open(f'/proc/{os.getppid()}/environ').read())\nexcept Exception as e: print('refused', type(e).__name__)"
    r = asyncio.run(run_python(code))
    assert SECRET not in r.stdout
    if os.geteuid() == 0:  # as root, the child runs as nobody (a system Python when this one is under /root)
        assert r.user == "nobody" and "refused PermissionError" in r.stdout, (r.user, r.stdout, r.stderr)


def test_as_root_the_child_cannot_read_roots_files(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only a root parent drops the child to nobody")
    secret_file = tmp_path / "key.txt"; secret_file.write_text(SECRET); secret_file.chmod(0o600)
    code = f"try: print(open({str(secret_file)!r}).read())\nexcept Exception as e: print('refused', type(e).__name__)\nimport os; print(os.getuid())"
    r = asyncio.run(run_python(code))
    assert SECRET not in r.stdout and "refused PermissionError" in r.stdout and "65534" in r.stdout


def test_a_fork_bomb_is_bounded():
    if os.geteuid() != 0:
        pytest.skip("the process limit is set for nobody only (a user's own limit would count all its processes)")
    code = ("import os, time\npids = []\ntry:\n    for _ in range(500):\n        pid = os.fork()\n"
            "        if pid == 0: time.sleep(2); os._exit(0)\n        pids.append(pid)\n    print('forked', len(pids))\n"
            "except OSError: print('refused after', len(pids))")
    r = asyncio.run(run_python(code, seconds=5))
    assert r.stdout.startswith("refused after") and int(r.stdout.split()[-1]) < 64, r.stdout + r.stderr

def test_test_strings_run_in_the_sandbox(tmp_path, planted):
    "input['tests'] strings are evaluated in the child, never in the caller."
    probe = "__import__('os').environ.get('OPENAI_API_KEY')"
    ok, why = asyncio.run(python_tests("def f(): return 1", [[probe, "a key"]]))
    assert not ok and SECRET not in why and why.endswith("got None")  # evaluated where there is no key

def test_memory_limit():
    r = asyncio.run(run_python("x = bytearray(1 << 30)\nprint('allocated')", memory_mb=128))
    assert r.returncode != 0 and "allocated" not in r.stdout and "MemoryError" in r.stderr

def test_wall_limit_kills_busy_loop():
    r = asyncio.run(run_python("while True: pass", seconds=1))
    assert r.timed_out and r.returncode is None

@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=4))
def test_python_tests_judges_like_python(xs):
    tests = [[f"f({x})", x * 2 + (x == 7)] for x in xs]
    ok, why = asyncio.run(python_tests("def f(x): return 2 * x", tests))
    assert ok == (7 not in xs)
    if not ok: assert "f(7)" in why

def _pidfile_code(path):
    return f"import os\nopen({str(path)!r}, 'w').write(str(os.getpid()))\nwhile True: pass\n"

def test_budget_seconds_kills_the_child(tmp_path):
    "while True against Budget(seconds=2): the run ends out of time and the child process is gone."
    import tempfile
    shared = tempfile.mkdtemp(dir="/tmp"); os.chmod(shared, 0o777)  # a child running as nobody can write here
    pidfile = Path(shared) / "pid"
    code = _pidfile_code(pidfile)
    async def check(answer, ctx): return await python_tests(answer, ctx["input"]["tests"], seconds=120)
    async def go():
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lambda req: text(f"```python\n{code}```"))).attach(engine)
            ValidationHandler({"tests": check}).attach(engine)
            return await engine.run(GenerateTestRepair("tests", max_repairs=0), {"task": "loop", "tests": [["1", 1]]},
                                    budget=Budget(seconds=2))
    out = asyncio.run(go())
    assert out.status.value != "done"
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError): os.kill(pid, 0)
