#!/usr/bin/env bash
# Re-execute exactly the notebooks whose kept outputs show a stepper or a comparison, then fit each still to its
# content and add a PNG of it (scripts/stills.py, headless Chromium), drop saved widget state, and nbdev-clean.
# Run it after merging changes to the viz notebooks or to the runs these notebooks show: bash scripts/refresh_outputs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
failed=""
NOTEBOOKS="10_toolloop 11_reflexion 12_debate 13_swarm 14_tot 14a_tot_step_scorer 15_self_consistency
16_generator_critic 17_generate_test_repair 18_best_of_n 18a_mcts 22_stepper 22a_compare 23d_view_tot 23e_view_mcts
23g_view_best_of_n index"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the package of this checkout, whatever is installed
for nb in ${*:-$NOTEBOOKS}; do  # or only the notebooks named on the command line
  echo "executing nbs/$nb.ipynb"
  nbdev-test --save "nbs/$nb.ipynb" || failed="$failed $nb"  # as the tests run it (`#| eval: false` cells stay unrun), outputs written back
done
python3 scripts/stills.py nbs/*.ipynb  # also turns an old widget output that kept its frame as HTML into a still
nbdev-clean
if [ -n "${failed:-}" ]; then echo "not refreshed (their tests failed):$failed"; exit 1; fi
