#!/usr/bin/env bash
# Provisions a CPU build of llama.cpp's `llama-server`, GGUF copies of the tiny model for
# the end-to-end tests, and a random-weight model of SmolLM2-135M's shape for the realistic
# study (search-spaces/llamacpp-realistic.yaml).
#
# The server is built from the llama.cpp tree vendored by the `llama-cpp-python` source
# distribution on PyPI (pinned version and checksum in scripts/llamacpp-env.sh); the models
# are converted from the tiny Llama that scripts/provision-vllm-cpu.sh creates (run it first),
# with llama.cpp's own converter and the vLLM venv's Python. Needs cmake and a C++ compiler:
# when either is missing it installs Debian's `cmake` and `g++` packages if it runs as root
# with apt-get, and otherwise stops saying what to install.
#
# Idempotent: every step leaves a stamp when it completes; a later run reuses complete steps.
# The build is the slow step (its time on 2 cores: docs/benchmarks.md). Ends with KEY=VALUE lines between
# "# infertune-llamacpp-env begin" and "# infertune-llamacpp-env end".
set -euo pipefail

here="$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=scripts/vllm-env.sh
. "$here/vllm-env.sh"
# shellcheck source=scripts/llamacpp-env.sh
. "$here/llamacpp-env.sh"

PROVISION_TAG=provision-llamacpp
# shellcheck source=scripts/provision-common.sh
. "$here/provision-common.sh"

SDIST="llama_cpp_python-$INFERTUNE_LLAMACPP_PY_VERSION.tar.gz"
SRC="$INFERTUNE_LLAMACPP_DIR/src"
TREE="$SRC/llama_cpp_python-$INFERTUNE_LLAMACPP_PY_VERSION/vendor/llama.cpp"

# Finds the sdist in the package index's simple page and downloads it; the checksum is
# verified before anything is unpacked.
fetch_sdist() {
    local stamp="$SRC/.complete" t0 index url
    if stamp_matches "$stamp" "$INFERTUNE_LLAMACPP_SDIST_SHA256" && [[ -d "$TREE" ]]; then
        log "source: reused $TREE"
        return
    fi
    t0=$(now_ns)
    rm -rf "$SRC" && mkdir -p "$SRC"
    index="${PIP_INDEX_URL:-https://pypi.org/simple}"
    url=$(curl -fsS --max-time 60 "${index%/}/llama-cpp-python/" \
        | grep -o "href=\"[^\"]*${SDIST}[^\"]*\"" | head -n 1 | sed 's/^href="//; s/#.*//; s/"$//') \
        || die "the package index ${index} is unreachable; set PIP_INDEX_URL to a mirror"
    [[ -n "$url" ]] || die "the index ${index} does not list $SDIST"
    curl -fsS --max-time 600 -o "$SRC/$SDIST" "$url" || die "downloading $url failed"
    echo "$INFERTUNE_LLAMACPP_SDIST_SHA256  $SRC/$SDIST" | sha256sum --check --quiet \
        || die "$SDIST does not have the pinned checksum $INFERTUNE_LLAMACPP_SDIST_SHA256"
    tar -xzf "$SRC/$SDIST" -C "$SRC" || die "unpacking $SDIST failed"
    rm "$SRC/$SDIST"
    printf '%s' "$INFERTUNE_LLAMACPP_SDIST_SHA256" >"$stamp"
    log "source: llama-cpp-python $INFERTUNE_LLAMACPP_PY_VERSION unpacked ($(elapsed "$t0") s)"
}

