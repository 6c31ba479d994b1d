#!/usr/bin/env bash
# Build llama.cpp's `llama-server` (MIT) from the llama.cpp sources vendored in the llama-cpp-python sdist,
# into .llama-server/<version>/, if it is not there yet, and print the path of the program. CPU only, no
# curl, no downloads at run time. About 5 minutes on 2 cores; reruns skip the build. Needs cmake and a C++
# compiler (build-essential). Override the version with LLAMA_CPP_PYTHON_VERSION, the parallelism with JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.16}"
dir="$PWD/.llama-server/$version"
bin="$dir/llama-server"
if [ ! -x "$bin" ]; then
  for t in cmake c++; do command -v "$t" >/dev/null 2>&1 || { echo "llama_server.sh: $t not found (apt-get install cmake build-essential)" >&2; exit 127; }; done
  work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
  python -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: -d "$work" "llama_cpp_python==$version" >&2
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
  [ -f "$src/CMakeLists.txt" ] || { echo "llama_server.sh: no llama.cpp sources in the sdist" >&2; exit 1; }
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >&2
  nice -n 10 cmake --build "$work/build" --target llama-server -j "${JOBS:-2}" >&2
  mkdir -p "$dir"
  cp "$work/build/bin/llama-server" "$bin.tmp" && mv "$bin.tmp" "$bin"  # whole or not at all
fi
echo "$bin"
