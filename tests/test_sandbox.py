"""The sandbox runner against the escapes issues 14 and 33 found: every escape runs under namespace isolation
(bubblewrap) and under the process-only fallback; the fallback must warn, and namespaces must hold."""
import asyncio, inspect, json, os, re, secrets, shutil, subprocess, tempfile, warnings
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from reasoning_kit.effects import sandbox
from reasoning_kit.algos import GenerateTestRepair
from reasoning_kit.models import FakeLLMClient, LLMHandler
from reasoning_kit.models.fake import text
from reasoning_kit.engine import Budget, Engine
from reasoning_kit.effects.sandbox import SandboxUnavailable, SandboxWarning, python_tests, run_python
from reasoning_kit.effects.validate import ValidationHandler

SECRET = "sk-test-SANDBOXSECRET123456"
MODES = ["namespace", "process"]
ESCAPE = """
w = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "_wrap_close"][0]
system = w.__init__.__globals__["system"]
environ = w.__init__.__globals__["environ"]
print("KEY=" + repr(environ.get("OPENAI_API_KEY")))
system("env > seen.txt; echo ran")
import os; print("files", os.listdir("."))
"""

@pytest.fixture(autouse=True)
def quiet_fallback(monkeypatch):
    "The fallback warns once per process; each test starts as if it had not warned yet, and ignores it unless it asks."
    monkeypatch.setattr(sandbox, "_warned", False)
    monkeypatch.delenv("REASONING_KIT_SANDBOX", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SandboxWarning)
        yield

@pytest.fixture
def planted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

def run(code, mode, **kw): return asyncio.run(run_python(code, isolation=mode, **kw))

def test_namespaces_run_here():
    "bubblewrap is installed (CI installs it) and makes namespaces as the user the child runs as: 'auto' picks them."
    assert shutil.which("bwrap"), "install bubblewrap (apt-get install bubblewrap): the isolation tests need it"
    assert asyncio.run(sandbox.namespace_problem(*sandbox.sandbox_python())) == ""
    r = asyncio.run(run_python("print('hi')"))
    assert (r.ok, r.stdout, r.isolation) == (True, "hi\n", "namespace")

# the three escapes of issue 33

def _listener():
    "What a listener on 127.0.0.1 heard, and its connection handler."
    heard = []
    async def listen(reader, writer): heard.append(await reader.read(100)); writer.close()
    return heard, listen

