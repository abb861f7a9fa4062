#!/usr/bin/env bash
# Search-efficiency benchmark on simulator scenarios (src/searchbench/scenarios/*.yaml):
# samplers vs random search and vs Optuna's TPE (multivariate) and CMA-ES, regret curves
# (CSV + SVG) and trials-to-3%; then `bo` cold against `bo` warm-started from a search on
# another scenario (TARGET=PRIOR pairs; priors may also come from the scenarios' priors/ folder);
# then `bo` under an 8-hour budget (virtual start-up plus probe seconds) with every config on the
# full probe against new configs screened first while that pays (search.screening), compared by
# the probe seconds each needs to reach the full-probe search's final regret (exactly, and give
# or take the probe's resolution, measured by rerunning the final configs with other draws of
# the simulator's noise; each search's winner picked as re-validation picks it, among its three
# best; over all scenarios with the range of 90% of bootstrap draws of the seeds), on every
# probe lengthened to --screen-waves waves of its concurrency (default 8; 0 keeps
# the scenarios' own two or three waves, too short for screening to pay: `tune` warns of such
# probes); --screen-in-place promotes in place (search.screening.promote_in_place).
# Usage: scripts/bench-search.sh [--no-optuna] [--profile bench|dev] [--seeds 20] [--trials 80]
#          [--samplers random,qmc,grid,pso,tpe,bo] [--optuna-samplers tpe,cmaes]
#          [--reference-draws 20000] [--fresh-reference] [--scenarios DIR] [--threads N]
#          [--out DIR] [--warm-start TARGET=PRIOR,...] [--prior-trials 40] [--transfer-weight 0.5]
#          [--screen-hours 8 (0 skips)] [--screen-seeds N] [--screen-fraction 0.25] [--screen-keep 0.33]
#          [--screen-waves 8] [--screen-in-place]
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
exec cargo bench --profile "$profile" --bench search -- "${args[@]}"
