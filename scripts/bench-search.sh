#!/usr/bin/env bash
# Search-efficiency benchmark: samplers vs random search, regret curves and trials-to-3%.
# Usage: scripts/bench-search.sh [--seeds 20] [--trials 60] [--samplers random,qmc,grid,pso,tpe]
#                                [--reference-draws 50000] [--threads N] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --bench search -- "$@"
