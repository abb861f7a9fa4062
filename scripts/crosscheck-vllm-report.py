#!/usr/bin/env python3
"""Report of scripts/crosscheck-vllm.sh: each tool's numbers next to the server's own view.

Usage: crosscheck-vllm-report.py OUT ROUNDS

OUT holds, per tool (infertune | vllm) and round r: <tool>-r.json (the tool's report),
infertune-r.csv (per request) or vllm-r.json with --save-detailed (per request),
<tool>-r.before.prom / .after.prom (the server's /metrics around the run) and <tool>-r.cpu
(CPU samples: monotonic seconds, then clock ticks used so far by the load generator, by the
server's processes and by the whole machine).

The server's view of a run is the difference of its /metrics between the two scrapes:
histogram _sum/_count deltas give its mean TTFT (arrival in the API server to first token
out), mean TPOT (engine decode time / (N - 1) per request), mean ITL (engine step gaps, per
token) and mean E2E (arrival to the final output); counters give tokens per request. Its output
throughput is what its own latencies imply for a closed loop of c streams (Little's law:
c * output tokens per request / mean E2E); it leaves out the load generator's gaps between
requests and the ramp at both ends of a run.
"""

import csv
import json
import os
import re
import statistics
import sys

TOOLS = {"infertune": "infertune bench", "vllm": "vllm bench serve"}
TICKS_PER_S = os.sysconf("SC_CLK_TCK")
SAMPLE = re.compile(r"^(vllm:[a-z0-9_]+)(\{[^}]*\})? (\S+)$")


def scrape(path):
    """Sums each vllm:* sample over its labels (histogram buckets left out)."""
    totals = {}
    with open(path) as f:
        for line in f:
            m = SAMPLE.match(line.strip())
            if m and not (m.group(2) and "le=" in m.group(2)):
                totals[m.group(1)] = totals.get(m.group(1), 0.0) + float(m.group(3))
    return totals


def server_view(base, concurrency):
    before, after = scrape(f"{base}.before.prom"), scrape(f"{base}.after.prom")
    delta = {k: after[k] - before.get(k, 0.0) for k in after}
    requests = delta["vllm:request_success_total"]

    def mean_ms(histogram):
        return 1000 * delta[f"{histogram}_sum"] / delta[f"{histogram}_count"]

    view = {
        "requests": requests,
        "input_per_req": delta["vllm:prompt_tokens_total"] / requests,
        "output_per_req": delta["vllm:generation_tokens_total"] / requests,
        "mean_ttft_ms": mean_ms("vllm:time_to_first_token_seconds"),
        "mean_tpot_ms": mean_ms("vllm:request_time_per_output_token_seconds"),
        "mean_itl_ms": mean_ms("vllm:inter_token_latency_seconds"),
        "mean_e2el_ms": mean_ms("vllm:e2e_request_latency_seconds"),
    }
    # A closed loop of c streams, each request back to back, by Little's law.
    view["output_throughput"] = concurrency * view["output_per_req"] / view["mean_e2el_ms"] * 1000
    return view


def cpu_use(path, duration):
    """Cores used by the load generator, the server and everything else over the last
    `duration` s of the load generator's life (its run)."""
    samples = []
    with open(path) as f:
        for line in f:
            try:
                sample = tuple(map(float, line.split()))
            except ValueError:
                continue  # a line cut short when the sampler was stopped mid-write
            if len(sample) == 4:
                samples.append(sample)
    if len(samples) < 2:
        return {"client_cpu": float("nan"), "server_cpu": float("nan"), "other_cpu": float("nan")}
    end = samples[-1]
    start = next((s for s in samples if s[0] >= end[0] - duration), samples[0])
    span = (end[0] - start[0]) * TICKS_PER_S
    client, server, busy = ((end[i] - start[i]) / span for i in (1, 2, 3))
    return {"client_cpu": client, "server_cpu": server, "other_cpu": busy - client - server}


def tool_view(tool, base):
    with open(f"{base}.json") as f:
        report = json.load(f)
    done = report["completed"]
    view = {k: report[k] for k in
            ("output_throughput", "mean_ttft_ms", "mean_tpot_ms", "mean_itl_ms", "mean_e2el_ms")}
    view["duration"] = report["duration"]
    view["requests"] = done
    view["concurrency"] = report["max_concurrency"]
    view["output_per_req"] = report["total_output_tokens"] / done
    if tool == "infertune":
        with open(f"{base}.csv") as f:
            rows = [r for r in csv.DictReader(f) if r["ok"] == "true"]
        inputs = [int(r["input_tokens"]) for r in rows]
        # Events: chunks with non-empty text (the probe's token-bearing events).
        view["events_per_req"] = statistics.mean(int(r["token_events"]) for r in rows)
        # ITL as vllm bench pools it (every chunk with a choice, one chunk per token here):
        # the gaps of a request sum to E2E - TTFT whichever chunks count.
        span = sum(float(r["e2el_ms"]) - float(r["ttft_ms"]) for r in rows)
        view["itl_all_chunks_ms"] = span / sum(int(r["output_tokens"]) - 1 for r in rows)
    else:
        inputs = [n for n, e in zip(report["input_lens"], report["errors"]) if not e]
        # Events: every chunk with a choice, empty text included.
        view["events_per_req"] = statistics.mean(len(i) + 1 for i in report["itls"] if i)
    view["input_per_req"] = statistics.mean(inputs)
    view["input_range"] = (min(inputs), max(inputs))
    view.update(cpu_use(f"{base}.cpu", report["duration"]))
    return view


