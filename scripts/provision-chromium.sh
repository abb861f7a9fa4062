#!/usr/bin/env bash
# Installs headless Chromium (the Debian `chromium` package) for the report rendering check
# (tests/e2e/report_render.rs). Idempotent: does nothing when `chromium` is already on PATH.
# Exits 3 when it is missing and apt-get cannot install it (no apt-get, or not root).
set -euo pipefail

log() { printf '[chromium] %s\n' "$*" >&2; }

if command -v chromium >/dev/null; then
    exit 0
fi
if ! command -v apt-get >/dev/null; then
    log "no chromium on PATH and no apt-get to install it; install Chromium by hand"
    exit 3
fi
if [[ $(id -u) != 0 ]]; then
    log "no chromium on PATH; installing it needs root: sudo apt-get install -y chromium"
    exit 3
fi
log "installing the chromium package (about 100 MB)"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends chromium >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null; }
command -v chromium >/dev/null || { log "apt-get ran but no chromium is on PATH"; exit 1; }
