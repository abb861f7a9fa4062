#!/usr/bin/env bash
# The deployment planner (`infertune plan`), two figures:
#
# 1. The choice: for each (isl, osl) of the measured multi-GPU rows and per-user targets of 20,
#    35 and 50 tokens/s, the tensor-parallel size the plan picks from the twin alone, the best
#    measured tokens/s per GPU at that size among rows meeting the target, and the best of any
#    size (`infertune plan choice`); how many cases reach 95% of the best.
# 2. Speed: `plan` over more than 1,000 candidate deployments (the demo space, 8 GPUs, 80 knob
#    draws: 15 tensor-parallel and replica shapes x 81 knob sets), timed whole.
#
# Usage: scripts/bench-plan.sh [--truth CSV] [--out DIR]
# Defaults: ../shared/data/sim-truth/aic/h100-vllm-qwen3-32b.csv. INFERTUNE_BIN names an
# infertune binary to use instead of building one. Figures: docs/benchmarks.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
truth=../shared/data/sim-truth/aic/h100-vllm-qwen3-32b.csv
out=target/bench-plan

die() { printf '[bench-plan] error: %s\n' "$*" >&2; exit 2; }
log() { printf '[bench-plan] %s\n' "$*" >&2; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --truth) truth=${2:?--truth needs a file}; shift 2 ;;
        --out) out=${2:?--out needs a folder}; shift 2 ;;
        *) die "unknown argument $1 (usage: $0 [--truth CSV] [--out DIR])" ;;
    esac
done
[[ -f $truth ]] || die "--truth $truth does not exist"

bin=${INFERTUNE_BIN:-}
if [[ -z $bin ]]; then
    cargo build --quiet --release --bin infertune
    bin=target/release/infertune
fi
mkdir -p "$out"

log "the tensor-parallel choice on $truth"
"$bin" plan choice --truth "$truth" --card H100 --model Qwen3-32B --targets 20,35,50 \
    | tee "$out/choice.txt"

log "speed: plan over the demo space on 8 GPUs"
start=$(date +%s.%N)
"$bin" plan --space search-spaces/demo-sim.yaml --gpus 8 --concurrency 256 --ttft-p99 8s \
    --min-user-tps 20 --draws 80 --top 3 --out "$out/speed" | tee "$out/speed.txt"
end=$(date +%s.%N)
printf 'plan wall time: %.1f s on %s cores\n' "$(echo "$end - $start" | bc -l)" "$(nproc)"
