#!/usr/bin/env bash
# Provisions XInference 4.1.0 with its llama.cpp engine (the `xllamacpp` CPU wheel) for the
# end-to-end tests, in a thin venv layered over the CPU vLLM venv.
#
# XInference imports torch at module level, and torch from the package index is the CUDA
# build (about 3 GB). The lock scripts/xinference/xinference.lock leaves torch out (see
# scripts/xinference/overrides.txt) and is installed with --no-deps and hashes, so the install
# never resolves again; a .pth line then lets the venv import the CPU torch of the vLLM venv,
# after its own packages. Run scripts/provision-vllm-cpu.sh first (and
# scripts/provision-llamacpp.sh for the GGUF models the tests serve).
#
# Idempotent: the venv's stamp holds the lock's checksum and the vLLM venv's path; a later run
# reuses a complete venv and rebuilds a half-done or outdated one. Ends with KEY=VALUE lines
# between "# infertune-xinference-env begin" and "# infertune-xinference-env end"; the same
# lines are written to $INFERTUNE_CACHE/xinference-<version>.env.
set -euo pipefail

here="$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=scripts/vllm-env.sh
. "$here/vllm-env.sh"
# shellcheck source=scripts/xinference-env.sh
. "$here/xinference-env.sh"

PROVISION_TAG=provision-xinference
# shellcheck source=scripts/provision-common.sh
. "$here/provision-common.sh"

LOCK="$INFERTUNE_REPO_ROOT/scripts/xinference/xinference.lock"
UV="$INFERTUNE_UV_DIR/bin/uv"

# The vLLM venv's site-packages, where torch lives.
vllm_site() {
    "$INFERTUNE_VLLM_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
}

provision_venv() {
    local stamp="$INFERTUNE_XINFERENCE_VENV/.complete" want t0 t_step site torch_site out
    [[ -x "$INFERTUNE_VLLM_PYTHON" && -f "$INFERTUNE_VLLM_VENV/.complete" ]] \
        || die "no CPU vLLM venv at $INFERTUNE_VLLM_VENV (XInference takes its torch from it); run scripts/provision-vllm-cpu.sh first"
    [[ -x "$UV" ]] || die "no uv at $UV; run scripts/provision-vllm-cpu.sh first"
    want="lock=$(sha256sum "$LOCK" | cut -d' ' -f1) torch-from=$INFERTUNE_VLLM_VENV"
    t0=$(now_ns)
    if stamp_matches "$stamp" "$want"; then
        log "xinference $INFERTUNE_XINFERENCE_VERSION: reused $INFERTUNE_XINFERENCE_VENV"
        return
    fi
    if [[ -e "$INFERTUNE_XINFERENCE_VENV" ]]; then
        log "xinference: $INFERTUNE_XINFERENCE_VENV is incomplete or from another lock; rebuilding it"
    fi
    rm -rf "$INFERTUNE_XINFERENCE_VENV"
    export UV_CACHE_DIR="${UV_CACHE_DIR:-$INFERTUNE_CACHE/uv-cache}"
    if [[ -n "${PIP_INDEX_URL:-}" && -z "${UV_DEFAULT_INDEX:-}${UV_INDEX_URL:-}" ]]; then
        export UV_DEFAULT_INDEX="$PIP_INDEX_URL"
    fi
    # The same interpreter as the vLLM venv: torch's compiled modules are built for it.
    "$UV" venv --quiet --no-python-downloads --python "$INFERTUNE_VLLM_PYTHON" \
        "$INFERTUNE_XINFERENCE_VENV" || die "creating the venv $INFERTUNE_XINFERENCE_VENV failed"
    t_step=$(now_ns)
    # --no-deps: the lock is the whole set; resolving again would pull a CUDA torch.
    # Bytecode is compiled now, or every XInference process compiles it again at start.
    "$UV" pip install --quiet --python "$INFERTUNE_XINFERENCE_PYTHON" --no-deps \
        --require-hashes --compile-bytecode -r "$LOCK" \
        || die "installing $LOCK failed (see uv's output above); the package index must be reachable, or set PIP_INDEX_URL / UV_DEFAULT_INDEX to a mirror"
    log "xinference: installed the lock ($(elapsed "$t_step") s)"
    site=$("$INFERTUNE_XINFERENCE_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    torch_site=$(vllm_site)
    # A .pth line is appended to sys.path: the venv's own packages come first.
    printf '%s\n' "$torch_site" >"$site/zz-infertune-vllm-torch.pth"
    # The vLLM venv's torch has no bytecode (uv does not compile), and every XInference
    # process imports it: about 25 s of CPU each, which on 2 busy cores outlasts XInference's
    # fixed 120 s for its cluster to start. Its bytecode is compiled into a cache of this venv
    # (a pycache prefix, set by a .pth line for this venv's processes only), leaving the vLLM
    # venv unchanged; this venv's own modules are compiled there too.
    t_step=$(now_ns)
    printf 'import sys; sys.pycache_prefix = %s\n' "'$INFERTUNE_XINFERENCE_VENV/pycache'" \
        >"$site/00-infertune-pycache.pth"
    "$INFERTUNE_XINFERENCE_PYTHON" -X pycache_prefix="$INFERTUNE_XINFERENCE_VENV/pycache" \
        -m compileall -q -j 0 "$site" "$torch_site/torch" >/dev/null 2>&1 \
        || log "bytecode: some files do not compile (templates, Python 2 leftovers); skipped"
    log "bytecode: compiled into $INFERTUNE_XINFERENCE_VENV/pycache ($(elapsed "$t_step") s)"
    t_step=$(now_ns)
    out=$("$INFERTUNE_XINFERENCE_PYTHON" -c '
import torch, xllamacpp, xinference, xinference.deploy.local
print(xinference.__version__, torch.__version__)' 2>&1) \
        || die "the installed XInference does not import:
$(printf '%s\n' "$out" | tail -n 20)"
    out=$(printf '%s\n' "$out" | tail -n 1)
    [[ "$out" == "$INFERTUNE_XINFERENCE_VERSION "* ]] \
        || die "xinference reports '$out', expected version $INFERTUNE_XINFERENCE_VERSION"
    [[ -x "$INFERTUNE_XINFERENCE_BIN" && -x "$INFERTUNE_XINFERENCE_CLI" ]] \
        || die "the venv lacks $INFERTUNE_XINFERENCE_BIN or $INFERTUNE_XINFERENCE_CLI"
    log "import check: xinference and torch $out ($(elapsed "$t_step") s)"
    printf '%s' "$want" >"$stamp"
    log "xinference $INFERTUNE_XINFERENCE_VERSION: ready ($(elapsed "$t0") s in all)"
}

env_block() {
    local key
    for key in INFERTUNE_XINFERENCE_VERSION INFERTUNE_XINFERENCE_VENV \
        INFERTUNE_XINFERENCE_PYTHON INFERTUNE_XINFERENCE_BIN INFERTUNE_XINFERENCE_CLI; do
        printf '%s=%s\n' "$key" "${!key}"
    done
}

main() {
    local t0 env_file
    t0=$(now_ns)
    provision_venv
    env_file="$INFERTUNE_CACHE/xinference-$INFERTUNE_XINFERENCE_VERSION.env"
    env_block >"$env_file"
    log "environment written to $env_file"
    log "done ($(elapsed "$t0") s)"
    echo "# infertune-xinference-env begin"
    env_block
    echo "# infertune-xinference-env end"
}

main "$@"
