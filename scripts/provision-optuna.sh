#!/usr/bin/env bash
# Provisions a cached venv with pinned Optuna and cmaes (for Optuna's CMA-ES sampler), the
# outside baseline of the search benchmark (scripts/bench-search.sh, scripts/bench-optuna.py).
#
# Idempotent: the venv holds a stamp naming its pins once it is complete; a later run reuses
# it and rebuilds a half-done or differently pinned one. Needs the uv that
# scripts/provision-vllm-cpu.sh installs (INFERTUNE_CACHE/uv-<version>; set INFERTUNE_UV to
# use another uv). Prints the venv's python on its last line.
set -euo pipefail

# shellcheck source=scripts/vllm-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/vllm-env.sh"

export INFERTUNE_OPTUNA_VERSION=5.0.0
export INFERTUNE_CMAES_VERSION=0.13.1
VENV="$INFERTUNE_CACHE/optuna-$INFERTUNE_OPTUNA_VERSION"

log() { printf '[provision-optuna] %s\n' "$*" >&2; }
die() { printf '[provision-optuna] error: %s\n' "$*" >&2; exit 1; }

UV="${INFERTUNE_UV:-$INFERTUNE_UV_DIR/bin/uv}"
[[ -x "$UV" ]] || die "no uv at $UV: run scripts/provision-vllm-cpu.sh (it installs uv \
$INFERTUNE_UV_VERSION) or set INFERTUNE_UV to a uv binary"
HOST_PYTHON="${INFERTUNE_PYTHON:-python3}"
command -v "$HOST_PYTHON" >/dev/null \
    || die "no '$HOST_PYTHON' on PATH: install Python >= 3.10 or set INFERTUNE_PYTHON"

want="optuna==$INFERTUNE_OPTUNA_VERSION cmaes==$INFERTUNE_CMAES_VERSION"
stamp="$VENV/.complete"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$VENV/bin/python" ]]; then
    log "optuna $INFERTUNE_OPTUNA_VERSION: reused $VENV"
    echo "$VENV/bin/python"
    exit 0
fi
[[ -e "$VENV" ]] && log "$VENV is incomplete or from other pins; rebuilding it"
rm -rf "$VENV"
export UV_CACHE_DIR="${UV_CACHE_DIR:-$INFERTUNE_CACHE/uv-cache}"
if [[ -n "${PIP_INDEX_URL:-}" && -z "${UV_DEFAULT_INDEX:-}${UV_INDEX_URL:-}" ]]; then
    export UV_DEFAULT_INDEX="$PIP_INDEX_URL"
fi
"$UV" venv --quiet --no-python-downloads --python "$HOST_PYTHON" "$VENV" \
    || die "creating the venv $VENV failed"
# shellcheck disable=SC2086
"$UV" pip install --quiet --python "$VENV/bin/python" $want \
    || die "installing $want into $VENV failed (see uv's output above; is the Python package \
index reachable? point UV_DEFAULT_INDEX at a mirror otherwise)"
version=$("$VENV/bin/python" -c 'import optuna, cmaes; print(optuna.__version__)') \
    || die "the installed optuna does not import"
[[ "$version" == "$INFERTUNE_OPTUNA_VERSION" ]] \
    || die "optuna reports version $version, expected $INFERTUNE_OPTUNA_VERSION"
printf '%s' "$want" >"$stamp"
log "optuna $INFERTUNE_OPTUNA_VERSION with cmaes $INFERTUNE_CMAES_VERSION: ready in $VENV"
echo "$VENV/bin/python"
