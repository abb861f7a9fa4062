#!/usr/bin/env python3
"""Chaos benchmark: simulator studies under kill -9 of the tuner and of its servers, hostile
servers, two studies sharing a port, and secrets in the space. Prints what must all be 0:
trials lost, trials mis-attributed, trials a dead server won, processes and ports left behind,
and secrets found in the study folders.

Usage: scripts/bench-chaos.py [--studies N] [--kills K] [--seed S] [--bin PATH] [--keep]
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = "INFERTUNE_SERVER"
SECRET_ENV = "sk-chaos-env-6f1d3a"
SECRET_FLAG = "sk-chaos-flag-93b2c7"

SIM_SPACE = """\
name: {name}
engine: {{kind: sim, card: h100, model: qwen2.5-7b}}
launch:
  port: {port}
  ready_timeout: 30s
  stop_grace: 2s
  extra_args: ["--time-scale", "0.1", "--startup-time", "{startup}"]
parameters:
  max_num_seqs: {{type: int, low: 8, high: 256, log: true, default: 256}}
  max_num_batched_tokens: {{type: int, low: 512, high: 8192, log: true, default: 2048}}
  gpu_memory_utilization: {{type: float, low: 0.8, high: 0.95, step: 0.01, default: 0.9}}
probe:
  dataset: {{kind: random, input_len: 256, output_len: 64}}
  load: {{kind: closed, concurrency: 16, requests: {requests}}}
  ignore_eos: true
  timeout: 30s
  seed: 3
objective:
  metric: output_throughput
  subject_to: ["ttft:p99<=2s"]
search: {{sampler: random, trials: {trials}, seed: {seed}, revalidate_top: 1, repeats: 2}}
"""

CUSTOM_SPACE = """\
name: {name}
engine: {{kind: custom, model: tiny}}
launch:
  command: [python3, {fake}, --port, "{{port}}", {options}]
  port: {port}
  ready_timeout: 20s
  stop_grace: 1s
parameters:
  workers: {{type: choice, values: [1, 2], default: 1, internal: true}}
probe:
  dataset: {{kind: random, input_len: 8, output_len: 4}}
  load: {{kind: closed, concurrency: 2, requests: 8}}
  timeout: 5s
objective:
  metric: output_throughput
search: {{sampler: random, trials: 2, seed: 1, revalidate_top: 0}}
"""


def served(pid):
    """Requests the `sim serve` process `pid` has completed, per its /metrics (0 if unknown)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        port = int(argv[argv.index(b"--port") + 1])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as reply:
            text = reply.read().decode()
    except (OSError, ValueError, IndexError):
        return 0
    match = re.search(r"^vllm:request_success_total(?:\{[^}]*\})? ([0-9.e+]+)", text, re.M)
    return float(match.group(1)) if match else 0


def log(text):
    print(text, flush=True)


