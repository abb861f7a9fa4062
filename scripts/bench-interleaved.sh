#!/usr/bin/env bash
# Named configs of one space measured interleaved on the real engine: each round starts every
# config in turn (`infertune launch`), runs the space's own probe against it (`infertune bench
# --workload`) and stops it; the order rotates from round to round, so a slow spell of the
# machine falls on different configs. Prints each config's runs, mean and its share of the
# first config's mean, and writes them to OUT/summary.md.
#
# Usage: scripts/bench-interleaved.sh --space FILE [--rounds 3] [--out DIR]
#            NAME='param=value param=value' [NAME=...]...
# (an empty set of values is the space's defaults; a study's winner is the `param_*` columns of
# its best.json). The engine must be provisioned and its environment set, and the machine
# otherwise idle. INFERTUNE_BIN names an infertune binary to use instead of building one.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
space=
rounds=3
out=target/bench-interleaved
configs=()
die() { printf '[bench-interleaved] error: %s\n' "$*" >&2; exit 2; }
log() { printf '[bench-interleaved] %s\n' "$*" >&2; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --space) space=${2:?--space needs a file}; shift 2 ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
        --out) out=${2:?--out needs a folder}; shift 2 ;;
        *=*) configs+=("$1"); shift ;;
        *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[[ -f $space ]] || die "--space names no file (see the header of $0)"
[[ ${#configs[@]} -ge 2 ]] || die "name at least two configs, NAME='param=value ...'"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive whole number, got $rounds"

bin=${INFERTUNE_BIN:-}
if [[ -z $bin ]]; then
    cargo build --quiet --release --bin infertune
    bin=target/release/infertune
fi
mkdir -p "$out"
# The space's probe, as a workload file of its own.
awk '/^probe:/ {on=1; next} on && /^[^ #]/ {on=0} on {sub(/^  /, ""); print}' "$space" \
    >"$out/workload.yaml"
[[ -s $out/workload.yaml ]] || die "$space has no probe section"
port=$(awk '/^  port:/ {print $2; exit}' "$space")
port=${port:-8000}
model=$(awk '/^  served_model_name:/ {print $2; exit}' "$space")
[[ -n $model ]] || die "$space names no engine.served_model_name (the model name to request)"

# Measures config number $1 in round $2; appends "NAME ROUND VALUE" to $out/runs.txt.
measure() {
    local name=${configs[$1]%%=*} values=${configs[$1]#*=} round=$2 sets=() pid
    for v in $values; do sets+=(--set "$v"); done
    local dir="$out/$name-r$round"
    rm -rf "$dir" && mkdir -p "$dir"
    "$bin" launch --space "$space" --workdir "$dir" "${sets[@]}" >"$dir/launch.log" 2>&1 &
    pid=$!
    # `launch` gives up after the space's ready_timeout, so waiting for it is bounded.
    until grep -q "^ready after" "$dir/launch.log" 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || die "$name did not start: $(tail -n 5 "$dir/launch.log")"
        sleep 0.2
    done
    "$bin" bench --url "http://127.0.0.1:$port" --model "$model" --workload "$out/workload.yaml" \
        --json "$dir/bench.json" >"$dir/bench.log" 2>&1 || log "$name round $round: bench failed"
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    local value
    # A run in which no request completed measured nothing.
    if ! grep -q '"completed": *[1-9]' "$dir/bench.json" 2>/dev/null; then
        value=
    else
        value=$(grep -o '"output_throughput": *[0-9.]*' "$dir/bench.json" | head -n 1 | grep -o '[0-9.]*$')
    fi
    log "round $round: $name ${value:-failed} tok/s"
    echo "$name $round ${value:-nan}" >>"$out/runs.txt"
}

: >"$out/runs.txt"
n=${#configs[@]}
for round in $(seq 1 "$rounds"); do
    for k in $(seq 0 $((n - 1))); do
        measure $(((k + round - 1) % n)) "$round"
    done
done
awk -v first="${configs[0]%%=*}" '
    { runs[$1] = runs[$1] " " $3; sum[$1] += $3; count[$1]++; if (!($1 in seen)) { order[++n] = $1; seen[$1] = 1 } }
    END {
        base = sum[first] / count[first]
        print "| config | output tok/s, runs | mean | of " first " |"
        print "|---|---|---|---|"
        for (i = 1; i <= n; i++) {
            c = order[i]; m = sum[c] / count[c]
            printf "| %s |%s | %.1f | %.0f%% |\n", c, runs[c], m, 100 * m / base
        }
    }' "$out/runs.txt" | tee "$out/summary.md"
