#!/usr/bin/env bash
# vLLM tuned for real at a realistic shape: the CPU build of vLLM serving a model of
# Qwen2.5-0.5B's shape under many concurrent chats (search-spaces/vllm-cpu-realistic.yaml).
# A start-up takes 1.5-3 minutes, so this is a benchmark, not a test. Steps (--steps, in order):
#
#   study      `infertune tune` on the space: the winner against the defaults, both
#              re-validated (OUT/study/report.html, best.json).
#   seed-case  the source documents' own case: a space of just their four knobs
#              (scripts/real-grid/vllm-cpu-seed-case.yaml), searched by `--sampler random` with
#              no prior (as the seed did) and by the default sampler with its priors, the same
#              number of trials each; summary of refused launches, the best found and the trial
#              that found it.
#   grid       a measured grid of the knobs the study found most important (--grid FILE, all
#              parameters choices), through scripts/bench-real-grid.sh (two rounds by default).
#   compare    the study's winner, the grid's best and the defaults interleaved
#              (scripts/bench-interleaved.sh, three rounds).
#
# Usage: scripts/bench-vllm-real.sh [--steps LIST] [--seed N] [--trials N] [--rounds N]
#                                   [--grid FILE] [--out DIR]
# Provisions vLLM and the model first (cached). INFERTUNE_BIN names an infertune binary to use
# instead of building one. The machine must be otherwise idle. Figures: docs/benchmarks.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
space=search-spaces/vllm-cpu-realistic.yaml
seed_case=scripts/real-grid/vllm-cpu-seed-case.yaml
grid=
steps=study,seed-case,grid,compare
seed=1
trials=12
rounds=2
out=target/bench-vllm-real

die() { printf '[bench-vllm-real] error: %s\n' "$*" >&2; exit 2; }
log() { printf '[bench-vllm-real] %s\n' "$*" >&2; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --steps) steps=${2:?--steps needs a list}; shift 2 ;;
        --seed) seed=${2:?--seed needs a number}; shift 2 ;;
        --trials) trials=${2:?--trials needs a number}; shift 2 ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
        --grid) grid=${2:?--grid needs a file}; shift 2 ;;
        --out) out=${2:?--out needs a folder}; shift 2 ;;
        *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
wants() { [[ ,$steps, == *,$1,* ]]; }
if wants grid || wants compare; then
    [[ -n $grid && -f $grid ]] || die "the grid and compare steps need --grid FILE (an existing space of choices)"
fi

scripts/provision-vllm-cpu.sh --realistic >/dev/null
# shellcheck source=scripts/vllm-env.sh
. scripts/vllm-env.sh
bin=${INFERTUNE_BIN:-}
if [[ -z $bin ]]; then
    cargo build --quiet --release --bin infertune
    bin=target/release/infertune
fi
export INFERTUNE_BIN=$bin
mkdir -p "$out"

# The parameters (JSON) of trial NUMBER in study folder DIR.
config_of() {
    python3 - "$1" "$2" <<'PY'
import json, pathlib, sys
folder, number = pathlib.Path(sys.argv[1]), int(sys.argv[2])
for line in (folder / "journal.jsonl").read_text().splitlines():
    record = json.loads(line) if line.strip() else None
    if record and record.get("number") == number:
        print(json.dumps(record["params"]))
        break
PY
}
# The JSON parameters on stdin as `k=v k=v` settings of the space file SPACE (its constants
# left out: they cannot be set), booleans spelled as the space spells them.
as_settings() {
    python3 -c '
import json, sys, yaml
params = json.load(sys.stdin)
space = yaml.safe_load(open(sys.argv[1]))["parameters"]
const = {k for k, v in space.items() if v.get("type") == "const"}
print(" ".join(f"{k}={json.dumps(v) if isinstance(v, bool) else v}"
               for k, v in sorted(params.items()) if k not in const))
' "$1"
}
winner_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trial"])' "$1/best.json"; }

if wants study; then
    log "study: $space, seed $seed, $trials trials"
    start=$(date +%s)
    "$bin" tune --space "$space" --seed "$seed" --trials "$trials" --results "$out" --study study
    log "study: $(( $(date +%s) - start )) s"
fi

if wants seed-case; then
    # The seed's random search knows no expert config: its space runs with `search.prior: none`.
    python3 -c '
import sys, yaml
space = yaml.safe_load(open(sys.argv[1]))
space["search"]["prior"] = "none"
yaml.safe_dump(space, open(sys.argv[2], "w"), sort_keys=False)
' "$seed_case" "$out/seed-case-random.yaml"
    for sampler in random bo; do
        space_of=$seed_case
        [[ $sampler == random ]] && space_of=$out/seed-case-random.yaml
        log "seed case: --sampler $sampler, $trials trials"
        "$bin" tune --space "$space_of" --sampler "$sampler" --seed "$seed" --trials "$trials" \
            --results "$out" --study "seed-case-$sampler"
    done
    python3 - "$out" <<'PY' | tee "$out/seed-case.md"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print("| sampler | trials | refused before launch | failed at start | best output tok/s | at trial |")
print("|---|---|---|---|---|---|")
for sampler in ("random", "bo"):
    folder = out / f"seed-case-{sampler}"
    records = [json.loads(l) for l in (folder / "journal.jsonl").read_text().splitlines() if l.strip()]
    search = [r for r in records if r.get("kind") != "repeat"]
    refused = sum(1 for r in search if "rejected" in json.dumps(r["outcome"]))
    failed = sum(1 for r in search if "failed" in json.dumps(r["outcome"]))
    feasible = [r for r in search if r.get("value") is not None and not r.get("violations")]
    best = max(feasible, key=lambda r: r["value"], default=None)
    shown = (f"{best['value']:.1f} | {best['number']}" if best else "none | -")
    print(f"| {sampler} | {len(search)} | {refused} | {failed} | {shown} |")
PY
fi

if wants grid; then
    scripts/bench-real-grid.sh --space "$grid" --rounds "$rounds" --out "$out/grid"
fi

if wants compare; then
    winner=$(config_of "$out/study" "$(winner_of "$out/study")" | as_settings "$space")
    grid_best=$(python3 - "$out/grid" <<'PY' | as_settings "$space"
import json, pathlib, statistics, sys
runs = {}
for journal in sorted(pathlib.Path(sys.argv[1]).glob("round-*/journal.jsonl")):
    for line in journal.read_text().splitlines():
        r = json.loads(line) if line.strip() else None
        if r and r.get("value") is not None and not r.get("violations"):
            runs.setdefault(json.dumps(r["params"], sort_keys=True), []).append(r["value"])
print(max(runs, key=lambda k: statistics.mean(runs[k])))
PY
)
    scripts/bench-interleaved.sh --space "$space" --rounds 3 --out "$out/compare" \
        grid-best="$grid_best" winner="$winner" defaults=
fi
