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
