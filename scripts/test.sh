#!/usr/bin/env bash
# All the tests, as CI runs them: set up, check that the notebooks and the exported package are in
# sync, run every notebook, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/setup.sh --dev | tail -n 1)
export PATH="$(dirname "$PY"):$PATH"  # nbdev, pytest and the package from the Python setup.sh used

echo "== notebooks are clean and the package is exported from them"
nbdev-clean
git diff --exit-code -- nbs reasoning_kit || { echo "nbdev-clean changed files: run it and commit"; exit 1; }
nbdev-export
git diff --exit-code -- nbs reasoning_kit || { echo "nbdev-export changed files: run it and commit"; exit 1; }
untracked=$(git ls-files --others --exclude-standard -- reasoning_kit nbs)
[ -z "$untracked" ] || { echo "nbdev-export made files that are not committed: $untracked"; exit 1; }

echo "== every notebook runs"
nbdev-test --n-workers 2

echo "== the documentation site builds (tests/test_docs_site.py checks it in Chromium)"
bash scripts/docs.sh _docs

echo "== pytest"
"$PY" -m pytest -q
