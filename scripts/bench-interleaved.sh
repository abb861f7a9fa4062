#!/usr/bin/env bash
# Named configs of one space measured interleaved on the real engine: each round starts every
# config in turn (`infertune launch`), runs the space's own probe against it (`infertune bench
# --workload`) and stops it; the order rotates from round to round, so a slow spell of the
# machine falls on different configs. Prints each config's runs, mean and its share of the
# first config's mean, and writes them to OUT/summary.md; each later config's gain over the
# first comes with the 95% interval of the difference of means (Welch, over starts: a start's
# runs are averaged first, so the spread a new start adds is counted), and each config's spread
# is split into runs on one server and starts (`infertune bench --starts`).
#
# Usage: scripts/bench-interleaved.sh --space FILE [--rounds 3] [--runs 1] [--out DIR]
#            NAME='param=value param=value' [NAME=...]...
# (--runs: back-to-back runs of the probe on each start)
# (an empty set of values is the space's defaults; a study's winner is the `param_*` columns of
# its best.json). The engine must be provisioned and its environment set, and the machine
# otherwise idle. INFERTUNE_BIN names an infertune binary to use instead of building one.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
space=
rounds=3
runs=1
out=target/bench-interleaved
configs=()
die() { printf '[bench-interleaved] error: %s\n' "$*" >&2; exit 2; }
log() { printf '[bench-interleaved] %s\n' "$*" >&2; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --space) space=${2:?--space needs a file}; shift 2 ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
        --runs) runs=${2:?--runs needs a number}; shift 2 ;;
        --out) out=${2:?--out needs a folder}; shift 2 ;;
        *=*) configs+=("$1"); shift ;;
        *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[[ -f $space ]] || die "--space names no file (see the header of $0)"
[[ ${#configs[@]} -ge 2 ]] || die "name at least two configs, NAME='param=value ...'"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive whole number, got $rounds"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive whole number, got $runs"

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
        --runs "$runs" --json "$dir/bench.json" >"$dir/bench.log" 2>&1 \
        || log "$name round $round: bench failed"
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    # A run in which no request completed measured nothing.
    python3 - "$dir/bench.json" "$name" "$round" >>"$out/runs.txt" <<'PY'
import json, sys
path, name, round_ = sys.argv[1:]
try:
    runs = json.load(open(path))
except (OSError, ValueError):
    runs = []
for run in runs if isinstance(runs, list) else [runs]:
    value = run.get("output_throughput") if run.get("completed") else None
    print(name, round_, "nan" if value is None else value)
PY
    log "round $round: $name $(awk -v n="$name" -v r="$round" '$1 == n && $2 == r {printf "%s ", $3}' "$out/runs.txt")tok/s"
}

: >"$out/runs.txt"
n=${#configs[@]}
for round in $(seq 1 "$rounds"); do
    for k in $(seq 0 $((n - 1))); do
        measure $(((k + round - 1) % n)) "$round"
    done
done
python3 - "$out/runs.txt" "${configs[0]%%=*}" <<'PY' | tee "$out/summary.md"
import math, sys
from statistics import mean, stdev
path, first = sys.argv[1:]
starts, order = {}, []
for line in open(path):
    name, round_, value = line.split()
    if name not in starts:
        starts[name], _ = {}, order.append(name)
    if value != "nan":
        starts[name].setdefault(round_, []).append(float(value))
# Two-sided 97.5% quantiles of Student's t by degrees of freedom (beyond 30: the normal's).
T = [12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]
t = lambda df: T[min(int(df), 10) - 1] if df < 30 else 1.96
def spread(groups):
    logs = [[math.log(v) for v in g] for g in groups if g]
    within = [(l, mean(g)) for g in logs for l in g]
    free = sum(len(g) - 1 for g in logs)
    w = math.sqrt(sum((l - m) ** 2 for l, m in within) / free) if free else None
    means = [mean(g) for g in logs]
    b = stdev(means) if len(means) > 1 else None
    return w, b
base = [mean(g) for g in starts[first].values()]
print("| config | output tok/s: runs of each start | mean | of %s (95%% interval) | spread: runs on one server, start means |" % first)
print("|---|---|---|---|---|")
for name in order:
    groups = list(starts[name].values())
    means = [mean(g) for g in groups]
    runs = "; ".join(", ".join("%.1f" % v for v in g) for g in groups)
    m = mean(means)
    gain = "%.0f%%" % (100 * m / mean(base))
    if name != first and len(means) > 1 and len(base) > 1:
        va, vb = stdev(base) ** 2 / len(base), stdev(means) ** 2 / len(means)
        df = (va + vb) ** 2 / (va ** 2 / (len(base) - 1) + vb ** 2 / (len(means) - 1)) if va + vb else 30
        half = t(df) * math.sqrt(va + vb) / mean(base)
        d = m / mean(base) - 1
        gain += " (%+.0f%% to %+.0f%%)" % (100 * (d - half), 100 * (d + half))
    w, b = spread(groups)
    fmt = lambda x: "n/a" if x is None else "%.1f%%" % (100 * x)
    print("| %s | %s | %.1f | %s | %s, %s |" % (name, runs, m, gain, fmt(w), fmt(b)))
PY
