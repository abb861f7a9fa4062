#!/usr/bin/env python3
"""The workload decides: a simulator study of `enable_prefix_caching` on a Mooncake slice and on
the same requests without their shared blocks.

Each workload is evaluated by `infertune sim eval` over a grid of the space's scheduling knobs
(`enable_prefix_caching` x `max_num_batched_tokens`), every config under SEEDS engine-noise
seeds. The winner is the config with the best mean objective; the gain of prefix caching is the
winner's mean against the same config with caching flipped, with a Welch 95 % confidence
interval (independent seeds on each side, as two runs of a real study would be: near
saturation the engine's 2 % run-to-run speed noise moves TTFT by a tenth or more, so the
default is 20 seeds a side).

The control workload ("random") is the same slice -- the same arrival times, prompt and output
lengths -- written as a generic JSONL trace without `hash_ids`, so no two prompts share content.

Usage: scripts/bench-prefix-caching.py --bin PATH/infertune [--seeds 20] [--speed 2]
           [--start 5m] [--duration 5m] [--out DIR]
Run it from the repository root; the trace (data/traces) holds the first 10 minutes, so
--start plus --duration must stay within them.
Prints a Markdown table and writes DIR/results.json.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

TRACE = "data/traces/mooncake-conversation-first-10m.jsonl"
CARD, MODEL, CONTEXT = "H100", "Qwen2.5-7B", 32768
GRID = [
    {"enable_prefix_caching": caching, "max_num_batched_tokens": budget}
    for caching in (True, False)
    for budget in (2048, 8192)
]
OBJECTIVE = ("mean_ttft_ms", "minimize")
# Two-sided 97.5 % quantiles of Student's t by degrees of freedom.
T975 = {1: 12.71, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t975(df):
    keys = [k for k in sorted(T975) if k <= df]
    return T975[keys[-1]] if keys else T975[1]


def seconds(text):
    units = {"s": 1, "m": 60, "h": 3600}
    return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text)


def workload(path, fmt, args, start):
    return f"""api: completions
dataset:
  kind: trace
  path: {path}
  format: {fmt}
  start: {int(start)}s
  duration: {int(args.duration)}s
  speed: {args.speed}
  max_context: {CONTEXT}
  scale: true
load: {{kind: trace}}
timeout: 600s
"""


def control_trace(args, out):
    """The slice's rows, timestamps in seconds, without hash ids (nothing shared)."""
    path = os.path.join(out, "mooncake-no-sharing.jsonl")
    first = None
    with open(TRACE) as src, open(path, "w") as dst:
        for line in src:
            if not line.strip():
                continue
            row = json.loads(line)
            first = row["timestamp"] if first is None else first
            at = (row["timestamp"] - first) / 1000.0
            if args.start <= at < args.start + args.duration:
                dst.write(json.dumps({"timestamp": at, "input_length": row["input_length"],
                                      "output_length": row["output_length"]}) + "\n")
    return path


def evaluate(args, workload_path, seed):
    configs = os.path.join(args.out, "grid.jsonl")
    with open(configs, "w") as f:
        f.writelines(json.dumps(c) + "\n" for c in GRID)
    cmd = [args.bin, "sim", "eval", "--card", CARD, "--model", MODEL,
           "--set", f"max_model_len={CONTEXT}", "--seed", str(seed),
           "--workload", workload_path, "--configs", configs]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def study(args, name, workload_path):
    """Caching on runs under even seeds, off under odd ones: independent noise on each side."""
    runs = {}
    for seed in range(2 * args.seeds):
        for row in evaluate(args, workload_path, seed):
            if row["params"]["enable_prefix_caching"] != (seed % 2 == 0):
                continue
            key = json.dumps({k: row["params"][k] for k in GRID[0]}, sort_keys=True)
            runs.setdefault(key, []).append(row.get("metrics", {}).get(OBJECTIVE[0]))
    sign = 1 if OBJECTIVE[1] == "maximize" else -1
    means = {k: statistics.mean(v) for k, v in runs.items() if None not in v}
    winner = max(means, key=lambda k: sign * means[k])
    params = json.loads(winner)
    side = lambda caching: runs[json.dumps(dict(params, enable_prefix_caching=caching),
                                           sort_keys=True)]
    on, off = side(True), side(False)
    gain = sign * (statistics.mean(on) - statistics.mean(off))
    var = statistics.variance(on) / len(on) + statistics.variance(off) / len(off)
    se = math.sqrt(var)
    df = (var ** 2 / ((statistics.variance(on) / len(on)) ** 2 / (len(on) - 1)
                      + (statistics.variance(off) / len(off)) ** 2 / (len(off) - 1))
          if se > 0 else len(on) + len(off) - 2)
    half = t975(int(df)) * se
    base = statistics.mean(off)
    return {"workload": name, "winner": params, "objective": OBJECTIVE,
            "on": on, "off": off, "gain": gain, "ci95": [gain - half, gain + half],
            "gain_pct": 100 * gain / base, "ci95_pct": [100 * (gain - half) / base,
                                                         100 * (gain + half) / base],
            "means": means}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--speed", type=float, default=2)
    p.add_argument("--start", default="5m")
    p.add_argument("--duration", default="5m")
    p.add_argument("--out", default="target/bench-prefix-caching")
    args = p.parse_args()
    args.start, args.duration = seconds(args.start), seconds(args.duration)
    if args.seeds < 2:
        sys.exit("bench-prefix-caching: --seeds must be at least 2 (a confidence interval)")
    os.makedirs(args.out, exist_ok=True)
    shared = os.path.join(args.out, "mooncake.yaml")
    with open(shared, "w") as f:
        f.write(workload(TRACE, "mooncake", args, args.start))
    control = os.path.join(args.out, "no-sharing.yaml")
    with open(control, "w") as f:
        # The file holds only the window, its first row at time 0.
        f.write(workload(control_trace(args, args.out), "jsonl", args, 0))
    results = [study(args, "mooncake", shared), study(args, "same lengths, nothing shared", control)]
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    name, direction = OBJECTIVE
    print(f"| workload | winner | {name}, caching on | off | gain ({direction}d) | 95 % CI |")
    print("|---|---|---|---|---|---|")
    for r in results:
        w = r["winner"]
        print(f"| {r['workload']} | caching {'on' if w['enable_prefix_caching'] else 'off'}, "
              f"budget {w['max_num_batched_tokens']} | {statistics.mean(r['on']):.1f} | "
              f"{statistics.mean(r['off']):.1f} | {r['gain']:.1f} ({r['gain_pct']:.1f} %) | "
              f"{r['ci95'][0]:.1f} to {r['ci95'][1]:.1f} "
              f"({r['ci95_pct'][0]:.1f} to {r['ci95_pct'][1]:.1f} %) |")


if __name__ == "__main__":
    main()
