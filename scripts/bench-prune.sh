#!/usr/bin/env bash
# Benchmark of probe pruning: the same simulator study under tight SLOs (the random sampler
# proposes the same configs in both runs), once with pruning and once with --no-prune. Reports
# the total probe time (sum of every trial's probe_wall_s), the saving (target >= 30 %) and
# whether both runs pick the same winner.
# Usage: scripts/bench-prune.sh [SPACE]   (default tests/fixtures/spaces/e2e-prune.yaml)
set -euo pipefail
cd "$(dirname "$0")/.."
space="${1:-tests/fixtures/spaces/e2e-prune.yaml}"
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/infertune"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$bin" tune --space "$space" --results "$work/pruned" > "$work/pruned.out" 2> "$work/pruned.err"
"$bin" tune --space "$space" --results "$work/full" --no-prune > "$work/full.out" 2> "$work/full.err"

python3 - "$work/pruned" "$work/full" <<'PY'
import json, pathlib, sys

def study(results):
    folder = next(pathlib.Path(results).iterdir())
    records = [json.loads(l) for l in (folder / "journal.jsonl").read_text().splitlines() if l]
    best = json.loads((folder / "best.json").read_text())
    probe = sum(r.get("metrics", {}).get("probe_wall_s", 0.0) for r in records)
    counts = {}
    for r in records:
        counts[r["outcome"]["status"]] = counts.get(r["outcome"]["status"], 0) + 1
    return records, best, probe, counts

pruned, best_p, probe_p, counts_p = study(sys.argv[1])
full, best_f, probe_f, counts_f = study(sys.argv[2])
same_configs = [r["params"] for r in pruned] == [r["params"] for r in full]
print(f"trials: {len(full)} per run; same configs in both runs: {same_configs}")
print(f"with pruning:    probe time {probe_p:7.2f} s  {counts_p}")
print(f"without pruning: probe time {probe_f:7.2f} s  {counts_f}")
print(f"ratio pruned/unpruned: {probe_p / probe_f:.3f}; saving {100 * (1 - probe_p / probe_f):.1f} % (target >= 30 %)")
value = lambda b: b["objective"]["mean"]
print(f"winner with pruning:    trial {best_p['trial']} = {value(best_p):.1f} {best_p['params']}")
print(f"winner without pruning: trial {best_f['trial']} = {value(best_f):.1f} {best_f['params']}")
feasible = lambda rs: [r["params"] for r in rs if r["outcome"]["status"] == "feasible"]
print(f"same feasible configs in both runs: {feasible(pruned) == feasible(full)}")
gap = 100 * abs(value(best_p) - value(best_f)) / value(best_f)
print(f"same winner: {best_p['params'] == best_f['params']} (winning values {gap:.1f} % apart)")
wrongly_pruned = [
    p["number"] for p, f in zip(pruned, full)
    if p["outcome"]["status"] == "pruned" and f["outcome"]["status"] == "feasible"
]
print(f"trials pruned that met every SLO without pruning: {wrongly_pruned or 'none'}")
PY
