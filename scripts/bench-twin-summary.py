#!/usr/bin/env python3
"""Median trials to within 3% of the optimum for `bo` and `bo:twin`, grouped by how the measured
engine differs from the twin (the perturbation in each scenario's name), with the ratio's 95%
bootstrap interval over runs. Reads the regret.csv of `scripts/bench-search.sh --twin`.

Usage: scripts/bench-twin-summary.py OUT/regret.csv
"""
import csv, sys, random, statistics, re
rows = list(csv.DictReader(open(sys.argv[1])))
runs = {}
for r in rows:
    key = (r["scenario"], r["sampler"], int(r["seed"]))
    runs.setdefault(key, []).append((int(r["trial"]), float(r["regret"])))
def t3(v):
    for t, g in sorted(v):
        if g <= 0.03: return t
    return 21  # >20
groups = {}
for (sc, sampler, seed), v in runs.items():
    pert = re.search(r"\((.*)\)$", sc).group(1)
    groups.setdefault((pert, sampler), []).append(t3(v))
    groups.setdefault(("all", sampler), []).append(t3(v))
def boot(a, b, n=2000):
    rnd = random.Random(1); diffs=[]
    for _ in range(n):
        sa=[rnd.choice(a) for _ in a]; sb=[rnd.choice(b) for _ in b]
        diffs.append(statistics.median(sb)/statistics.median(sa))
    diffs.sort(); return diffs[int(0.025*n)], diffs[int(0.975*n)]
perts = sorted({p for p, _ in groups})
print("| measured engine | runs | bo: median trials to 3% | bo:twin | ratio twin/bo (95% bootstrap) |")
print("|---|---|---|---|---|")
for p in perts:
    a, b = groups[(p,"bo")], groups[(p,"bo:twin")]
    lo, hi = boot(a, b)
    f = lambda x: ">20" if x > 20 else f"{x:g}"
    print(f"| {p} | {len(a)} | {f(statistics.median(a))} | {f(statistics.median(b))} | {statistics.median(b)/statistics.median(a):.2f} ({lo:.2f}–{hi:.2f}) |")