@pytest.mark.parametrize("mode", MODES)
def test_network_escape(mode):
    async def go():
        heard, listen = _listener()
        server = await asyncio.start_server(listen, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        code = ("import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', %d), timeout=2); s.sendall(b'exfiltrated'); s.close(); print('sent')\n"
                "except OSError as e: print('refused', type(e).__name__)" % port)
        r = await run_python(code, isolation=mode)
        await asyncio.sleep(0.3)
        server.close()
        return r, heard
    r, heard = asyncio.run(go())
    assert r.isolation == mode
    if mode == "namespace": assert (r.stdout.startswith("refused"), heard) == (True, []), (r.stdout, heard)
    else: assert (r.stdout, heard) == ("sent\n", [b"exfiltrated"])  # the fallback leaves the network open, as it warns

@pytest.fixture
def project():
    "A project directory anyone may look into, with a .env as the usual umask leaves it (0644)."
    d = Path(tempfile.mkdtemp(dir="/tmp")); d.chmod(0o755)
    (d / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n"); (d / ".env").chmod(0o644)
    yield d
    shutil.rmtree(d)

@pytest.mark.parametrize("mode", MODES)
def test_reading_a_dotenv_outside(project, mode):
    code = f"try: print(open({str(project / '.env')!r}).read())\nexcept OSError as e: print('refused', type(e).__name__)"
    r = run(code, mode)
    if mode == "namespace": assert SECRET not in r.stdout and r.stdout == "refused FileNotFoundError\n", r.stdout
    else: assert SECRET in r.stdout  # the fallback: files its user can read are open, as it warns

@pytest.mark.parametrize("mode", MODES)
def test_writing_outside_the_scratch_dir(project, mode):
    project.chmod(0o777)  # even a directory anyone may write to
    targets = [f"/tmp/rk-escape-{secrets.token_hex(6)}", str(project / "planted.py")]
    code = "for t in %r:\n    try: open(t, 'w').write('x'); print('wrote', t)\n    except OSError as e: print('refused', type(e).__name__)" % targets
    r = run(code, mode)
    written = [t for t in targets if os.path.exists(t)]
    for t in written: os.remove(t)
    if mode == "namespace":  # /tmp inside is its own tmpfs, gone with it; the project does not exist in there
        assert written == [] and r.stdout.splitlines()[1] == "refused FileNotFoundError", r.stdout
    else: assert written == targets

# the escapes issue 14 found, under both

@pytest.mark.parametrize("mode", MODES)
def test_subclasses_escape_reaches_no_key(planted, mode):
    r = run(ESCAPE, mode)
    assert "KEY=None" in r.stdout and "ran" in r.stdout  # os.system runs, but in an empty environment
    assert SECRET not in r.stdout + r.stderr and "SANDBOX" not in r.stdout

@pytest.mark.parametrize("mode", MODES)
def test_parent_environ_via_proc(planted, mode):
    code = (f"import os, glob\nfor p in [f'/proc/{{os.getppid()}}/environ', '/proc/{os.getpid()}/environ', *glob.glob('/proc/*/environ')]:\n"
            "    try: print(p, open(p).read())\n    except OSError as e: print(p, 'refused', type(e).__name__)")
    r = run(code, mode)
    assert SECRET not in r.stdout and f"/proc/{os.getpid()}/environ refused" in r.stdout, r.stdout
    if mode == "namespace": assert f"/proc/{os.getpid()}/environ refused FileNotFoundError" in r.stdout  # its own /proc
    elif os.geteuid() == 0: assert r.user == "nobody" and f"/proc/{os.getpid()}/environ refused PermissionError" in r.stdout

@pytest.mark.parametrize("mode", MODES)
def test_the_child_cannot_read_the_parents_files(tmp_path, mode):
    secret_file = tmp_path / "key.txt"; secret_file.write_text(SECRET); secret_file.chmod(0o600)
    code = f"try: print(open({str(secret_file)!r}).read())\nexcept Exception as e: print('refused', type(e).__name__)\nimport os; print(os.getuid())"
    r = run(code, mode)
    assert SECRET not in r.stdout
    if mode == "namespace": assert "refused FileNotFoundError" in r.stdout
    if os.geteuid() == 0: assert "65534" in r.stdout and r.user == "nobody"
    if os.geteuid() == 0 and mode == "process": assert "refused PermissionError" in r.stdout

@pytest.mark.parametrize("mode", MODES)
def test_a_fork_bomb_is_bounded(mode):
    if os.geteuid() != 0:
        pytest.skip("the process limit is set for nobody only (a user's own limit would count all its processes)")
    code = ("import os, time\npids = []\ntry:\n    for _ in range(500):\n        pid = os.fork()\n"
            "        if pid == 0: time.sleep(2); os._exit(0)\n        pids.append(pid)\n    print('forked', len(pids))\n"
            "except OSError: print('refused after', len(pids))")
    r = run(code, mode, seconds=5)
    assert r.stdout.startswith("refused after") and int(r.stdout.split()[-1]) < 64, r.stdout + r.stderr

@pytest.mark.parametrize("mode", MODES)
def test_memory_limit(mode):
    r = run("x = bytearray(1 << 30)\nprint('allocated')", mode, memory_mb=128)
    assert r.returncode != 0 and "allocated" not in r.stdout and "MemoryError" in r.stderr

@pytest.mark.parametrize("mode", MODES)
def test_wall_limit_kills_busy_loop(mode):
    r = run("while True: pass", mode, seconds=1)
    assert r.timed_out and r.returncode is None and r.isolation == mode

@pytest.mark.parametrize("mode", MODES)
def test_an_output_flood_is_cut_and_drained(mode):
    "Endless output: the parent keeps max_output characters, drains the rest, and the time limit ends it."
    r = run("import sys\nwhile True: sys.stdout.write('x' * 65536); sys.stderr.write('y' * 65536)", mode, seconds=1, max_output=5000)
    assert r.timed_out and (r.stdout, r.stderr) == ("x" * 5000, "y" * 5000)
    r = run("print('x' * 10_000_000)\nprint('the end')", mode, max_output=100)  # a flood that ends: it exits normally
    assert (r.returncode, r.stdout) == (0, "x" * 100)

@pytest.mark.parametrize("mode", MODES)
def test_test_strings_run_in_the_sandbox(planted, mode):
    "input['tests'] strings are evaluated in the child, never in the caller."
    probe = "__import__('os').environ.get('OPENAI_API_KEY')"
    ok, why = asyncio.run(python_tests("def f(): return 1", [[probe, "a key"]], isolation=mode))
    assert not ok and SECRET not in why and why.endswith("got None")  # evaluated where there is no key

@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=4))
def test_python_tests_judges_like_python(xs):
    tests = [[f"f({x})", x * 2 + (x == 7)] for x in xs]
    ok, why = asyncio.run(python_tests("def f(x): return 2 * x", tests))
    assert ok == (7 not in xs)
    if not ok: assert "f(7)" in why

# which isolation runs, and the warning

def test_the_fallback_warns_once_and_says_what_is_open(monkeypatch):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rs = [run("print(1)", "process") for _ in range(2)]
    assert [r.isolation for r in rs] == ["process", "process"]
    assert [w.category for w in caught] == [SandboxWarning], caught  # once, not per run
    msg = str(caught[0].message)
    for words in ("process isolation only", "NOT isolated", "network", ".env", "/tmp", "isolation='namespace'"):
        assert words in msg, (words, msg)

