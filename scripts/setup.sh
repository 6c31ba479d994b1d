#!/usr/bin/env bash
# Install everything reasoning_kit's demo and tests need on a fresh Debian/Ubuntu machine that has
# only Python, pip and apt. Safe to run again: each step is skipped when already done.
#   bash scripts/setup.sh          # the package (with widgets) and the graphviz `dot` program
#   bash scripts/setup.sh --dev    # also the test tools: nbdev, pytest, chromium, node, aimock
set -euo pipefail
cd "$(dirname "$0")/.."
dev=${1:-}

need_apt=()
command -v dot >/dev/null 2>&1 || need_apt+=(graphviz)
if [ "$dev" = "--dev" ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
  command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
  command -v git >/dev/null 2>&1 || need_apt+=(git)
  command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)  # llama.cpp's llama-server, built from source for the tests
  command -v c++ >/dev/null 2>&1 || need_apt+=(build-essential)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

python -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --upgrade pip "setuptools>=77" wheel
if [ "$dev" = "--dev" ]; then
  python -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e ".[dev]"
  [ -x scripts/aimock.sh ] && bash scripts/aimock.sh
  bash scripts/llama_server.sh >/dev/null  # minutes the first time, then cached in .llama-server/; fails loudly
else
  python -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e ".[widgets]"
fi
