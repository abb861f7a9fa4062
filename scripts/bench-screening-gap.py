"""Summarises scripts/bench-screening-gap.sh: the gap between full and screening probes.

Usage: python3 scripts/bench-screening-gap.py OUT_DIR
Reads OUT_DIR/configs.txt and OUT_DIR/runs/c<config>-r<round>-<full|screening>.json (reports of
`infertune bench --json`), writes OUT_DIR/runs.csv and prints a Markdown summary.
"""

import csv
import json
import math
import re
import statistics
import sys
from pathlib import Path

# Metric (key of the bench report) and whether higher is better.
METRICS = [("output_throughput", True), ("p99_ttft_ms", False), ("p99_tpot_ms", False)]


def mad(values):
    """Median absolute deviation from the median."""
    middle = statistics.median(values)
    return statistics.median(abs(v - middle) for v in values)


def kendall_tau(xs, ys):
    """Kendall's tau-a between two equally long lists (ties count for neither side)."""
    pairs = [(i, j) for i in range(len(xs)) for j in range(i + 1, len(xs))]
    if not pairs:
        return float("nan")
    signs = [(xs[i] - xs[j]) * (ys[i] - ys[j]) for i, j in pairs]
    agree = sum(1 for s in signs if s > 0) - sum(1 for s in signs if s < 0)
    return agree / len(pairs)


def load(out):
    """{(config, round, kind): report} of every run."""
    runs = {}
    for path in sorted((out / "runs").glob("*.json")):
        m = re.fullmatch(r"c(\d+)-r(\d+)-(full|screening)", path.stem)
        if m:
            runs[(int(m[1]), int(m[2]), m[3])] = json.loads(path.read_text())
    return runs


def main():
    out = Path(sys.argv[1])
    configs = out.joinpath("configs.txt").read_text().splitlines()
    runs = load(out)
    rounds = sorted({r for (_, r, _) in runs})
    with open(out / "runs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "flags", "round", "kind"] + [m for m, _ in METRICS] + ["failed"])
        for (c, r, kind), rep in sorted(runs.items()):
            w.writerow([c, configs[c], r, kind] + [rep.get(m) for m, _ in METRICS] + [rep.get("failed")])

    print(f"# Screening gap on llama.cpp: {len(configs)} configs, {len(rounds)} rounds\n")
    print("Gap: ln(full / screening) of each round, median over rounds, in %; noise: the")
    print("median absolute deviation of that gap over the rounds, in %.\n")
    header = "| config | " + " | ".join(f"{m} full / screening | gap | noise" for m, _ in METRICS) + " |"
    print(header)
    print("|" + "---|" * (1 + 3 * len(METRICS)))
    gaps = {m: [] for m, _ in METRICS}
    noises = {m: [] for m, _ in METRICS}
    medians = {m: ([], []) for m, _ in METRICS}
    for c, flags in enumerate(configs):
        cells = [flags]
        for m, _ in METRICS:
            pairs = [
                (runs[(c, r, "full")].get(m), runs[(c, r, "screening")].get(m))
                for r in rounds
                if (c, r, "full") in runs and (c, r, "screening") in runs
            ]
            pairs = [(f, s) for f, s in pairs if f and s]
            if not pairs:
                cells.append("– | – | –")
                continue
            per_round = [math.log(f / s) for f, s in pairs]
            gap, noise = statistics.median(per_round), mad(per_round)
            full = statistics.median(f for f, _ in pairs)
            screen = statistics.median(s for _, s in pairs)
            gaps[m].append(gap)
            noises[m].append(noise)
            medians[m][0].append(full)
            medians[m][1].append(screen)
            cells.append(f"{full:.4g} / {screen:.4g} | {100 * gap:+.2f}% | {100 * noise:.2f}%")
        print("| " + " | ".join(cells) + " |")

    print("\n| metric | median gap over configs | its spread over configs (MAD) | rounds' noise (median MAD) | Kendall's τ, screening vs full ranking |")
    print("|---|---|---|---|---|")
    for m, _ in METRICS:
        if not gaps[m]:
            continue
        tau = kendall_tau(*medians[m])
        print(
            f"| {m} | {100 * statistics.median(gaps[m]):+.2f}% | {100 * mad(gaps[m]):.2f}% | "
            f"{100 * statistics.median(noises[m]):.2f}% | {tau:.2f} |"
        )


if __name__ == "__main__":
    main()
