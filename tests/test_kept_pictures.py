"""What a notebook keeps of a stepper: a picture that any reader shows, never a widget's text.

A stepper (or a comparison) is kept as a *still*: `image/svg+xml` (its frame laid out inside the SVG) with a PNG of
the same beside it (for JupyterLab before the notebook is trusted, and for nbconvert's sanitiser, which strip SVG), and
a one-line `text/plain` caption. No shipped notebook and no documentation page shows a `VBox(children=` line, and no
notebook carries saved widget state (it made a frozen widget with broken controls appear after "Trust Notebook").
`scripts/refresh_outputs.sh` re-executes the notebooks that keep stills, and `scripts/stills.py` fits them.
"""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NBS = sorted((ROOT / "nbs").glob("*.ipynb"))
WIDGET_TEXT = re.compile(r"\b[HV]Box\(children=")


def outputs(nb: Path):
    for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
        for o in c.get("outputs", []): yield c, o


def text(v) -> str: return "".join(v) if isinstance(v, list) else str(v)


def test_no_notebook_keeps_a_widget_repr_or_widget_state():
    bad = [f"{nb.name}: {text(o.get('data', {}).get('text/plain', o.get('text', '')))[:60]}"
           for nb in NBS for _, o in outputs(nb)
           if WIDGET_TEXT.search(text(o.get("data", {}).get("text/plain", ""))) or WIDGET_TEXT.search(text(o.get("text", "")))]
    assert bad == []
    assert [nb.name for nb in NBS if "rk-" in json.dumps(json.loads(nb.read_text(encoding="utf-8")).get("metadata", {}).get("widgets", ""))] == []
    assert [nb.name for nb in NBS for _, o in outputs(nb) if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
            and "image/svg+xml" in o.get("data", {})] == []  # a still travels alone: the widget it came with cannot load


def test_every_kept_stepper_is_an_image_with_a_png_and_a_caption():
    stills = [(nb.name, o["data"]) for nb in NBS for _, o in outputs(nb) if 'class="rk-still"' in text(o.get("data", {}).get("image/svg+xml", ""))]
    assert len(stills) >= 17, len(stills)  # every algorithm notebook's stepper, the views', the comparisons, the tour's
    for name, d in stills:
        assert "image/png" in d and len(d["image/png"]) > 2000, name  # a real picture, for hosts that strip SVG
        assert "text/html" not in d, name  # JupyterLab would sanitise it into run-on text in an untrusted notebook
        cap = text(d["text/plain"])
        assert re.fullmatch(r"(Stepper: \w+, event \d+ of \d+|Compare: step \d+ of \d+) - run the notebook to step through it", cap), (name, cap)
    assert {n for n, _ in stills} >= {"14_tot.ipynb", "18a_mcts.ipynb", "12_debate.ipynb", "index.ipynb", "22a_compare.ipynb"}


def test_the_stills_open_at_the_run_end():
    caps = [text(o["data"]["text/plain"]) for nb in NBS if nb.name == "14_tot.ipynb" for _, o in outputs(nb)
            if text(o.get("data", {}).get("text/plain", "")).startswith("Stepper:")]
    m = re.match(r"Stepper: tree_of_thoughts, event (\d+) of (\d+)", caps[0])
    assert m and m[1] == m[2], caps


def test_no_empty_output_follows_a_still():
    assert [nb.name for nb in NBS for _, o in outputs(nb) if o.get("output_type") in ("execute_result", "display_data") and o.get("data") == {}] == []
