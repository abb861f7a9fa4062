#!/usr/bin/env bash
# How well `infertune sim calibrate` fits the twin to a card from measurements:
#
# 1. Leave one out, on real measurements: for each experiment of the truth CSV, calibrate on
#    the others, then predict the held-out one with the fitted card (`sim validate --card`);
#    median absolute errors of mean TTFT, TPOT, e2e and throughput over every held-out row
#    measured not overloaded, beside the nominal profile's on the same rows.
# 2. A synthetic new card: the nominal profile with every figure scaled by each --factors
#    value; its twin's predictions of the CSV's rows become the measurements, three rows of
#    three experiments the scaled card serves without overload are kept, the nominal profile
#    is calibrated on them, and the recovered figures are compared with the scaled ones.
#
# Usage: scripts/bench-calibration.sh [--truth CSV] [--model-configs DIR] [--card NAME]
#                                     [--factors LIST] [--out DIR]
# Defaults: the public H100 measurements in data/sim-truth. INFERTUNE_BIN names an
# infertune binary to use instead of building one. Figures: docs/benchmarks.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
truth=data/sim-truth/h100-vllm.csv
configs=data/sim-truth/model-configs
card=H100
factors=0.6,1.5
out=target/bench-calibration

die() { printf '[bench-calibration] error: %s\n' "$*" >&2; exit 2; }
log() { printf '[bench-calibration] %s\n' "$*" >&2; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --truth) truth=${2:?--truth needs a file}; shift 2 ;;
        --model-configs) configs=${2:?--model-configs needs a folder}; shift 2 ;;
        --card) card=${2:?--card needs a name}; shift 2 ;;
        --factors) factors=${2:?--factors needs a list}; shift 2 ;;
        --out) out=${2:?--out needs a folder}; shift 2 ;;
        *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[[ -f $truth ]] || die "--truth $truth does not exist"
[[ -d $configs ]] || die "--model-configs $configs is not a folder"

bin=${INFERTUNE_BIN:-}
if [[ -z $bin ]]; then
    cargo build --quiet --release --bin infertune
    bin=target/release/infertune
fi
mkdir -p "$out/held-out" "$out/synthetic"
start=$(date +%s)

log "leave one out over the experiments of $truth"
"$bin" sim validate --truth "$truth" --model-configs "$configs" --card "$card" --json \
    >"$out/nominal.json" || true
experiments=$(python3 -c 'import csv,sys; print("\n".join(sorted({r["experiment"] for r in csv.DictReader(open(sys.argv[1]))})))' "$truth")
while read -r experiment; do
    [[ -n $experiment ]] || continue
    log "  held out: $experiment"
    "$bin" sim calibrate --truth "$truth" --model-configs "$configs" --card "$card" \
        --hold-out "$experiment" --out "$out/held-out/$experiment.yaml" >/dev/null
    "$bin" sim validate --truth "$truth" --model-configs "$configs" \
        --card "$out/held-out/$experiment.yaml" --experiment "$experiment" --json \
        >"$out/held-out/$experiment.json" || true
done <<<"$experiments"

IFS=, read -r -a scale_factors <<<"$factors"
for factor in "${scale_factors[@]}"; do
    log "synthetic card: $card with every figure ×$factor"
    dir="$out/synthetic/x$factor"
    mkdir -p "$dir"
    python3 - "$card" "$factor" "$dir/card.yaml" <<'PY'
import pathlib, sys, yaml
name, factor, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
cards = yaml.safe_load(pathlib.Path("src/sim/profiles/cards.yaml").read_text())
card = next(c for c in cards if c["name"].lower() == name.lower() or name.lower() in
            [a.lower() for a in c.get("aliases", [])])
card = dict(card, name=f"{card['name']}-x{factor}", aliases=[])
card["tflops"] *= factor
card["hbm_gbps"] *= factor
card["host_factor"] = card.get("host_factor", 1.0) / factor
pathlib.Path(path).write_text(yaml.safe_dump(card, sort_keys=False))
PY
    "$bin" sim validate --truth "$truth" --model-configs "$configs" --card "$dir/card.yaml" \
        --json >"$dir/predicted.json"
    python3 - "$truth" "$dir/predicted.json" "$dir" <<'PY'
