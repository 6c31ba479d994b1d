"""Fit each stepper still in notebooks to its content and add a PNG of it, with headless Chromium (run by
scripts/refresh_outputs.sh after the notebooks are executed).

A still is the `image/svg+xml` output a `Stepper` (or a `Compare`) leaves in a notebook: its HTML frame inside a
`foreignObject`, sized by an estimate in the kernel. Here Chromium lays each one out, the SVG's height is set to
what the content takes, and a PNG of it is added beside it: JupyterLab does not render SVG in an untrusted
notebook, and nbconvert's sanitiser (what a code host's preview runs) strips it; both show the PNG.
Usage: python scripts/stills.py NOTEBOOK...
"""
from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]
HEIGHT = re.compile(r'^(<svg[^>]*?) height="\d+" viewBox="0 0 (\d+) \d+"(.*?<foreignObject x="0" y="0" width="\d+") height="\d+"', re.S)


def fit(page, svg: str) -> tuple[str, bytes]:
    "The still with its height fitted to its content, and a PNG of it."
    page.set_content(f'<html><body style="margin:0;background:#fff">{svg}</body></html>')
    h = page.evaluate("() => Math.ceil(document.querySelector('.rk-still-body').getBoundingClientRect().height)") + 2
    svg = HEIGHT.sub(lambda m: f'{m[1]} height="{h}" viewBox="0 0 {m[2]} {h}"{m[3]} height="{h}"', svg, count=1)
    uri = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
    page.set_content(f'<html><body style="margin:0;background:#fff"><img id="s" src="{uri}"></body></html>')
    page.wait_for_function("() => document.getElementById('s').complete")
    return svg, page.locator("#s").screenshot(type="png")


def refresh(paths: list[Path]) -> int:
    from playwright.sync_api import sync_playwright
    n = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1000, "height": 800})
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("data:", "about:")) else r.abort())
        for path in paths:
            text = path.read_text(encoding="utf-8"); nb = json.loads(text); before = n
            for c in nb["cells"]:
                outs = c.get("outputs", [])  # an empty result after a still (a display hook that displayed it itself) is dropped
                c_outs = [o for k, o in enumerate(outs) if not (o.get("data") == {} and k and 'rk-still' in "".join(outs[k - 1].get("data", {}).get("image/svg+xml", "")))]
                if "outputs" in c: c["outputs"] = c_outs
                for o in c.get("outputs", []):
                    d = o.get("data", {})
                    svg = "".join(d.get("image/svg+xml", ""))
                    old = "".join(d.get("text/html", ""))
                    if "application/vnd.jupyter.widget-view+json" in d and 'class="rk-frame"' in old and not svg:  # kept before stills: its frame as HTML
                        from reasoning_kit.viz.still import still_svg
                        m = re.search(r"<b>(\w+): event (\d+) of (\d+)</b>", old)
                        svg = still_svg(old)
                        if m: d["text/plain"] = f"Stepper: {m[1]}, event {m[2]} of {m[3]} - run the notebook to step through it"
                    if 'class="rk-still"' not in svg: continue
                    d["image/svg+xml"], png = fit(page, svg)
                    d["image/png"] = base64.b64encode(png).decode()
                    d.pop("application/vnd.jupyter.widget-view+json", None); d.pop("text/html", None)
                    n += 1
            if n > before or "rk-" in json.dumps(nb.get("metadata", {}).get("widgets", "")):  # a stepper's saved widget state
                nb["metadata"].pop("widgets", None)  # (it made a frozen widget appear after "Trust Notebook"): the still is what a reader sees
            if json.loads(text) != nb: path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        browser.close()
    return n


if __name__ == "__main__":
    print(f"{refresh([Path(a) for a in sys.argv[1:]])} stills fitted")
