#!/usr/bin/env bash
# Install the aimock mock LLM server (npm @copilotkit/aimock: MIT, no dependencies, serves the OpenAI
# and Anthropic wire formats) into .aimock/ if it is not there yet, and print the path of its `llmock`
# program. The client tests (tests/test_clients_aimock.py) and benchmarks/clients.py call this.
# Needs Node.js >= 20.15 and npm. Override the version with AIMOCK_VERSION.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${AIMOCK_VERSION:-1.43.0}"
dir=.aimock
bin="$dir/node_modules/.bin/llmock"
pkg="$dir/node_modules/@copilotkit/aimock/package.json"
if [ ! -x "$bin" ] || ! grep -q "\"version\": \"$version\"" "$pkg" 2>/dev/null; then
  command -v npm >/dev/null 2>&1 || { echo "aimock.sh: npm not found: install Node.js (>= 20.15) and npm" >&2; exit 127; }
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "@copilotkit/aimock@$version" >&2
  [ -x "$bin" ] || { echo "aimock.sh: npm ran but $bin is missing" >&2; exit 1; }
fi
echo "$PWD/$bin"
