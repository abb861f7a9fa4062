#!/usr/bin/env bash
# Chaos benchmark (not a test): simulator studies under kill -9 of the tuner and of servers,
# hostile servers, two studies sharing a port and secrets in the space; prints trials lost,
# mis-attributed or won by a dead server, processes and ports left, secrets found (all must be
# 0) and exits non-zero otherwise. Knobs: scripts/bench-chaos.py --help.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
exec python3 scripts/bench-chaos.py "$@"
