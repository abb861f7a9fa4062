#!/usr/bin/env bash
# Renders a study's report.html (a short simulator study) and a bench sweep's report.html with
# headless Chromium, to PNG and to the DOM after scripts ran, and checks that every plot has data
# in it (tests/e2e/report_render.rs, with Chromium required). Installs Chromium when it is missing
# (scripts/provision-chromium.sh); skips with a message when it cannot.
#
# Usage: scripts/screenshot-check.sh [PNG_DIR]   (default target/screenshots)
set -euo pipefail
cd "$(dirname "$0")/.."

out=$(realpath -m "${1:-target/screenshots}")
status=0
scripts/provision-chromium.sh || status=$?
if [[ $status == 3 ]]; then
    echo "[screenshot-check] SKIPPED: Chromium is missing and cannot be installed here" >&2
    exit 0
elif [[ $status != 0 ]]; then
    exit "$status"
fi
mkdir -p "$out"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
INFERTUNE_REQUIRE_CHROMIUM=1 INFERTUNE_SCREENSHOT_DIR="$out" \
    cargo test --test e2e report_render -- --include-ignored --nocapture >"$log" 2>&1 || rc=$?
if [[ $rc != 0 ]]; then
    tail -n 40 "$log" >&2
    echo "[screenshot-check] FAILED" >&2
    exit "$rc"
fi
grep -E 'bytes of PNG|^test result' "$log"
ls -l "$out"/*.png
