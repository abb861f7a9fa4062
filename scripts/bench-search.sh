#!/usr/bin/env bash
# Search-efficiency benchmark on simulator scenarios (src/searchbench/scenarios/*.yaml):
# samplers vs random search, regret curves (CSV + SVG) and trials-to-3%; then `bo` cold against
# `bo` warm-started from a search on another scenario (TARGET=PRIOR pairs; priors may also come
# from the scenarios' priors/ folder).
# Usage: scripts/bench-search.sh [--seeds 20] [--trials 80] [--samplers random,qmc,grid,pso,tpe,bo]
#          [--reference-draws 20000] [--fresh-reference] [--scenarios DIR] [--threads N] [--out DIR]
#          [--warm-start TARGET=PRIOR,...] [--prior-trials 40] [--transfer-weight 0.5]
# The reference optimum of each scenario is cached in DIR/reference.json (default
# target/bench-search), keyed by the scenario file's content and the number of draws.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --bench search -- "$@"
