"""`reasoning-kit view run.jsonl -o run.html` writes the self-contained player (needs the integrator's
wiring of `view` in nbs/34_cli.ipynb to `reasoning_kit.viz.save_html`)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_view_writes_one_html_file(tmp_path):
    out = tmp_path / "run.html"
    r = subprocess.run([sys.executable, "-m", "reasoning_kit", "view", str(ROOT / "tests/fixtures/tot_v0.1.jsonl"),
                        "-o", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert 'id="rk-slider"' in page and 'id="rk-data"' in page and " src=" not in page


def test_view_names_a_bad_file_in_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"; bad.write_bytes(b"\x00\xff\xfe binary")
    r = subprocess.run([sys.executable, "-m", "reasoning_kit", "view", str(bad), "-o", str(tmp_path / "x.html")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and str(bad) in r.stderr and "Traceback" not in r.stderr


def page_data(page: str) -> dict:
    "The player's data inlined in a page (JSON, or gzipped and base64-encoded)."
    import base64, gzip, json, re
    m = re.search(r'<script id="rk-data"[^>]*?( data-gzip)?>(.*?)</script>', page, re.S)
    text = m.group(2).strip()
    return json.loads(gzip.decompress(base64.b64decode(text)) if m.group(1) else text.replace("<\\/", "</"))


def test_view_opens_at_the_last_step_unless_asked_for_the_first(tmp_path):
    log = str(ROOT / "tests/fixtures/tot_v0.1.jsonl")
    starts = {}
    for flag in ([], ["--first"]):
        out = tmp_path / f"run{len(flag)}.html"
        r = subprocess.run([sys.executable, "-m", "reasoning_kit", "view", log, "-o", str(out), *flag],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert r.returncode == 0, r.stderr
        starts[tuple(flag)] = page_data(out.read_text())["start"]
    assert starts == {(): "last", ("--first",): "first"}
