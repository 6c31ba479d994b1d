"""The exported package stands on its own: it imports without nbdev (or the widget libraries),
and its wheel carries every module."""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BLOCKED_IMPORT = """
import sys, importlib, pkgutil
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"nbdev", "execnb", "ipywidgets", "graphviz", "IPython"}:
            raise ImportError(f"{name} is blocked in this test")
sys.meta_path.insert(0, Block())
import reasoning_kit
mods = [m.name for m in pkgutil.walk_packages(reasoning_kit.__path__, "reasoning_kit.")
        if not m.name.startswith("reasoning_kit.viz")]
for m in mods: importlib.import_module(m)
from reasoning_kit.algos import Agent, Debate, Reflexion, Swarm, TreeOfThoughts
print(len(mods))
"""


def test_every_module_but_viz_imports_without_nbdev_or_widgets():
    proc = subprocess.run([sys.executable, "-c", BLOCKED_IMPORT], capture_output=True, text=True, timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip()) >= 10


def _build_backend_is_new_enough():
    "The builds below run without isolation (no network): the setuptools installed here is the backend, so it must be the one pyproject.toml asks for."
    import re, tomllib
    from importlib.metadata import version
    need = next(r for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"] if r.startswith("setuptools"))
    have, want = tuple(int(x) for x in re.findall(r"\d+", version("setuptools"))[:2]), tuple(int(x) for x in re.findall(r"\d+", need)[:2])
    assert have >= want, f"setuptools {version('setuptools')} is older than the build needs ({need}): pip install -e '.[dev]' brings it"


def test_the_dev_extra_carries_the_build_backend():
    import tomllib
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    need = next(r for r in meta["build-system"]["requires"] if r.startswith("setuptools"))
    assert need in meta["project"]["optional-dependencies"]["dev"], "a plain venv with .[dev] could not build without isolation"
    _build_backend_is_new_enough()


def test_the_wheel_contains_every_module(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("reasoning_kit-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {str(p.relative_to(ROOT)) for p in (ROOT / "reasoning_kit").rglob("*.py") if "__pycache__" not in p.parts}
    assert sources <= names, f"missing from the wheel: {sorted(sources - names)}"


def test_the_wheel_carries_the_license(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    names = zipfile.ZipFile(next(tmp_path.glob("reasoning_kit-*.whl"))).namelist()
    lic = [n for n in names if n.endswith("LICENSE")]
    assert lic, names
    text = zipfile.ZipFile(next(tmp_path.glob("reasoning_kit-*.whl"))).read(lic[0]).decode()
    assert "Apache License" in text and "Version 2.0" in text


def test_the_sdist_carries_notebooks_examples_tests_and_fixtures(tmp_path):
    import tarfile
    proc = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "No module named build" in proc.stderr:
        import pytest; pytest.skip("the build package is not installed")
    assert proc.returncode == 0, proc.stderr[-2000:]
    sdist = tarfile.open(next(tmp_path.glob("reasoning_kit-*.tar.gz")))
    names = sdist.getnames()
    for want in ["/LICENSE", "/nbs/04_tools.ipynb", "/examples/four_algorithms.py", "/tests/test_packaging.py", "/tests/fixtures/memory_v1.jsonl",
                 "/tests/tiny_gguf.py", "/scripts/llama_server.sh", "/tests/fixtures/cassettes/toolloop_weather_aimock.json"]:
        assert any(n.endswith(want) for n in names), want
    # and its tests pass from the unpacked sdist alone, importing the package from there (not from this checkout)
    sdist.extractall(tmp_path / "unpacked", filter="data")
    root = next((tmp_path / "unpacked").iterdir())
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_example.py", "tests/test_layers.py",
                          "tests/test_clients_cassettes.py"], cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and " passed" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    probe = subprocess.run([sys.executable, "-c", "import reasoning_kit; print(reasoning_kit.__file__)"], cwd=root,
                           env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip().startswith(str(root)), probe.stdout


def test_llms_txt_and_the_package_docstring_list_every_module():
    "nbdev lists a module when its notebook's description is more than a one-liner; packages (`__init__`) and `__main__` are the exceptions."
    import reasoning_kit
    mods = sorted(".".join(("reasoning_kit", *p.relative_to(ROOT / "reasoning_kit").with_suffix("").parts))
                  for p in (ROOT / "reasoning_kit").rglob("*.py") if not p.name.startswith("_"))
    llms, doc = (ROOT / "nbs" / "llms.txt").read_text(), reasoning_kit.__doc__
    assert len(mods) >= 30
    missing = sorted({m for m in mods if f"[{m}]" not in llms or f"`{m}`" not in doc})
    assert not missing, (f"not listed: {missing}; give each notebook's `> description` two lines (nbdev lists a module whose "
                         "docstring is more than its summary and Docs: link), then nbdev-export")