import csv, json, pathlib, sys
truth, predicted, out = sys.argv[1], json.load(open(sys.argv[2])), pathlib.Path(sys.argv[3])
rows = list(csv.DictReader(open(truth)))
by_key = {(p["experiment"], p["stage"]): p for p in predicted["rows"]}
synthetic = []
for row in rows:
    p = by_key.get((row["experiment"], int(row["stage"])))
    if p is None:
        continue
    row = dict(row)
    for column, value in p["predicted"].items():
        if column in row:
            row[column] = f"{value:.6g}"
    synthetic.append((row, p["overloaded"]))
fields = list(rows[0].keys())
def write(path, chosen):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(chosen)
write(out / "truth.csv", [r for r, _ in synthetic])
# Three rows, each of another experiment and model, served without overload: the first
# stage of the first experiment of each model.
picked, models = [], set()
for row, overloaded in synthetic:
    if not overloaded and row["model"] not in models and row["stage"] == "0":
        picked.append(row)
        models.add(row["model"])
write(out / "three-rows.csv", picked[:3])
PY
    "$bin" sim calibrate --truth "$dir/three-rows.csv" --model-configs "$configs" --card "$card" \
        --out "$dir/recovered.yaml" >/dev/null
    "$bin" sim validate --truth "$dir/truth.csv" --model-configs "$configs" \
        --card "$dir/recovered.yaml" --json >"$dir/recovered.json"
done

python3 - "$truth" "$out" "$card" "$factors" <<'PY' | tee "$out/summary.md"
import csv, json, pathlib, statistics, sys, yaml
truth, out, card, factors = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3], sys.argv[4]
metrics = ["ttft_mean_ms", "tpot_mean_ms", "e2e_mean_s", "output_tok_s"]

def measured(path):
    return {(r["experiment"], int(r["stage"])): r for r in csv.DictReader(open(path))}

def errors(predicted, rows):
    errs = {m: [] for m in metrics}
    for p in predicted:
        row = rows[(p["experiment"], p["stage"])]
        overloaded = float(row["failures"] or 0) > 0 or float(row["ttft_mean_ms"]) > 10_000
        if overloaded:
            continue
        for m in metrics:
            errs[m].append(abs(p["predicted"][m] / float(row[m]) - 1) * 100)
    return errs

rows = measured(truth)
held = []
for path in sorted((out / "held-out").glob("*.json")):
    held += json.loads(path.read_text())["rows"]
nominal = json.loads((out / "nominal.json").read_text())["rows"]
held_err, nominal_err = errors(held, rows), errors(nominal, rows)
print(f"## Leave one experiment out ({truth})\n")
print("| figure | nominal profile, median error % | calibrated without the experiment, median error % | rows |")
print("|---|---|---|---|")
for m in metrics:
    print(f"| {m} | {statistics.median(nominal_err[m]):.1f} | {statistics.median(held_err[m]):.1f} | {len(held_err[m])} |")
print(f"\n## Synthetic cards: {card} with every figure scaled, recovered from three rows\n")
print("| factor | compute recovered | bandwidth recovered | host recovered | worst figure off % | median error on every row, TTFT / TPOT / e2e / throughput % |")
print("|---|---|---|---|---|---|")
for factor in factors.split(","):
    d = out / "synthetic" / f"x{factor}"
    scaled = yaml.safe_load((d / "card.yaml").read_text())
    got = yaml.safe_load("\n".join(l for l in (d / "recovered.yaml").read_text().splitlines() if not l.startswith("#")))
    ratios = {
        "compute": got["tflops"] / scaled["tflops"],
        "bandwidth": got["hbm_gbps"] / scaled["hbm_gbps"],
        "host": scaled["host_factor"] / got["host_factor"],
    }
    worst = max(abs(r - 1) for r in ratios.values()) * 100
    f = float(factor)
    recovered = {k: r * f for k, r in ratios.items()}
    errs = errors(json.loads((d / "recovered.json").read_text())["rows"], measured(d / "truth.csv"))
    med = " / ".join(f"{statistics.median(errs[m]):.1f}" for m in metrics)
    print(f"| ×{factor} | ×{recovered['compute']:.3f} | ×{recovered['bandwidth']:.3f} | ×{recovered['host']:.3f} | {worst:.1f} | {med} |")
PY
log "done in $(( $(date +%s) - start )) s; summary: $out/summary.md"
