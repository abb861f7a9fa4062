#!/usr/bin/env bash
# Provisions what the export checks (tests/e2e/deploy_exports.rs) run: `shellcheck` (the
# Debian package, installed once) and a cached venv with the pinned `kubernetes-validate`,
# which bundles the Kubernetes API's JSON schemas and validates manifests offline.
#
# Idempotent: the venv holds a stamp naming its pin once it is complete; a later run reuses it
# and rebuilds a half-done or differently pinned one. Needs the uv that
# scripts/provision-vllm-cpu.sh installs (INFERTUNE_CACHE/uv-<version>; set INFERTUNE_UV to use
# another uv). Prints `INFERTUNE_KUBERNETES_VALIDATE=<path of the validator>` on its last line.
set -euo pipefail

# shellcheck source=scripts/vllm-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/vllm-env.sh"

VERSION=1.34.0
VENV="$INFERTUNE_CACHE/kubernetes-validate-$VERSION"

log() { printf '[provision-export-checkers] %s\n' "$*" >&2; }
die() { printf '[provision-export-checkers] error: %s\n' "$*" >&2; exit 1; }

if ! command -v shellcheck >/dev/null; then
    command -v apt-get >/dev/null || die "no shellcheck on PATH and no apt-get to install it"
    [[ $(id -u) == 0 ]] || die "no shellcheck on PATH; installing it needs root: sudo apt-get install -y shellcheck"
    log "installing the shellcheck package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends shellcheck >/dev/null \
        || { apt-get update >/dev/null && apt-get install -y --no-install-recommends shellcheck >/dev/null; }
    command -v shellcheck >/dev/null || die "apt-get ran but no shellcheck is on PATH"
fi

want="kubernetes-validate==$VERSION"
stamp="$VENV/.complete"
if ! [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$VENV/bin/kubernetes-validate" ]]; then
    UV="${INFERTUNE_UV:-$INFERTUNE_UV_DIR/bin/uv}"
    [[ -x "$UV" ]] || die "no uv at $UV: run scripts/provision-vllm-cpu.sh or set INFERTUNE_UV"
    [[ -e "$VENV" ]] && log "$VENV is incomplete or from another pin; rebuilding it"
    rm -rf "$VENV"
    export UV_CACHE_DIR="${UV_CACHE_DIR:-$INFERTUNE_CACHE/uv-cache}"
    if [[ -n "${PIP_INDEX_URL:-}" && -z "${UV_DEFAULT_INDEX:-}${UV_INDEX_URL:-}" ]]; then
        export UV_DEFAULT_INDEX="$PIP_INDEX_URL"
    fi
    "$UV" venv --quiet --no-python-downloads --python "${INFERTUNE_PYTHON:-python3}" "$VENV" \
        || die "creating the venv $VENV failed"
    "$UV" pip install --quiet --python "$VENV/bin/python" "$want" \
        || die "installing $want into $VENV failed (is the Python package index reachable?)"
    printf '%s' "$want" >"$stamp"
    log "kubernetes-validate $VERSION: ready in $VENV"
fi
echo "INFERTUNE_KUBERNETES_VALIDATE=$VENV/bin/kubernetes-validate"
