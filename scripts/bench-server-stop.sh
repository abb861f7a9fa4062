#!/usr/bin/env bash
# Benchmark of the early stop on server signals: the same simulator study whose space holds
# preemption-prone configs (the random sampler proposes the same configs in both runs), once
# with the early stop and once with --no-server-stop, SLO pruning off in both so that only
# the server signals differ. Reports the probe time of the trials the server signals stopped,
# against the same trials' full probes (target: at least 30% saved), the whole study's probe
# time, and whether both runs crown the same winner.
# Usage: scripts/bench-server-stop.sh [SPACE]   (default tests/fixtures/spaces/e2e-preempt.yaml)
# INFERTUNE_BIN names a built binary (default: build the dev profile).
set -euo pipefail
cd "$(dirname "$0")/.."
space="${1:-tests/fixtures/spaces/e2e-preempt.yaml}"
if [[ -z "${INFERTUNE_BIN:-}" ]]; then
  cargo build --quiet --bin infertune
  INFERTUNE_BIN="${CARGO_TARGET_DIR:-target}/debug/infertune"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$INFERTUNE_BIN" tune --space "$space" --results "$work/on" --no-prune > "$work/on.out" 2> "$work/on.err" || true
"$INFERTUNE_BIN" tune --space "$space" --results "$work/off" --no-prune --no-server-stop > "$work/off.out" 2> "$work/off.err" || true

python3 - "$work/on" "$work/off" <<'PY'
import json, pathlib, sys

def study(results):
    folder = next(pathlib.Path(results).iterdir())
    records = [json.loads(l) for l in (folder / "journal.jsonl").read_text().splitlines() if l]
    best_file = folder / "best.json"
    best = json.loads(best_file.read_text()) if best_file.exists() else None
    return records, best

on, best_on = study(sys.argv[1])
off, best_off = study(sys.argv[2])
probe = lambda r: r.get("metrics", {}).get("probe_wall_s", 0.0)
same = [r["params"] for r in on] == [r["params"] for r in off]
print(f"trials: {len(on)} / {len(off)}; same configs in both runs: {same}")
stopped = [(a, b) for a, b in zip(on, off) if (a.get("server") or {}).get("stopped")]
signals = {}
for a, _ in stopped:
    signals[a["server"]["stopped"]] = signals.get(a["server"]["stopped"], 0) + 1
print(f"trials stopped on a server signal: {len(stopped)} {signals}")
if stopped:
    t_on = sum(probe(a) for a, _ in stopped)
    t_off = sum(probe(b) for _, b in stopped)
    print(f"their probe time: {t_on:.2f} s with the early stop, {t_off:.2f} s without; "
          f"saved {100 * (1 - t_on / t_off):.1f} % (target >= 30 %)")
    for a, b in stopped:
        print(f"  trial {a['number']}: {a['server']['stopped']}, {probe(a):.2f} s vs {probe(b):.2f} s "
              f"(without: {b['outcome']['status']}, value {b.get('value')}, "
              f"preemptions {(b.get('server') or {}).get('preemptions')})")
total_on, total_off = sum(map(probe, on)), sum(map(probe, off))
print(f"whole study probe time: {total_on:.2f} s vs {total_off:.2f} s ({100 * (1 - total_on / total_off):.1f} % saved)")
name = lambda b: f"trial {b['trial']} {b['params']} = {b['objective']['mean']:.1f}" if b else "none"
print(f"winner with the early stop:    {name(best_on)}")
print(f"winner without the early stop: {name(best_off)}")
same_winner = bool(best_on and best_off and best_on['params'] == best_off['params'])
print(f"same winner: {same_winner}")
if best_on and best_off and not same_winner:
    # Two winners: is the swap the simulator's run-to-run noise? Both runs measured every
    # trial the server signals did not stop, so each trial's two values give that noise.
    value = lambda run, n: next((r.get("value") for r in run if r["number"] == n), None)
    stopped_numbers = {a["number"] for a, _ in stopped}
    noise = sorted(abs(a["value"] - b["value"]) / b["value"] for a, b in zip(on, off)
                   if a["number"] not in stopped_numbers and a.get("value") and b.get("value"))
    wa, wb = best_on["trial"], best_off["trial"]
    for label, run in (("with", on), ("without", off)):
        va, vb = value(run, wa), value(run, wb)
        print(f"  {label} the early stop: trial {wa} = {va:.1f}, trial {wb} = {vb:.1f} "
              f"(gap {100 * abs(va - vb) / max(va, vb):.2f} %)")
    print(f"  run-to-run difference of the same unstopped trial: median "
          f"{100 * noise[len(noise) // 2]:.2f} %, max {100 * noise[-1]:.2f} % over {len(noise)} trials")
    print(f"  the winner without the early stop was stopped early: {wb in stopped_numbers}")
PY
