#!/usr/bin/env bash
# Runs the whole test suite: formatting, lints, unit and integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets
