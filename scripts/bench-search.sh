#!/usr/bin/env bash
# Search-efficiency benchmark on simulator scenarios (src/searchbench/scenarios/*.yaml):
# samplers vs random search, regret curves (CSV + SVG) and trials-to-3%.
# Usage: scripts/bench-search.sh [--seeds 20] [--trials 80] [--samplers random,qmc,grid,pso,tpe]
#          [--reference-draws 20000] [--fresh-reference] [--scenarios DIR] [--threads N] [--out DIR]
# The reference optimum of each scenario is cached in DIR/reference.json (default
# target/bench-search), keyed by the scenario file's content and the number of draws.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --bench search -- "$@"
