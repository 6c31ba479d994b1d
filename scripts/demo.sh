#!/usr/bin/env bash
# The main job: set up (a virtual environment where the system Python is externally managed), then run the offline
# demo of the algorithms on scripted models.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/setup.sh | tail -n 1)
"$PY" examples/four_algorithms.py
