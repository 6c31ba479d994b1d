#!/usr/bin/env bash
# Build the documentation site from the notebooks, offline: bash scripts/docs.sh [OUT] (default _docs/).
# The tool is Sphinx with myst-nb (why: docs/conf.py), installed from the `docs` extra of pyproject.toml into
# its own virtual environment (.venv-docs, or $DOCS_VENV), so that it never changes the project's environment.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-_docs}"
VENV="${DOCS_VENV:-.venv-docs}"
PY="${PYTHON:-$(command -v python3 || command -v python)}"
if [ ! -x "$VENV/bin/sphinx-build" ]; then
  "$PY" -m venv "$VENV"
  # only the docs extra's requirements: the site is built from saved outputs, the package itself is not needed
  "$VENV/bin/pip" install -q $("$PY" -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["docs"]))')
fi
"$PY" docs/prepare.py _proc/docs
"$VENV/bin/sphinx-build" -q -b html -c docs _proc/docs "$OUT" -j auto
cp _proc/docs/md/*.html.md "$OUT"/  # each page as Markdown too, where nbdev's Docs: lines point
echo "documentation site: $OUT/index.html"
