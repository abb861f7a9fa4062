#!/usr/bin/env bash
# Search-efficiency benchmark on simulator scenarios (searchbench/scenarios/*.yaml):
# samplers vs random search and vs Optuna's TPE (multivariate) and CMA-ES, regret curves
# (CSV + SVG) and trials-to-3%; then `bo` cold against `bo` warm-started from a search on
# another scenario (TARGET=PRIOR pairs; priors may also come from the scenarios' priors/ folder).
# With --twin, every scenario is measured on the twin perturbed away from its card (figures off
# 30-50% both ways, 2x off, the V0 scheduler) and `bo:twin` starts from the nominal twin's view
# (search.prior: twin), e.g. `--no-optuna --twin --samplers bo,bo:twin --warm-start ""`.
# Usage: scripts/bench-search.sh [--no-optuna] [--profile bench|dev] [--seeds 20] [--trials 80]
#          [--samplers random,qmc,grid,pso,tpe,bo,bo:none,bo:twin,bo@4] [--twin]
#          [--optuna-samplers tpe,cmaes]
#          [--reference-draws 20000] [--fresh-reference] [--scenarios DIR] [--threads N]
#          [--out DIR] [--warm-start TARGET=PRIOR,...] [--prior-trials 40] [--transfer-weight 0.5]
# Optuna runs from the venv scripts/provision-optuna.sh makes (provisioned here on first use;
# --no-optuna skips it). --profile picks the cargo profile (default: bench; dev reuses the
# test build, which is optimised, when a release build is too slow to make).
# The reference optimum of each scenario is cached in DIR/reference.json (default
# target/bench-search), keyed by the scenario file's content and the number of draws.
set -euo pipefail
cd "$(dirname "$0")/.."

optuna=1
profile=bench
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --no-optuna) optuna=0 ;;
        --profile)
            [[ $# -ge 2 ]] || { echo "bench-search: --profile needs a value (bench or dev)" >&2; exit 2; }
            profile="$2"
            shift
            ;;
        *) args+=("$1") ;;
    esac
    shift
done

if [[ $optuna == 1 ]]; then
    python=$(scripts/provision-optuna.sh | tail -n 1)
    args+=(--optuna "$python")
fi
exec cargo bench -p infertune-searchbench --profile "$profile" --bench search -- "${args[@]}"
