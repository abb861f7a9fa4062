#!/usr/bin/env bash
# Launch benchmark: readiness-detection latency (gap between the child's own "listening"
# timestamp and the supervisor returning ready) and teardown time of a cooperative server.
# Usage: scripts/bench-launch.sh [ROUNDS]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --bench launch -- "${1:-20}"
