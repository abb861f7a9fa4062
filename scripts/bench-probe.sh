#!/usr/bin/env bash
# Benchmarks the probe against a fake streaming server in another process (release build).
# Scenarios: baseline (concurrency 1), c1000, c2000, peak (no delays); default: all.
# Usage: scripts/bench-probe.sh [baseline] [c1000] [c2000] [peak]
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --bench probe -- "$@"
