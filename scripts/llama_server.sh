#!/usr/bin/env bash
# Build llama.cpp's `llama-server` (MIT) from the llama.cpp sources vendored in the llama-cpp-python sdist,
# into .llama-server/<version>/, if it is not there yet, and print the path of the program. CPU only, no
# curl/openssl, no web UI, nothing downloaded at build or run time except the sdist itself. About 5-10
# minutes on 2 cores (-O1: about 14 CPU-minutes, against about 18 at -O3; the test model is tiny, so speed at run
# time does not matter); reruns skip the build. Needs cmake and a C++ compiler (build-essential).
#   LLAMA_CPP_PYTHON_VERSION  the sdist to build from (0.3.36 vendors a llama.cpp that serves both
#                             /v1/chat/completions and Anthropic's /v1/messages)
#   LLAMA_SDIST               a llama_cpp_python-*.tar.gz already on disk (no download)
#   JOBS                      build parallelism (default 2)
#   LLAMA_BUILD_TIMEOUT       seconds before the build is given up as hung (default 2400)
set -euo pipefail
cd "$(dirname "$0")/.."
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
dir="$PWD/.llama-server/$version"
bin="$dir/llama-server"
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"; flock -w 3000 9 || { echo "llama_server.sh: another build held the lock too long" >&2; exit 1; } # a second caller waits for the first build instead of starting its own
if [ ! -x "$bin" ]; then
  for t in cmake c++ make; do command -v "$t" >/dev/null 2>&1 || { echo "llama_server.sh: $t not found (apt-get install cmake build-essential)" >&2; exit 127; }; done
  work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
  limit="${LLAMA_BUILD_TIMEOUT:-2400}"
  if [ -n "${LLAMA_SDIST:-}" ]; then cp "$LLAMA_SDIST" "$work/"
  else
    timeout 600 python -m pip download --quiet --disable-pip-version-check --timeout 60 --retries 3 --no-deps \
      --no-binary :all: -d "$work" "llama_cpp_python==$version" >&2 \
      || { echo "llama_server.sh: could not download the llama_cpp_python==$version sdist" >&2; exit 1; }
  fi
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
  [ -f "$src/CMakeLists.txt" ] || { echo "llama_server.sh: no llama.cpp sources in the sdist" >&2; exit 1; }
  echo "llama_server.sh: building llama-server from llama_cpp_python $version (minutes; log in $dir.log)" >&2
  { timeout "$limit" cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS=-O1 -DCMAKE_CXX_FLAGS=-O1 -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF \
        -DBUILD_SHARED_LIBS=OFF \
    && timeout "$limit" cmake --build "$work/build" --target llama-server -j "${JOBS:-2}"; } > "$dir.log" 2>&1 \
    || { echo "llama_server.sh: the build failed or timed out; the last lines of $dir.log:" >&2; tail -30 "$dir.log" >&2; exit 1; }
  mkdir -p "$dir"
  cp "$work/build/bin/llama-server" "$bin.tmp" && mv "$bin.tmp" "$bin"  # whole or not at all
fi
echo "$bin"
