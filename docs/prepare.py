"""Turn the notebooks into the documentation site's sources (run by scripts/docs.sh).

One page per notebook, in reading order (index, then by number), named as nbdev names them (`30_eval.ipynb`
-> `eval.html`), so that the `Docs:` line nbdev writes into each module points at its page. The README is the
front page. nbdev's directives are read here, not by Sphinx: `#| hide` and `#| default_exp` cells are
dropped, the other directive lines are removed from what is shown, and inline tests (a code cell of
`test_eq` / `test_fail` / `assert` lines) are folded away under a "test" toggle. Outputs are kept as saved
in the notebooks (nothing is executed); a stepper's saved static frame (HTML) is shown instead of its widget.
Beside each page, `<page>.html.md` holds the same notebook as plain Markdown (what nbdev's `Docs:` URLs name).
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST = re.compile(r"^\s*(test_\w+\(|assert\b|test_fail\b|test_eq\b)")


def page_name(nb: Path) -> str:
    "nbdev's name for a notebook's page: the numeric prefix dropped (`30a_sweep` -> `sweep`); `index` -> `tour`."
    name = re.sub(r"^\d+[a-zA-Z0-9]*_", "", nb.stem.lower())
    return "tour" if name == "index" else name


def reading_order(nbs: Path) -> list[Path]:
    "index first, then the numbered notebooks in order."
    return sorted(nbs.glob("*.ipynb"), key=lambda p: (p.stem != "index", p.stem))


GROUPS = ["core", "models", "engine", "effects", "algos", "tasks", "viz", "sweep", "apps", "experiments"]  # the layers, then the experiments
IMPORT = re.compile(r"^\s*(from\s+\S+\s+import\b|import\s|\)|[\w\s,()]*,?\s*(#.*)?$)")


def group_of(nb: dict, stem: str, before: str | None) -> str | None:
    "The package folder a notebook's module is in; a notebook without one of its own (a face, a companion) goes with the one before; experiments last."
    for c in nb["cells"]:
        m = re.search(r"#\|\s*default_exp\s+(\S+)", "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
        if m and m[1].split(".")[0] in GROUPS: return m[1].split(".")[0]
        if m and m[1] == "__main__": return "apps"  # the command line sits on top of the apps
    return "experiments" if re.match(r"4\d", stem) else before


def only_imports(src: str) -> bool:
    "A cell of nothing but imports (the module's import block): the page starts with prose, not with it."
    lines = [l for l in src.splitlines() if l.strip()]
    return bool(lines) and all(IMPORT.match(l) for l in lines)


def directives(src: str) -> tuple[set[str], str]:
    "The `#| ...` directives at the top of a cell, and the source without them."
    lines, names = src.splitlines(), set()
    while lines and lines[0].startswith("#|"):
        words = lines.pop(0)[2:].replace(":", " ").split()
        if words: names.add(words[0])
    return names, "\n".join(lines)


def split_tests(src: str, shown: bool) -> tuple[str, str]:
    "An example and the inline test under it: a cell with no output that tests is all test; else its trailing test lines."
    if not shown and any(TEST.match(l) for l in src.splitlines()): return "", src
    lines = src.rstrip("\n").splitlines(); i = len(lines)
    while i > 0 and (TEST.match(lines[i - 1]) or (lines[i - 1][:1] in (" ", ")", "]", "}") and i > 1)):
        i -= 1
    while i < len(lines) and not TEST.match(lines[i]): i += 1  # start on a test line, not inside one
    return "\n".join(lines[:i]).rstrip(), "\n".join(lines[i:])


def cells_of(nb: dict) -> list[dict]:
    "The cells a reader sees: hidden ones dropped, directives removed, tests tagged to fold."
    out = []
    for c in nb["cells"]:
        src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        if c["cell_type"] != "code": out.append({**c, "source": src}); continue
        names, body = directives(src)
        if names & {"hide", "default_exp"} or not body.strip(): continue
        if names & {"export", "exports", "exporti"}:
            if not only_imports(body): out.append({**c, "source": body})
            continue
        example, tests = split_tests(body, bool(c.get("outputs")))
        if example: out.append({**c, "source": example, "metadata": {**c.get("metadata", {}), "tags": []}})
        if tests: out.append({**c, "id": f"{c.get('id', 'cell')}-test" if example else c.get("id", "cell"), "source": tests,
                              "outputs": [] if example else c.get("outputs", []), "metadata": {"tags": ["hide-cell"]}})
    return out


def markdown_of(cells: list[dict]) -> str:
    "The page as plain Markdown: prose, code in fences, text outputs as text."
    parts = []
    for c in cells:
        if c["cell_type"] == "markdown": parts.append(c["source"]); continue
        if c["cell_type"] != "code": continue
        parts.append("```python\n" + c["source"] + "\n```")
        for o in c.get("outputs", []):
            t = o.get("text") or o.get("data", {}).get("text/plain")
            if t: parts.append("```\n" + ("".join(t) if isinstance(t, list) else t).rstrip() + "\n```")
    return "\n\n".join(parts) + "\n"


def front_page(readme: str, pages: dict[str, str], groups: dict[str, str | None] | None = None) -> str:
    "The README, each notebook named in backticks linked to its page, and the site's table of contents, grouped by the package's folders."
    def link(m):
        stem = m.group(1)
        return f"[`{stem}`]({pages[stem]}.ipynb)" if stem in pages else m.group(0)
    body = re.sub(r"`([0-9]{2}[a-z]?_[a-z0-9_]+|index)`", link, readme)
    groups = groups or {}
    tocs, order = {}, []
    for stem, page in pages.items():
        g = groups.get(stem) or "start"
        if g not in tocs: order.append(g); tocs[g] = []
        tocs[g].append(page)
    return body + "".join(f"\n\n```{{toctree}}\n:hidden:\n:maxdepth: 1\n:caption: {g}\n\n" + "\n".join(tocs[g]) + "\n```\n" for g in order)


def prepare(out: Path, nbs: Path = ROOT / "nbs", readme: Path = ROOT / "README.md") -> list[str]:
    "Write the site's sources into `out` (emptied first); returns the page names in reading order."
    if out.exists(): shutil.rmtree(out)
    (out / "md").mkdir(parents=True)
    pages, groups, before = {}, {}, None
    for p in reading_order(nbs):
        nb = json.loads(p.read_text(encoding="utf-8")); name = page_name(p); cells = cells_of(nb)
        if name in pages.values(): raise SystemExit(f"{p.name}: its page name {name!r} is taken by another notebook")
        meta = {"kernelspec": nb.get("metadata", {}).get("kernelspec", {"name": "python3", "display_name": "python3", "language": "python"})}
        (out / f"{name}.ipynb").write_text(json.dumps({**nb, "cells": cells, "metadata": meta}), encoding="utf-8")
        (out / "md" / f"{name}.html.md").write_text(markdown_of(cells), encoding="utf-8")
        pages[p.stem] = name
        groups[p.stem] = before = group_of(nb, p.stem, before)
    (out / "index.md").write_text(front_page(readme.read_text(encoding="utf-8"), pages, groups), encoding="utf-8")
    return list(pages.values())


if __name__ == "__main__":
    names = prepare(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_proc" / "docs")
    print(f"{len(names)} pages: {', '.join(names)}")