def pct(a, b):
    return f"{100 * (a - b) / b:+.1f}%" if b else "—"


def main():
    out, rounds = sys.argv[1], int(sys.argv[2])
    runs = {t: [] for t in TOOLS}
    for r in range(1, rounds + 1):
        for tool in TOOLS:
            base = f"{out}/{tool}-{r}"
            view = tool_view(tool, base)
            runs[tool].append((view, server_view(base, view["concurrency"])))

    print("Per run (tool / server's view of the same run):")
    print("| round | tool | s | in tok/req | out tok/req | events/req | out tok/s "
          "| TTFT ms | TPOT ms | ITL ms | E2E ms | CPU cores: client, server, other |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in range(rounds):
        order = list(TOOLS) if r % 2 == 0 else list(TOOLS)[::-1]
        for tool in order:
            t, s = runs[tool][r]
            lat = " | ".join(f"{t[k]:.1f} / {s[k]:.1f}" for k in
                             ("output_throughput", "mean_ttft_ms", "mean_tpot_ms",
                              "mean_itl_ms", "mean_e2el_ms"))
            print(f"| {r + 1} | {tool} | {t['duration']:.1f} "
                  f"| {t['input_per_req']:.2f} / {s['input_per_req']:.2f} "
                  f"| {t['output_per_req']:.1f} / {s['output_per_req']:.1f} "
                  f"| {t['events_per_req']:.1f} | {lat} "
                  f"| {t['client_cpu']:.2f}, {t['server_cpu']:.2f}, {t['other_cpu']:.2f} |")
    print()

    def med(tool, key, side=0):
        return statistics.median(run[side][key] for run in runs[tool])

    def ratio(tool, key):
        return statistics.median(t[key] / s[key] for t, s in runs[tool])

    print(f"Medians over {rounds} rounds; 'net of server' compares the tools' tool/server ratios,")
    print("which cancels what the server itself did differently during each tool's runs:")
    print("| metric | infertune | server (infertune runs) | vllm bench | server (vllm runs) "
          "| infertune vs vllm | server: infertune vs vllm runs | net of server |")
    print("|---|---|---|---|---|---|---|---|")
    rows = [("output_throughput", "output throughput (tok/s)", True),
            ("mean_ttft_ms", "mean TTFT (ms)", True),
            ("mean_tpot_ms", "mean TPOT (ms)", True),
            ("mean_itl_ms", "mean ITL (ms)", True),
            ("mean_e2el_ms", "mean E2E latency (ms)", True),
            ("input_per_req", "input tokens / request", True),
            ("output_per_req", "output tokens / request", True)]
    for key, label, has_server in rows:
        a, b = med("infertune", key), med("vllm", key)
        sa, sb = med("infertune", key, 1), med("vllm", key, 1)
        net = pct(ratio("infertune", key), ratio("vllm", key))
        print(f"| {label} | {a:.2f} | {sa:.2f} | {b:.2f} | {sb:.2f} | {pct(a, b)} "
              f"| {pct(sa, sb)} | {net} |")
    for key, label in [("events_per_req", "events / request (timed chunks)"),
                       ("client_cpu", "CPU cores: load generator"),
                       ("server_cpu", "CPU cores: server"),
                       ("other_cpu", "CPU cores: everything else")]:
        a, b = med("infertune", key), med("vllm", key)
        print(f"| {label} | {a:.2f} | — | {b:.2f} | — | {pct(a, b)} | — | — |")
    print()
    lo_a = min(t["input_range"][0] for t, _ in runs["infertune"])
    hi_a = max(t["input_range"][1] for t, _ in runs["infertune"])
    lo_b = min(t["input_range"][0] for t, _ in runs["vllm"])
    hi_b = max(t["input_range"][1] for t, _ in runs["vllm"])
    print(f"Prompt tokens per request (usage.prompt_tokens): infertune {lo_a}–{hi_a}, "
          f"vllm bench {lo_b}–{hi_b}.")
    itl_all = statistics.median(t["itl_all_chunks_ms"] / s["mean_itl_ms"]
                                for t, s in runs["infertune"])
    print("infertune's ITL pooled over every chunk as vllm bench pools it (Σ(E2E − TTFT) / "
          f"Σ(N − 1)), net of server vs vllm bench's ITL: {pct(itl_all, ratio('vllm', 'mean_itl_ms'))}.")


if __name__ == "__main__":
    main()
