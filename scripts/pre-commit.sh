#!/usr/bin/env bash
# The checks a commit must pass, as scripts/test.sh runs them: formatting, lints and the
# documentation build, warnings as errors (seconds when the build is warm). It checks the
# working tree, not only what is staged.
#
# Install it as this clone's pre-commit hook (a link, so it follows changes to this script):
#   ln -sf "$PWD/scripts/pre-commit.sh" "$(git rev-parse --git-path hooks)/pre-commit"
# `git commit --no-verify` skips it once.
set -euo pipefail
root=$(git rev-parse --show-toplevel 2>/dev/null) ||
    root="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
cd "$root"

step() { printf '[pre-commit] %s\n' "$*" >&2; }
fail() { printf '[pre-commit] failed: %s\n' "$*" >&2; exit 1; }

step "cargo fmt --check"
cargo fmt --all -- --check || fail "formatting; run \`cargo fmt --all\` and commit again"
step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings ||
    fail "lints above; fix them and commit again"
step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps ||
    fail "documentation warnings above; fix them and commit again"
step "all passed"
