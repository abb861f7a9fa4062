#!/usr/bin/env python3
"""Fit the simulator's step-time constants of the `vllm-v1-async` engine profile to measured truth.

Usage: scripts/fit-sim.py [TRUTH.csv] [MODEL_CONFIG_DIR]
(defaults: data/sim-truth/h100-vllm.csv and its model-configs/ folder)

What is fitted, and to what: for every row that was not overloaded, the measured time between
output tokens, (e2e - TTFT) / (output_len - 1), is the duration of one engine step. The step's
shape follows from Little's law: N = rate x e2e sequences decode in it, and the prompts arriving
meanwhile add rate x (uncached prompt tokens) x step of prefill (a returning multi-turn user's
prompt is cached but for its last partial block; otherwise only the system prompt's full
blocks are). The simulator's step formula (src/sim/cost.rs) is evaluated on that shape, and
three general constants are chosen to minimise the squared log error over all rows:
bw_efficiency, host_base_ms and host_per_seq_ms. mfu stays vllm-v1's (these steps hardly
compute: the rows do not identify it). Then request_latency_ms, the API server's latency on
every request: a request arriving mid-step waits half a step, then the step already planned
(async scheduling), then its own step, so its median TTFT is 2.5 steps plus that latency; the
constant is the median over rows of p50 TTFT - 2.5 x step. No constant depends on a model or
a workload. Prints
the constants to paste into src/sim/profiles/engines.yaml and each row's fitted error.
Python 3 standard library only.
"""

import csv
import json
import math
import os
import sys

# H100 SXM (src/sim/profiles/cards.yaml) and the fixed vllm-v1 constants (engines.yaml).
PEAK_FLOPS = 989e12
HBM_BYTES = 3350e9
LINK_BYTES = 450e9
LINK_LATENCY_S = 4e-6
LAYER_LAUNCH_S = 5e-6
HOST_PER_TOKEN_S = 2e-6
HOST_PER_TP_WORKER = 0.05
BLOCK = 16
MFU = 0.55


def model_shape(path):
    """Parameters (total, active), expert params and attention shape, as src/sim/profiles/hf.rs."""
    c = json.load(open(path))
    h, layers, heads = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or heads
    hd = c.get("head_dim") or h // heads
    tied = c.get("tie_word_embeddings", False)
    experts = c.get("num_local_experts") or c.get("num_experts") or 1
    attention = h * heads * hd * 2 + h * kv * hd * 2
    embeddings = c["vocab_size"] * h * (1 if tied else 2)
    if experts > 1:
        k = c["num_experts_per_tok"]
        inter = c.get("moe_intermediate_size") or c["intermediate_size"]
        shared = c.get("shared_expert_intermediate_size") or 0
        expert_all = 3 * h * inter * experts
        mlp = expert_all + 3 * h * shared + h * experts
        expert_params = layers * expert_all
    else:
        k, expert_params = 1, 0
        mlp = 3 * h * c["intermediate_size"]
    total = embeddings + layers * (attention + mlp)
    return dict(total=total, experts=experts, k=k, expert_params=expert_params, hidden=h,
                layers=layers, heads=heads, kv=kv, head_dim=hd)


def weight_bytes_read(m, tokens):
    if m["experts"] == 1:
        return m["total"] * 2
    read = 1 - (1 - m["k"] / m["experts"]) ** max(tokens, 1)
    return (m["total"] - m["expert_params"] * (1 - read)) * 2


def active(m):
    return m["total"] - m["expert_params"] * (1 - m["k"] / m["experts"])


def step_seconds(theta, m, tp, seqs, prefill, decode_ctx, prefill_ctx, prefill_attn):
    """src/sim/cost.rs CostModel::step_seconds for an H100 with constants theta."""
    bw, host_base_ms, host_per_seq_ms = theta
    mfu = MFU
    tokens = seqs + prefill
    shape_eff = m["hidden"] / (m["hidden"] + 1024)
    flops = 2 * active(m) / tp * tokens + 4 * m["layers"] * m["heads"] * m["head_dim"] / tp * (
        prefill_attn + decode_ctx)
    kv_per_token = 2 * m["layers"] * math.ceil(m["kv"] / tp) * m["head_dim"] * 2
    byts = weight_bytes_read(m, tokens) / tp + kv_per_token * (decode_ctx + prefill_ctx)
    device = max(flops / (PEAK_FLOPS * mfu * shape_eff), byts / (HBM_BYTES * bw))
    comm = 0.0
    if tp > 1:
        hops = 2 * (tp - 1)
        comm = 2 * m["layers"] * (hops * LINK_LATENCY_S + hops / tp * tokens * m["hidden"] * 2
                                  / LINK_BYTES)
    host = (host_base_ms * 1e-3 + host_per_seq_ms * 1e-3 * seqs + HOST_PER_TOKEN_S * tokens) * (
        1 + HOST_PER_TP_WORKER * (tp - 1))
    return device + m["layers"] * LAYER_LAUNCH_S + comm + host


