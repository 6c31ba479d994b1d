"""The package's layers, checked statically: every import in every module (at any depth, functions too) goes to
the same layer or a lower one, and no module takes another module's private `_name`.

The layers are the package's folders, lowest first: core (events, the packed log, checks, secrets, handlers) < models
(the vocabulary, the scripted client, model strings, the HTTP clients, the local server) < engine < effects (tools,
validate, sandbox, memory) < algos (with answers) < tasks < viz, sweep < apps (session, server, gateway, inspect_ai) <
the command line (`__main__`). The specification's paths (`llm`, `runtime`, `tools`, `validate`) are faces at the
layer of the folder they show, and nothing inside the package imports a face. Only apps and the command line import
viz, so `import reasoning_kit` and a sweep never need a browser's pieces."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "reasoning_kit"
LAYERS = {"core": 0, "models": 1, "llm": 1, "engine": 2, "runtime": 2, "effects": 3, "tools": 3, "validate": 3,
          "algos": 4, "tasks": 5, "viz": 6, "sweep": 6, "apps": 7, "__main__": 8}
FACES = {"llm", "runtime", "tools", "validate"}  # the specification's import paths: re-exports only
# what the package root itself may pull in (it stays light: nothing)
KNOWN_TOP = set(LAYERS) | {"_modidx"}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = ROOT):
    "Every import in a module, at any depth: (absolute module, names taken, line). Relative imports are resolved."
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names: yield a.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            yield base, [a.name for a in node.names], node.lineno
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__"):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                yield node.args[0].value, [], node.lineno


def layer_of(module: str) -> tuple[str, int] | None:
    "The top-level area of a reasoning_kit module and its layer (None for the package root or outside modules)."
    parts = module.split(".")
    if parts[0] != "reasoning_kit" or len(parts) < 2: return None
    return parts[1], LAYERS.get(parts[1], -1)


def lazy_lines(path: Path) -> set[int]:
    "Lines inside a module-level `__getattr__`: imports there run on first use of a name, not at import."
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            return set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return set()


def violations(root: Path = ROOT) -> list[str]:
    "Upward imports and private cross-module imports in every module under `root`/reasoning_kit."
    bad = []
    for path in sorted((root / "reasoning_kit").rglob("*.py")):
        if path.name == "_modidx.py": continue
        me = module_name(path, root)
        mine = layer_of(me)
        for mod, names, line in imports_of(path, root):
            if not mod.startswith("reasoning_kit"): continue
            where = f"{path.relative_to(root)}:{line}"
            targets = [mod] if "." in mod else [f"reasoning_kit.{n}" for n in names if n in KNOWN_TOP]
            for t in targets:
                theirs = layer_of(t)
                if mine and theirs and theirs[1] > mine[1]: bad.append(f"{where} ({mine[0]}) imports higher layer {t}")
                if mine is None and theirs and theirs[0] != "_modidx" and line not in lazy_lines(path):
                    bad.append(f"{where}: the package root imports {t} (keep it light)")
            if mod != me:
                bad += [f"{where} imports private {mod}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
            for t in targets:
                theirs = layer_of(t)
                if mine and theirs and theirs[0] in FACES and mine[0] not in FACES:
                    bad.append(f"{where} ({mine[0]}) imports the face {t}: import the folder behind it")
                if mine and theirs and theirs[0] == "viz" and mine[0] not in ("viz", "apps", "__main__"):
                    bad.append(f"{where} ({mine[0]}) imports viz: only apps and the command line may")
    return bad


def test_every_area_has_a_layer():
    areas = {p.stem if p.is_file() else p.name for p in PKG.iterdir() if (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert areas - {"__init__", "_modidx"} <= set(LAYERS), areas - set(LAYERS)


def test_the_check_catches_upward_function_level_and_private_imports(tmp_path):
    pkg = tmp_path / "reasoning_kit"
    for d in ("models", "algos", "core", "sweep"): (pkg / d).mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "models" / "core.py").write_text("def f():\n    from ..effects.tools import tool\n")
    (pkg / "algos" / "a.py").write_text("from .b import _helper\nfrom reasoning_kit.engine import Engine\n")
    (pkg / "algos" / "b.py").write_text("from . import a\nfrom reasoning_kit.llm import text\n")
    (pkg / "core" / "events.py").write_text("import reasoning_kit.algos\n")
    (pkg / "sweep" / "s.py").write_text("from reasoning_kit.viz import Stepper\n")
    found = violations(tmp_path)
    assert any("models/core.py:2 (models) imports higher layer reasoning_kit.effects.tools" in v for v in found), found
    assert any("private reasoning_kit.algos.b._helper" in v for v in found), found
    assert any("core/events.py:1 (core) imports higher layer reasoning_kit.algos" in v for v in found), found
    assert any("algos/b.py:2 (algos) imports the face reasoning_kit.llm" in v for v in found), found
    assert any("sweep/s.py:1 (sweep) imports viz" in v for v in found), found
    assert len(found) == 5, found  # algos -> engine is downward, algos.b -> algos is the same layer


# Violations tolerated for now (none): nothing in events, llm, clients or runtime may ever appear here.
KNOWN_ELSEWHERE: set[str] = set()  # none left: algos.common and viz.toolloop made the shared pieces public


def test_no_upward_and_no_private_imports_anywhere():
    bad = [v for v in violations() if v not in KNOWN_ELSEWHERE]
    assert not bad, "\n".join(bad)


def test_the_tolerated_list_stays_out_of_the_low_layers():
    assert not [v for v in KNOWN_ELSEWHERE if v.split("/")[1].split(".")[0] in ("core", "models", "engine")]


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    "Groups of modules that import each other, directly or through others (imports at any depth, lazy ones too)."
    graph, mods = {}, {module_name(p, root) for p in (root / "reasoning_kit").rglob("*.py")}
    for path in sorted((root / "reasoning_kit").rglob("*.py")):
        if path.name == "_modidx.py": continue
        deps = set()
        for mod, names, _ in imports_of(path, root):
            if not mod.startswith("reasoning_kit"): continue
            subs = {f"{mod}.{n}" for n in names} & mods
            deps |= subs if subs and len(subs) == len(names) else {mod, *subs}  # `from . import sibling` needs the sibling, not the package
        graph[module_name(path, root)] = deps
    graph = {m: {d for d in ds if d in graph and d != m} for m, ds in graph.items()}
    index, low, stack, on, found = {}, {}, [], set(), []
    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index); stack.append(v); on.add(v)
        for w in graph[v]:
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v: group.append(stack.pop()); on.discard(group[-1])
            if len(group) > 1: found.append(sorted(group))
    for v in graph:
        if v not in index: visit(v)
    return sorted(found)


def test_the_cycle_finder_finds_a_cycle(tmp_path):
    pkg = tmp_path / "reasoning_kit" / "models"; pkg.mkdir(parents=True)
    (tmp_path / "reasoning_kit" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from .fake import text\n"); (pkg / "fake.py").write_text("from . import Message\n")
    assert import_cycles(tmp_path) == [["reasoning_kit.models", "reasoning_kit.models.fake"]]


def test_no_import_cycle_at_all():
    "No two modules import each other, through any path, at any depth: a package's `__init__` only gathers its modules."
    assert import_cycles() == []


def test_package_inits_only_gather():
    "Every package `__init__` (but the root's lazy names) holds imports and `__all__`, nothing else, and no import at its bottom after code."
    for init in sorted(PKG.rglob("__init__.py")):
        if init.parent == PKG: continue
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            ok = isinstance(node, (ast.Import, ast.ImportFrom)) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) \
                 or (isinstance(node, (ast.Assign, ast.AugAssign)) and "__all__" in ast.unparse(node)) \
                 or (isinstance(node, ast.Assign) and "sys.modules" in ast.unparse(node))
            assert ok, f"{init.relative_to(ROOT)}:{node.lineno} is more than a re-export: {ast.unparse(node)[:80]}"


def test_the_root_holds_only_faces_and_the_command_line():
    loose = {p.stem if p.is_file() else p.name for p in PKG.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    folders = {"core", "models", "engine", "effects", "algos", "tasks", "viz", "sweep", "apps"}
    assert loose - folders - FACES - {"__init__", "__main__", "_modidx"} == set(), loose - folders - FACES


def test_every_module_is_at_most_550_lines():
    long = {str(p.relative_to(ROOT)): n for p in PKG.rglob("*.py") if p.name != "_modidx.py" and (n := len(p.read_text().splitlines())) > 550}
    assert not long, long


def test_the_root_exports_the_quickstart_and_every_algorithm():
    import reasoning_kit, reasoning_kit.algos as algos
    from reasoning_kit.engine import Algorithm
    classes = {n for n in dir(algos) if isinstance(getattr(algos, n), type) and issubclass(getattr(algos, n), Algorithm) and getattr(algos, n) is not Algorithm}
    assert {"BestOfN", "MCTS", "TreeOfThoughts", "SelfConsistency"} <= classes
    assert classes <= set(reasoning_kit.__all__), classes - set(reasoning_kit.__all__)
    for n in reasoning_kit.__all__: assert getattr(reasoning_kit, n) is not None