class Chaos:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.work = Path(tempfile.mkdtemp(prefix="infertune-chaos-"))
        self.results = self.work / "results"
        self.ports = set()
        self.counts = {
            "trials lost": 0,
            "trials duplicated": 0,
            "trials mis-attributed": 0,
            "trials won by a dead server": 0,
            "processes left": 0,
            "ports left": 0,
            "secrets found": 0,
        }

    # ---- running the tuner -------------------------------------------------------------
    def space(self, name, template, **fields):
        path = self.work / f"{name}.yaml"
        path.write_text(template.format(name=name, **fields))
        self.ports.update(range(fields["port"], fields["port"] + 20))
        return path

    def tune(self, space, study, resume, extra=()):
        argv = [self.args.bin, "tune", "--space", str(space), "--study", study,
                "--results", str(self.results), *extra]
        if resume:
            argv.append("--resume")
        env = dict(os.environ, CHAOS_TOKEN=SECRET_ENV)
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=env, cwd=ROOT, text=True)

    def run_with_kills(self, space, study, kills):
        """Starts the study, kill -9s the tuner `kills` times at random moments, resuming
        after each, then lets the last resume finish."""
        resume = False
        for _ in range(kills):
            proc = self.tune(space, study, resume)
            try:
                proc.wait(timeout=self.rng.uniform(1.5, 6.0))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            resume = True
        proc = self.tune(space, study, resume)
        _, err = proc.communicate(timeout=600)
        if proc.returncode not in (0, 1):
            log(f"  {study}: final run exited {proc.returncode}: {err.strip()[-300:]}")

    # ---- checks ------------------------------------------------------------------------
    def records(self, study):
        path = self.results / study / "journal.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def check_journal(self, study, trials):
        records = self.records(study)
        numbers = [r["number"] for r in records]
        duplicated = len(numbers) - len(set(numbers))
        searched = sum(1 for r in records if r.get("kind") != "repeat")
        lost = max(0, trials - searched)
        gaps = sorted(set(range(len(set(numbers)))) - set(numbers))
        self.counts["trials duplicated"] += duplicated
        self.counts["trials lost"] += lost + len(gaps)
        return records

    def check_attribution(self, records):
        """A probe that measured another server disagrees with its own server's counter."""
        bad = 0
        for r in records:
            m = r.get("metrics", {})
            status = r["outcome"]["status"]
            if status not in ("feasible", "infeasible") or "server_output_tokens" not in m:
                continue
            probed = (m.get("total_output_tokens", 0) + m.get("warmup_output_tokens", 0)
                      + m.get("incomplete_output_tokens", 0))
            if abs(m["server_output_tokens"] - probed) > 0.5:
                bad += 1
        self.counts["trials mis-attributed"] += bad

    def marked_processes(self):
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                env = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if MARKER.encode() + b"=" in env and self.ours(pid):
                found.append(int(pid))
        return found

    def ours(self, pid):
        """True for a process running in one of this benchmark's study folders."""
        try:
            return os.readlink(f"/proc/{pid}/cwd").startswith(str(self.work))
        except OSError:
            return False

    def listening_ports(self):
        ports = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                lines = Path(table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                if fields[3] == "0A":
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        return ports & self.ports

    def check_leftovers(self):
        time.sleep(1.0)
        procs = self.marked_processes()
        ports = self.listening_ports()
        self.counts["processes left"] += len(procs)
        self.counts["ports left"] += len(ports)
        for pid in procs:
            os.kill(pid, signal.SIGKILL)
        if procs or ports:
            log(f"  left behind: processes {procs}, ports {sorted(ports)}")

    def check_secrets(self):
        pattern = re.compile(f"{SECRET_ENV}|{SECRET_FLAG}".encode())
        for path in self.results.rglob("*"):
            if path.is_file() and pattern.search(path.read_bytes()):
                self.counts["secrets found"] += 1
                log(f"  secret in {path.relative_to(self.work)}")

    # ---- scenarios ---------------------------------------------------------------------
    def kill_the_tuner(self):
        for i in range(self.args.studies):
            name = f"killed-{i}"
            space = self.space(name, SIM_SPACE, port=21000 + 40 * i, startup="2s",
                               requests=48, trials=6, seed=i)
            self.run_with_kills(space, name, self.args.kills)
            self.check_attribution(self.check_journal(name, 6))
            log(f"  {name}: {len(self.records(name))} records")

    def kill_the_servers(self):
        name = "servers-killed"
        space = self.space(name, SIM_SPACE, port=21400, startup="1s", requests=200, trials=6,
                           seed=9)
        proc = self.tune(space, name, False)
        spared = set()
        while proc.poll() is None:
            for pid in self.marked_processes():
                if pid in spared or served(pid) < 5:
                    continue
                if self.rng.random() < 0.5:
                    spared.add(pid)
                    continue
                try:
                    cwd = os.readlink(f"/proc/{pid}/cwd")
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    continue
                match = re.search(r"trial-(\d+)$", cwd)
                if match:
                    self.killed_trials.add(int(match.group(1)))
            time.sleep(0.05)
        records = self.check_journal(name, 6)
        won = [r["number"] for r in records
               if r["number"] in self.killed_trials and r["outcome"]["status"] == "feasible"]
        self.counts["trials won by a dead server"] += len(won)
        log(f"  {name}: killed the servers of trials {sorted(self.killed_trials)}; "
            f"feasible among them: {won}")

    def share_a_port(self):
        spaces = [self.space(f"shared-{i}", SIM_SPACE, port=21600, startup="1s", requests=64,
                             trials=5, seed=20 + i) for i in range(2)]
        first = self.tune(spaces[0], "shared-0", False)
        time.sleep(0.3)
        second = self.tune(spaces[1], "shared-1", False)
        for proc in (first, second):
            proc.communicate(timeout=600)
        for i in range(2):
            self.check_attribution(self.check_journal(f"shared-{i}", 5))

    def hostile_servers(self):
        fake = ROOT / "tests/fixtures/children/fake_openai.py"
        for n, options in enumerate(["--daemon", "--workers, 2", "--ignore-term"]):
            name = f"hostile-{n}"
            space = self.space(name, CUSTOM_SPACE, port=21800 + 20 * n, fake=fake,
                               options=options)
            proc = self.tune(space, name, False)
            proc.communicate(timeout=300)
            self.check_journal(name, 2)
            self.check_leftovers()

    def secrets(self):
        name = "secrets"
        text = SIM_SPACE.replace(
            '  extra_args: ["--time-scale", "0.1", "--startup-time", "{startup}"]',
            '  extra_args: ["--time-scale", "0.1", "--startup-time", "{startup}", '
            f'"--api-key", "{SECRET_FLAG}"]\n  env: {{{{HF_TOKEN: "${{{{CHAOS_TOKEN}}}}"}}}}')
        space = self.space(name, text, port=21900, startup="1s", requests=16, trials=2,
                           seed=5)
        proc = self.tune(space, name, False)
        proc.communicate(timeout=300)

    def run(self):
        self.killed_trials = set()
        started = time.monotonic()
        for title, scenario in [
            ("kill -9 of the tuner, then --resume", self.kill_the_tuner),
            ("kill -9 of servers during their probe", self.kill_the_servers),
            ("two studies sharing a port", self.share_a_port),
            ("hostile servers (daemon, workers, ignored SIGTERM)", self.hostile_servers),
            ("secrets in launch.env and extra_args", self.secrets),
        ]:
            log(f"{title}:")
            scenario()
            self.check_leftovers()
        self.check_secrets()
        log(f"\nchaos benchmark ({time.monotonic() - started:.0f} s, work folder {self.work}):")
        for what, count in self.counts.items():
            log(f"  {what:32} {count}")
        if not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        return 0 if not any(self.counts.values()) else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--studies", type=int, default=3)
    p.add_argument("--kills", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bin", default=str(ROOT / "target/debug/infertune"))
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    return Chaos(p.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
