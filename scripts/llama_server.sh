#!/usr/bin/env bash
# Build llama.cpp's `llama-server` (MIT) once and print the path of the program: a thin wrapper around
# `reasoning-kit build-server` (reasoning_kit.models.local.build_server), which builds it from the llama.cpp sources vendored in
# the llama-cpp-python sdist into the user cache (~/.cache/reasoning_kit/llama-server/VERSION/), optimised for this
# machine (Release, GGML_NATIVE), CPU only, no curl/openssl, no web UI. About 10 minutes on 2 cores the first time;
# reruns print the cached path at once. Needs cmake and a C++ compiler (apt-get install cmake build-essential).
#   LLAMA_BUILD_TIMEOUT  seconds before the build is given up as hung (default 2400)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
exec 9>"${TMPDIR:-/tmp}/reasoning_kit-llama-server-build.lock"; flock -w 3000 9  # a second caller waits for the first build
timeout "${LLAMA_BUILD_TIMEOUT:-2400}" "$PY" -m reasoning_kit build-server | tail -n 1
