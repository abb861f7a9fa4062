#!/usr/bin/env bash
# Provisions what the export checks (tests/e2e/deploy_exports.rs) run: `shellcheck` (the
# Debian package, installed once) and a cached venv with the pinned `kubernetes-validate`,
# which bundles the Kubernetes API's JSON schemas and validates manifests offline.
#
# Idempotent: the venv holds a stamp naming its pin once it is complete; a later run reuses it
# and rebuilds a half-done or differently pinned one. Needs only the host's Python (3.10 or
# later, with its venv module; INFERTUNE_PYTHON names another): it runs beside the engines'
# provisioning in scripts/test.sh and must not wait for it. Prints
# `INFERTUNE_KUBERNETES_VALIDATE=<path of the validator>` on its last line.
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
    [[ -e "$VENV" ]] && log "$VENV is incomplete or from another pin; rebuilding it"
    rm -rf "$VENV"
    "${INFERTUNE_PYTHON:-python3}" -m venv "$VENV" || die "creating the venv $VENV failed"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$want" \
        || die "installing $want into $VENV failed (is the Python package index reachable?)"
    printf '%s' "$want" >"$stamp"
    log "kubernetes-validate $VERSION: ready in $VENV"
fi
echo "INFERTUNE_KUBERNETES_VALIDATE=$VENV/bin/kubernetes-validate"