@pytest.mark.parametrize("how", ["env", "switch"])
def test_forcing_the_fallback_with_the_env_var_or_the_switch(monkeypatch, how):
    if how == "env": monkeypatch.setenv("REASONING_KIT_SANDBOX", "process")
    with pytest.warns(SandboxWarning, match="isolation='process' was asked for"):
        r = run("import os; print(sorted(os.listdir('/')))", None if how == "env" else "process")
    assert r.isolation == "process" and "work" in r.stdout  # the host's root, as the warning says

@pytest.fixture
def no_bwrap(monkeypatch):
    "As on a machine without bubblewrap: not on PATH, nothing probed yet."
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sandbox, "_problems", {})

def test_without_bubblewrap_auto_falls_back_with_the_warning(no_bwrap):
    with pytest.warns(SandboxWarning, match=r"bubblewrap \(bwrap\) is not installed"):
        r = run("print(2)", "auto")
    assert (r.stdout, r.isolation) == ("2\n", "process")

@pytest.mark.parametrize("how", ["env", "switch"])
def test_namespace_refuses_to_run_without_bubblewrap(no_bwrap, monkeypatch, tmp_path, how):
    if how == "env": monkeypatch.setenv("REASONING_KIT_SANDBOX", "namespace")
    mark = tmp_path / "ran"; mark.parent.chmod(0o777)
    with pytest.raises(SandboxUnavailable, match="isolation='namespace'.*bwrap\\) is not installed"):
        run(f"open({str(mark)!r}, 'w')", None if how == "env" else "namespace")
    assert not mark.exists()  # nothing ran
    with pytest.raises(SandboxUnavailable): asyncio.run(python_tests("def f(): return 1", [["f()", 1]], isolation="namespace"))

def test_a_bad_isolation_is_named():
    with pytest.raises(ValueError, match="isolation must be one of 'auto', 'namespace', 'process'"): run("", "docker")

def test_an_unprivileged_parent_gets_namespaces_too(tmp_path):
    "The module run by `nobody` with the system Python: no root to drop from, bubblewrap still isolates."
    if os.geteuid() != 0 or not shutil.which("setpriv"): pytest.skip("needs root to become nobody for the check")
    helpers = "\n".join(inspect.getsource(f) for f in (sandbox.check_choice, sandbox.check_float, sandbox.check_int))
    src, n = re.subn(r"^from \.\.core\.checks import check_choice, check_float, check_int$", lambda m: helpers, inspect.getsource(sandbox), flags=re.M)
    assert n == 1, "the sandbox's one relative import (the argument checks) moved: update this test"
    d = Path(tempfile.mkdtemp(dir="/tmp")); d.chmod(0o755)
    try:
        (d / "rk_sandbox.py").write_text(src)
        (d / "main.py").write_text("import asyncio, json, os, rk_sandbox as s\n"
            "r = asyncio.run(s.run_python('import os, socket\\nprint(os.getuid(), sorted(os.listdir(\"/\")))\\n'"
            "'try: socket.create_connection((\"127.0.0.1\", 9), timeout=1)\\nexcept OSError as e: print(type(e).__name__)'))\n"
            "print(json.dumps([r.isolation, r.user, r.stdout]))")
        p = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "/usr/bin/python3", "-E", "-s", "main.py"],
                           cwd=d, env={}, capture_output=True, text=True, timeout=60)
    finally: shutil.rmtree(d)
    assert p.returncode == 0, p.stderr[-2000:]
    isolation, user, out = json.loads(p.stdout.splitlines()[-1])
    assert (isolation, user) == ("namespace", "65534"), p.stdout + p.stderr
    assert "work" not in out and "root" not in out and "ConnectionRefusedError" in out, out

# cancellation

def _named_loop_code(name):
    "A busy loop that names its process (its comm), so the test can find it from outside any namespace."
    return f"import ctypes\nctypes.CDLL(None).prctl(15, {name!r}.encode(), 0, 0, 0)\nwhile True: pass\n"

def _pids_named(name):
    found = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and (p / "comm").read_text().strip() == name: found.append(int(p.name))
        except OSError: pass
    return found

@pytest.mark.parametrize("mode", MODES)
def test_budget_seconds_kills_the_child(mode, monkeypatch):
    "while True against Budget(seconds=2): the run ends out of time and the child process is gone."
    monkeypatch.setenv("REASONING_KIT_SANDBOX", mode)
    name = "rk" + secrets.token_hex(6)
    code = _named_loop_code(name)
    seen = set()
    async def check(answer, ctx): return await python_tests(answer, ctx["input"]["tests"], seconds=120)
    async def watch():
        while True: seen.update(_pids_named(name)); await asyncio.sleep(0.1)
    async def go():
        watcher = asyncio.create_task(watch())
        async with Engine() as engine:
            LLMHandler(FakeLLMClient(lambda req: text(f"```python\n{code}```"))).attach(engine)
            ValidationHandler({"tests": check}).attach(engine)
            out = await engine.run(GenerateTestRepair("tests", max_repairs=0), {"task": "loop", "tests": [["1", 1]]},
                                   budget=Budget(seconds=2))
        watcher.cancel()
        return out
    out = asyncio.run(go())
    assert out.status.value != "done"
    assert seen, "the loop never ran"
    assert _pids_named(name) == []  # killed, not left spinning
