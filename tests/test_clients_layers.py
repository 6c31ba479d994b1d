"""Layers and the client protocol: the model vocabulary (models.core, models.fake) imports nothing above it, nor the HTTP clients, no private cross-module imports, the provider
registry found through the package's entry point, one client signature, the scripted model's key."""
import ast
import asyncio
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from reasoning_kit.models import FakeLLMClient, LLMHandler, LLMRequest, user

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "reasoning_kit"
HIGHER_THAN_MODELS = ("engine", "runtime", "llm", "tools", "validate", "effects", "algos", "tasks", "viz", "sweep", "apps", "__main__")
HTTP = ("reasoning_kit.models.clients", "reasoning_kit.models.transport", "reasoning_kit.models.stream", "reasoning_kit.models.wire",
        "reasoning_kit.models.anthropic_wire", "reasoning_kit.models.cassettes", "reasoning_kit.models.providers", "reasoning_kit.models.local")


# the one import walker, shared with tests/test_layers.py (the whole package's layer check)
from test_layers import imports_of, module_name


def modules():
    return sorted(p for p in PKG.rglob("*.py") if p.name != "_modidx.py")


def test_the_walk_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "reasoning_kit" / "models"; pkg.mkdir(parents=True)
    f = pkg / "x.py"
    f.write_text("def f():\n    from .clients import client_for_model\n    from ..engine import Engine\n    import reasoning_kit.algos\n")
    found = [m for m, _, _ in imports_of(f, tmp_path)]
    assert found == ["reasoning_kit.models.clients", "reasoning_kit.engine", "reasoning_kit.algos"]