# cmake and g++ from Debian when missing (root and apt-get only); else says how to get them.
ensure_build_tools() {
    local missing=()
    command -v cmake >/dev/null || missing+=(cmake)
    command -v c++ >/dev/null || missing+=(g++)
    [[ ${#missing[@]} -eq 0 ]] && return
    command -v apt-get >/dev/null \
        || die "${missing[*]} missing and no apt-get to install them; install ${missing[*]} by hand"
    [[ $(id -u) == 0 ]] \
        || die "${missing[*]} missing; installing needs root: sudo apt-get install -y ${missing[*]}"
    log "installing ${missing[*]} (Debian packages)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
        || { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; } \
        || die "apt-get could not install ${missing[*]}"
}

build_server() {
    local stamp="$INFERTUNE_LLAMACPP_DIR/bin/.complete" t0 build="$INFERTUNE_LLAMACPP_DIR/build"
    if stamp_matches "$stamp" "$INFERTUNE_LLAMACPP_SDIST_SHA256" && [[ -x "$INFERTUNE_LLAMACPP_BIN" ]]; then
        log "llama-server: reused $INFERTUNE_LLAMACPP_BIN"
        return
    fi
    ensure_build_tools
    t0=$(now_ns)
    cmake -S "$TREE" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
        -DBUILD_SHARED_LIBS=OFF >&2 || die "cmake could not configure $TREE"
    cmake --build "$build" --target llama-server -j "$(nproc)" >&2 \
        || die "building llama-server failed (see the compiler's output above)"
    mkdir -p "$INFERTUNE_LLAMACPP_DIR/bin"
    cp "$build/bin/llama-server" "$INFERTUNE_LLAMACPP_BIN"
    "$INFERTUNE_LLAMACPP_BIN" --version >&2 || die "the built llama-server does not start"
    rm -rf "$build"
    printf '%s' "$INFERTUNE_LLAMACPP_SDIST_SHA256" >"$stamp"
    log "llama-server: built ($(elapsed "$t0") s)"
}

# Converts the tiny model with llama.cpp's converter. The converter recognises tokenizers by a
# hash of how they split a fixed text and does not know the locally trained one; it is a
# byte-level BPE like GPT-2's, which scripts/gguf-convert.py tells the converter.
convert_model() {
    local outtype=$1 out=$2 t0
    if [[ -f "$out" ]]; then
        log "model: reused $out"
        return
    fi
    [[ -f "$INFERTUNE_VLLM_MODEL/config.json" ]] \
        || die "no tiny model at $INFERTUNE_VLLM_MODEL: run scripts/provision-vllm-cpu.sh first"
    t0=$(now_ns)
    mkdir -p "$(dirname "$out")"
    PYTHONPATH="$TREE/gguf-py:$TREE" "$INFERTUNE_VLLM_PYTHON" "$here/gguf-convert.py" "$TREE" \
        "$INFERTUNE_VLLM_MODEL" --outfile "$out.partial" --outtype "$outtype" >&2 \
        || die "converting $INFERTUNE_VLLM_MODEL to $outtype GGUF failed (see above)"
    mv "$out.partial" "$out"
    log "model: wrote $out ($(elapsed "$t0") s)"
}

# A random-weight model of a real architecture's shape (scripts/model-shapes.json), written
# straight to GGUF with llama.cpp's gguf-py and the tiny model's tokenizer.
make_shaped_model() {
    local shape=$1 out=$2 t0
    if [[ -f "$out" ]]; then
        log "model: reused $out"
        return
    fi
    t0=$(now_ns)
    "$INFERTUNE_VLLM_PYTHON" "$here/make-gguf.py" --gguf-py "$TREE/gguf-py" --shape "$shape" \
        --type f16 --tokenizer "$INFERTUNE_VLLM_MODEL/tokenizer.json" --seed "$INFERTUNE_MODEL_SEED" \
        --out "$out" >&2 || die "writing the $shape-shaped GGUF failed (see above)"
    log "model: wrote $out ($(elapsed "$t0") s)"
}

env_block() {
    local key
    for key in INFERTUNE_LLAMACPP_PY_VERSION INFERTUNE_LLAMACPP_BIN INFERTUNE_LLAMACPP_MODEL_F16 \
        INFERTUNE_LLAMACPP_MODEL_Q8 INFERTUNE_LLAMACPP_MODEL_SMOLLM2; do
        printf '%s=%s\n' "$key" "${!key}"
    done
}

main() {
    local t0
    t0=$(now_ns)
    mkdir -p "$INFERTUNE_LLAMACPP_DIR"
    fetch_sdist
    build_server
    convert_model f16 "$INFERTUNE_LLAMACPP_MODEL_F16"
    convert_model q8_0 "$INFERTUNE_LLAMACPP_MODEL_Q8"
    make_shaped_model smollm2-135m "$INFERTUNE_LLAMACPP_MODEL_SMOLLM2"
    env_block >"$INFERTUNE_LLAMACPP_DIR/env"
    log "done ($(elapsed "$t0") s)"
    echo "# infertune-llamacpp-env begin"
    env_block
    echo "# infertune-llamacpp-env end"
}

main "$@"
