#!/usr/bin/env bash
# The main job: set up, then run the offline demo of the algorithms on scripted models.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python examples/four_algorithms.py
