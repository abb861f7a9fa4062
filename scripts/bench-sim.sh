#!/usr/bin/env bash
# Benchmark of `infertune sim eval`: 1,000 sampled vLLM configs in virtual time (target < 60 s),
# against a baseline of one config in the same invocation.
# Usage: scripts/bench-sim.sh [N_CONFIGS]   (default 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-1000}"
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/infertune"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Seeded random configs over the usual vLLM scheduler knobs.
awk -v n="$n" 'BEGIN {
  srand(42)
  for (i = 0; i < n; i++) {
    seqs = int(exp(log(8) + rand() * (log(1024) - log(8))))
    budget = int(exp(log(256) + rand() * (log(16384) - log(256))))
    block = (rand() < 0.5) ? 16 : 32
    chunked = (rand() < 0.5) ? "true" : "false"
    prefix = (rand() < 0.5) ? "true" : "false"
    util = 0.5 + rand() * 0.45
    printf "{\"max_num_seqs\": %d, \"max_num_batched_tokens\": %d, \"block_size\": %d, \"enable_chunked_prefill\": %s, \"enable_prefix_caching\": %s, \"gpu_memory_utilization\": %.3f}\n", seqs, budget, block, chunked, prefix, util
  }
}' > "$work/configs.jsonl"
head -n 1 "$work/configs.jsonl" > "$work/one.jsonl"

run() { # name, configs file, then workload flags
  local name="$1" file="$2"; shift 2
  local start end
  start=$(date +%s.%N)
  "$bin" sim eval --card A6000 --model Qwen2-0.5B --configs "$file" "$@" > "$work/$name.out" 2> "$work/$name.err"
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

workload=(--input-len 64 --output-len 187 --range-ratio 0.07 --concurrency 100 --requests 300)
baseline=$(run baseline "$work/one.jsonl" "${workload[@]}")
full=$(run full "$work/configs.jsonl" "${workload[@]}")
lines=$(wc -l < "$work/full.out")
failed=$(grep -c '"failure"' "$work/full.out" || true)
per=$(echo "scale=3; ($full - $baseline) * 1000 / ($n - 1)" | bc)
echo "workload: A6000 / Qwen2-0.5B, 300 requests at concurrency 100, 64 in / ~187 out (seed 004)"
echo "baseline (1 config, incl. process start): ${baseline} s"
echo "${n} configs: ${full} s (${lines} results, ${failed} failed at start); ${per} ms per extra config"
echo "ratio to the 60 s target: $(echo "scale=3; $full / 60" | bc)"