def observations(truth, configs):
    obs = []
    for r in csv.DictReader(open(truth)):
        if float(r["failures"]) > 0 or float(r["ttft_mean_ms"]) > 10_000:
            continue  # overloaded: no steady state to read a step from
        m = model_shape(os.path.join(configs, r["model"].rsplit("/", 1)[-1] + ".json"))
        rate, out = float(r["rate"]), int(r["output_len"])
        e2e, ttft = float(r["e2e_mean_s"]), float(r["ttft_mean_ms"]) / 1000
        step = (e2e - ttft) / (out - 1)
        system, question = int(r["system_prompt_len"]), int(r["question_len"])
        prompt = system + question
        if r["multi_turn"].strip().lower() == "true":
            fresh = prompt - (prompt - 1) // BLOCK * BLOCK
        else:
            fresh = prompt - system // BLOCK * BLOCK
        seqs = rate * e2e
        prefill = rate * fresh * step
        decode_ctx = seqs * (prompt + out / 2)
        prefill_ctx = prefill * prompt / fresh * 0.5 + prefill * (prompt - fresh)
        prefill_attn = prefill * (prompt - fresh + fresh / 2)
        latency = float(r["ttft_p50_ms"]) / 1000 - 2.5 * step
        obs.append((r["experiment"] + "/" + r["stage"], step, m, int(r["tp"]), seqs, prefill,
                    decode_ctx, prefill_ctx, prefill_attn, latency))
    return obs


def loss(theta, obs):
    return sum(math.log(step_seconds(theta, *o[2:9]) / o[1]) ** 2 for o in obs)


def fit(obs):
    """Grid over the three constants, then coordinate refinement: deterministic."""
    best = None
    for bw in [0.6, 0.7, 0.8, 0.9]:
        for base in [0.0, 0.5, 1.0, 2.0]:
            for per_seq in [0.0, 0.01, 0.03]:
                theta = (bw, base, per_seq)
                value = loss(theta, obs)
                if best is None or value < best[0]:
                    best = (value, theta)
    theta = list(best[1])
    bounds = [(0.3, 1.0), (0.0, 5.0), (0.0, 0.2)]
    scale = [0.05, 0.25, 0.01]
    for _ in range(60):
        for i in range(3):
            for sign in (1, -1):
                trial = list(theta)
                trial[i] = min(max(trial[i] + sign * scale[i], bounds[i][0]), bounds[i][1])
                if loss(trial, obs) < loss(theta, obs):
                    theta = trial
        scale = [s * 0.8 for s in scale]
    return theta


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_dir = os.path.join(here, "..", "data", "sim-truth")
    truth = sys.argv[1] if len(sys.argv) > 1 else os.path.join(default_dir, "h100-vllm.csv")
    configs = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(truth), "model-configs")
    obs = observations(truth, configs)
    theta = fit(obs)
    print(f"# fitted on {len(obs)} rows of {os.path.basename(truth)} by scripts/fit-sim.py")
    for name, value in zip(["bw_efficiency", "host_base_ms", "host_per_seq_ms"], theta):
        print(f"  {name}: {value:.3f}")
    latencies = sorted(o[9] for o in obs)
    middle = len(latencies) // 2
    median = latencies[middle] if len(latencies) % 2 else sum(latencies[middle - 1:middle + 1]) / 2
    print(f"  request_latency_ms: {median * 1e3:.1f}")
    for o in obs:
        pred = step_seconds(theta, *o[2:9])
        print(f"# {o[0]:<52} step {o[1] * 1e3:6.2f} ms, model {pred * 1e3:6.2f} ms "
              f"({(pred / o[1] - 1) * 100:+.1f} %)")


if __name__ == "__main__":
    main()
