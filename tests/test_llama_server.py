"""llama.cpp's llama-server, built by scripts/llama_server.sh (cached in .llama-server/; the build takes minutes, so
these tests run only once it exists: `bash scripts/llama_server.sh`). A model file for it is not made yet (see the
issue notes), so this checks the build itself: the program runs and names its version."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILT = sorted((ROOT / ".llama-server").glob("*/llama-server"))


@pytest.mark.skipif(not BUILT, reason="llama-server not built: bash scripts/llama_server.sh")
def test_the_built_llama_server_runs():
    out = subprocess.run([str(BUILT[-1]), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "version" in (out.stdout + out.stderr).lower()


def test_the_build_script_is_cached_and_pinned():
    text = (ROOT / "scripts" / "llama_server.sh").read_text()
    assert 'if [ ! -x "$bin" ]' in text and "LLAMA_CPP_PYTHON_VERSION:-" in text and "-DLLAMA_CURL=OFF" in text
