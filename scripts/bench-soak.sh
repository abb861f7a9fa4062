#!/usr/bin/env bash
# Soak benchmark (not a test): an eight-hour night of simulator trials compressed into about
# ten minutes, several at once, the tuner killed at random points and resumed; prints peak RSS
# per eighth of the night, the report's rewrite time after the first hour and at the end, and
# trials lost and duplicated (both must be 0; exits non-zero otherwise). Knobs:
# scripts/bench-soak.py --help.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
exec python3 scripts/bench-soak.py "$@"