def test_the_vocabulary_imports_nothing_above_it_nor_the_http_clients():
    bad = []
    for path in (PKG / "models" / "core.py", PKG / "models" / "fake.py", PKG / "models" / "__init__.py"):
        for mod, names, line in imports_of(path):
            parts = mod.split(".")
            if parts[0] == "reasoning_kit":
                targets = [mod] if len(parts) > 1 else [f"reasoning_kit.{n}" for n in names]
                for t in targets:
                    if t.split(".")[1] in HIGHER_THAN_MODELS or t.startswith(HTTP): bad.append(f"{path.relative_to(ROOT)}:{line} imports {t}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("area", ["models"])
def test_no_private_names_imported_from_another_module(area):
    bad = []
    for path in (PKG / area).rglob("*.py"):
        me = module_name(path)
        for mod, names, line in imports_of(path):
            if mod.startswith("reasoning_kit") and mod != me:
                bad += [f"{path.relative_to(ROOT)}:{line} imports {mod}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", [p for p in modules() if p.parts[-2] == "models"], ids=lambda p: str(p.relative_to(PKG)))
def test_no_module_over_550_lines(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 550


def test_no_method_assigned_to_a_class_by_hand():
    for path in (PKG / "models").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        assert not (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id[:1].isupper()), \
                            f"{path.relative_to(ROOT)}:{node.lineno}: use @patch, not Class.method = f"


def test_importing_the_vocabulary_does_not_import_the_http_clients():
    code = "import sys, reasoning_kit.models, reasoning_kit.llm, reasoning_kit.engine; print(any(m.startswith(('httpx', 'reasoning_kit.models.transport', 'reasoning_kit.models.clients')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert out.stdout.strip() == "False", out.stderr


def test_a_model_string_resolves_through_the_declared_entry_point(tmp_path):
    "With the entry point pyproject.toml declares installed, LLMHandler('openai:...') works before anything imports the clients."
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["reasoning_kit.providers"]
    dist = tmp_path / "rk_entry_test-0.0.dist-info"; dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rk-entry-test\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[reasoning_kit.providers]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    code = textwrap.dedent("""
        import sys
        from reasoning_kit.models import LLMHandler
        assert not any(m.startswith('reasoning_kit.models.clients') for m in sys.modules)
        h = LLMHandler('openai:gpt-4o-mini@http://127.0.0.1:9/v1')
        print(type(h.client).__name__, h.client.base_url)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": ""})
    assert out.stdout.strip() == "OpenAIClient http://127.0.0.1:9/v1", out.stderr


def test_an_unknown_provider_is_a_clear_error():
    import reasoning_kit.models.clients  # noqa: F401
    with pytest.raises(LookupError, match="no model provider 'nosuch'"): LLMHandler("nosuch:model")


class Recorder:
    "A client with the one documented signature; records the call it was given."
    def __init__(self): self.calls = []
    async def complete(self, request, call=None):
        self.calls.append(call)
        return await FakeLLMClient(lambda r: "ok").complete(request)


def test_the_handler_always_passes_the_call():
    from reasoning_kit.engine import Engine
    from reasoning_kit.algos import SelfConsistency
    rec = Recorder()
    async def go():
        async with Engine() as engine:
            LLMHandler(rec).attach(engine)
            return await engine.run(SelfConsistency(samples=2, mode="separate"), {"task": "?"})
    asyncio.run(go())
    assert rec.calls and all(getattr(c, "key", None) for c in rec.calls)


def test_a_two_argument_script_sees_each_effect_key():
    from reasoning_kit.engine import Engine
    from reasoning_kit.algos import SelfConsistency
    seen = []
    fake = FakeLLMClient(lambda request, key: seen.append(key) or "Answer: 1")
    async def go():
        async with Engine() as engine:
            LLMHandler(fake).attach(engine)
            return await engine.run(SelfConsistency(samples=3, mode="separate"), {"task": "?"})
    asyncio.run(go())
    assert fake.takes_key and len(seen) == 3 and len(set(seen)) == 3 and all(isinstance(k, str) and k for k in seen)


@pytest.mark.parametrize("fn, expected", [(lambda r: "x", False), (lambda r, k: "x", True), (lambda r, k=None: "x", True),
                                          (lambda *a: "x", True), (lambda r, *, k=None: "x", False)])
def test_the_script_signature_is_decided_once(fn, expected):
    assert FakeLLMClient(fn).takes_key is expected


def test_the_fake_keeps_only_the_last_requests():
    fake = FakeLLMClient(lambda r: "x", keep=5)
    async def go():
        for i in range(100): await fake.complete(LLMRequest(messages=[user(str(i))]))
    asyncio.run(go())
    assert fake.calls == 100 and 5 <= len(fake.requests) <= 10 and fake.requests[-1].messages[0].content == "99"
    assert FakeLLMClient(lambda r: "x", keep=0).requests == []


def test_a_registered_provider_answers_model_strings():
    "The registry alone, without entry points: a provider registered in the test resolves `name:model` strings."
    from reasoning_kit.models import MODEL_PROVIDERS, register_model_provider
    seen = []
    register_model_provider("testprov", lambda s: seen.append(s) or FakeLLMClient(lambda r: f"{s} says hi"))
    try:
        h = LLMHandler("testprov:tiny")
        assert seen == ["testprov:tiny"]
        out = asyncio.run(h.client.complete(LLMRequest(messages=[user("?")])))
        assert out.text == "testprov:tiny says hi"
    finally: MODEL_PROVIDERS.pop("testprov", None)
    with pytest.raises(LookupError, match="testprov"): LLMHandler("testprov:tiny")


def test_the_entry_point_resolves_to_the_clients_registrar():
    import importlib
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["reasoning_kit.providers"]
    mod, _, attr = eps["clients"].partition(":")
    import reasoning_kit.models.clients as clients
    assert getattr(importlib.import_module(mod), attr) is clients.register_providers


def test_the_split_package_still_exports_every_public_name():
    import reasoning_kit.models.clients as clients
    before = ['PROVIDERS', 'settings', 'PRICES', 'RETRY_STATUSES', 'Provider', 'register_provider', 'ModelRef', 'parse_model', 'wire_model', 'Settings', 'Price', 'set_price', 'price_for', 'cost_of', 'ClientError', 'APIError', 'MissingKey', 'ConnectionFailed', 'CallTimeout', 'MalformedResponse', 'StreamTruncated', 'parse_retry_after', 'backoff', 'RateLimiter', 'openai_body', 'parse_arguments', 'parse_openai', 'anthropic_body', 'parse_anthropic', 'sse_events', 'OpenAIStream', 'AnthropicStream', 'HTTPClient', 'PooledTransport', 'OpenAIClient', 'AnthropicClient', 'client_for_model']
    ns = {}; exec("from reasoning_kit.models.clients import *", ns)
    assert [n for n in before if n not in ns] == [] and all(hasattr(clients, n) for n in before)
