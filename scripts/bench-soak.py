#!/usr/bin/env python3
"""Soak benchmark: an eight-hour night of simulator trials, compressed by the simulator's time
scale into minutes, with several trials at once, the tuner killed (kill -9) at random points
of the journal and resumed each time. Prints the tuner's peak RSS per eighth of the night (an
eighth is the first hour), the time `infertune report` takes on the study after its first
hour and at its end, and the counts of trials lost and duplicated (both must be 0).

Usage: scripts/bench-soak.py [--trials N] [--parallel P] [--kills K] [--time-scale X]
                             [--seed S] [--bin PATH] [--keep]
"""
import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A modelled trial: five minutes of start-up (a large model's load and graph capture) and a
# probe of a few hundred requests, about six minutes in all; 320 of them four at a time fill
# eight hours, and at --time-scale 0.02 that night takes about ten minutes.
SPACE = """\
name: soak
engine: {{kind: sim, card: h100, model: qwen2.5-7b}}
launch:
  port: 19100
  ready_timeout: 60s
  stop_grace: 2s
  extra_args: ["--time-scale", "{scale}", "--startup-time", "300s"]
parameters:
  max_num_seqs: {{type: int, low: 8, high: 256, log: true, default: 256}}
  max_num_batched_tokens: {{type: int, low: 512, high: 8192, log: true, default: 2048}}
  gpu_memory_utilization: {{type: float, low: 0.8, high: 0.95, step: 0.01, default: 0.9}}
  enable_chunked_prefill: {{type: bool, default: true}}
probe:
  dataset: {{kind: random, input_len: 512, output_len: 128}}
  load: {{kind: closed, concurrency: 16, requests: 160}}
  ignore_eos: true
  timeout: 60s
  seed: 3
objective:
  metric: output_throughput
  subject_to: ["ttft:p99<=2s"]
search: {{sampler: random, trials: {trials}, seed: {seed}, revalidate_top: 1, repeats: 1}}
"""


def journal(study):
    """The whole records of the journal (a torn last line is left out)."""
    path = study / "journal.jsonl"
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return records


def rss_kib(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def report_seconds(binary, study, records, work):
    """Seconds `infertune report` takes on a copy of `study` holding its first `records`."""
    copy = work / f"report-{records}" / "soak"
    shutil.copytree(study, copy, ignore=shutil.ignore_patterns("study.lock"))
    lines = (study / "journal.jsonl").read_text().splitlines()[:records]
    (copy / "journal.jsonl").write_text("".join(line + "\n" for line in lines))
    started = time.monotonic()
    subprocess.run([binary, "report", str(copy)], check=True, capture_output=True)
    return time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=320)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--time-scale", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--bin", default=str(ROOT / "target/debug/infertune"))
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="infertune-soak-"))
    space = work / "soak.yaml"
    space.write_text(SPACE.format(scale=args.time_scale, trials=args.trials, seed=args.seed))
    study = work / "results" / "soak"
    argv = [args.bin, "tune", "--space", str(space), "--results", str(work / "results"),
            "--parallel", str(args.parallel)]
    kills = sorted(rng.sample(range(2, args.trials), args.kills))
    samples = []  # (records journaled, RSS KiB)
    seen = {}  # trial number -> record, as journaled before a kill
    lost = duplicated = 0
    started = time.monotonic()
    resume = False
    while True:
        tuner = subprocess.Popen(argv + (["--resume"] if resume else []),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        target = kills.pop(0) if kills else None
        while tuner.poll() is None:
            records = journal(study)
            samples.append((len(records), rss_kib(tuner.pid)))
            if target is not None and len(records) >= target:
                tuner.send_signal(signal.SIGKILL)
                break
            time.sleep(0.5)
        _, stderr = tuner.communicate()
        records = journal(study)
        numbers = [r["number"] for r in records]
        duplicated = max(duplicated, len(numbers) - len(set(numbers)))
        lost += sum(1 for n, r in seen.items() if n not in numbers)
        seen = {r["number"]: r for r in records}
        if target is None:
            if tuner.returncode != 0:
                sys.exit(f"the last run failed: {stderr}")
            break
        print(f"killed at {len(records)} records ({time.monotonic() - started:.0f} s)",
              flush=True)
        resume = True
    wall = time.monotonic() - started
    records = journal(study)
    # Simulated time: trial wall times over the slots, scaled back up.
    scale = 1 / args.time_scale / args.parallel
    clock, hour_at = 0.0, None
    for index, record in enumerate(records):
        clock += record.get("wall_s", 0) * scale
        if hour_at is None and clock >= 3600:
            hour_at = index + 1
    hour_at = hour_at or len(records)
    eighth = max(1, len(records) // 8)
    peaks = []
    for part in range(8):
        low, high = part * eighth, (part + 1) * eighth if part < 7 else len(records) + 1
        window = [rss for n, rss in samples if low <= n < high and rss > 0]
        peaks.append(max(window) if window else 0)
    first_hour = max((rss for n, rss in samples if n <= hour_at), default=0)
    first_report = report_seconds(args.bin, study, hour_at, work)
    last_report = report_seconds(args.bin, study, len(records), work)
    print(f"trials journaled: {len(records)}, simulated night {clock / 3600:.1f} h, "
          f"wall {wall:.0f} s, {args.parallel} at once, {args.kills} kills")
    print("peak RSS per eighth of the night (MiB): "
          + " ".join(f"{p / 1024:.1f}" for p in peaks))
    growth = peaks[-1] / first_hour - 1 if first_hour else float("nan")
    print(f"peak RSS: {first_hour / 1024:.1f} MiB in the first simulated hour "
          f"({hour_at} records), {peaks[-1] / 1024:.1f} MiB in the last eighth ({growth:+.1%})")
    print(f"report rewrite: {first_report:.2f} s after the first hour ({hour_at} records), "
          f"{last_report:.2f} s at the end ({len(records)} records)")
    print(f"trials lost: {lost}")
    print(f"trials duplicated: {duplicated}")
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if lost or duplicated else 0)


if __name__ == "__main__":
    main()
