#!/usr/bin/env bash
# A real gain on one GPU, checkable on a machine with no network (one NVIDIA card, CUDA
# toolkit, CMake, a Python with numpy): builds llama.cpp's llama-server with CUDA for that
# card only, writes a random-weight model of Llama-3.1-8B's shape (q8_0), and runs a short
# study (search: scripts/gpu-check/llamacpp-gpu.yaml) that prints the winner's gain over
# llama-server's defaults with its 95% CI, both sides re-validated.
#
#   scripts/gpu-check.sh pack          # here, with network: what the GPU machine needs, into
#                                      # target/gpu-check (llama.cpp source, infertune, tokenizer)
#   scripts/gpu-check.sh build         # there: llama-server with CUDA for the card, and the
#                                      # model written meanwhile                     (~5 min)
#   scripts/gpu-check.sh tune          # there: the study                             (~8 min)
#   scripts/gpu-check.sh all           # there: build then tune
#   scripts/gpu-check.sh all --cpu     # the same steps without CUDA (a dry run: SmolLM2-135M's
#                                      # shape, two trials), on any machine
#   scripts/gpu-check.sh tune -- --budget 7m   # arguments after `--` go to `infertune tune`
#
# Outputs (build log, study folder, summary.txt) go to $OUT when set, else target/gpu-check/out.
# PYTHON names a Python with numpy when `python3` has none (e.g. the CPU vLLM venv's).
# Nothing in CI depends on it. Figures: docs/benchmarks.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
pack=$PWD/target/gpu-check
out=${OUT:-$pack/out}
work=$pack/work
log() { printf '[gpu-check] %s\n' "$*" >&2; }
die() { printf '[gpu-check] error: %s\n' "$*" >&2; exit 2; }
now() { date +%s; }

usage="usage: $0 pack | build | tune | all [--cpu] [-- TUNE-ARGS...]"
step=${1:-}
shift || true
cpu=false
if [[ ${1:-} == --cpu ]]; then
    cpu=true
    shift
fi
tune_args=()
if [[ ${1:-} == -- ]]; then
    shift
    tune_args=("$@")
elif [[ $# -gt 0 ]]; then
    die "$usage"
fi

# Everything the GPU machine needs that it cannot download: the llama.cpp source the project
# builds from (its models, docs and web UI sources left out), infertune and the tokenizer.
do_pack() {
    # shellcheck source=scripts/vllm-env.sh
    . scripts/vllm-env.sh
    # shellcheck source=scripts/llamacpp-env.sh
    . scripts/llamacpp-env.sh
    local tree="$INFERTUNE_LLAMACPP_DIR/src/llama_cpp_python-$INFERTUNE_LLAMACPP_PY_VERSION/vendor"
    [[ -d $tree/llama.cpp ]] || die "no llama.cpp source at $tree: run scripts/provision-llamacpp.sh"
    [[ -f $INFERTUNE_VLLM_MODEL/tokenizer.json ]] || die "no tiny model: run scripts/provision-vllm-cpu.sh"
    mkdir -p "$pack"
    tar -C "$tree" --exclude=llama.cpp/models --exclude=llama.cpp/docs \
        --exclude=llama.cpp/tools/server/webui -czf "$pack/llama.cpp.tgz" llama.cpp
    cargo build --quiet --bin infertune
    cp target/debug/infertune "$pack/infertune" && strip "$pack/infertune"
    cp "$INFERTUNE_VLLM_MODEL/tokenizer.json" "$INFERTUNE_VLLM_MODEL/chat_template.jinja" "$pack/"
    log "packed: $(du -sh "$pack" | cut -f1) in $pack (carry it to the GPU machine)"
}

do_build() {
    [[ -f $pack/llama.cpp.tgz ]] || die "$pack/llama.cpp.tgz missing: run '$0 pack' where the network is"
    command -v cmake >/dev/null || die "cmake is missing"
    local flags=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF)
    if [[ $cpu == false ]]; then
        command -v nvidia-smi >/dev/null || die "no nvidia-smi: run with --cpu for the dry run"
        command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] || die "no nvcc (CUDA toolkit)"
        export PATH="$PATH:/usr/local/cuda/bin"
        local cap
        cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
        [[ $cap =~ ^[0-9]+$ ]] || die "nvidia-smi reports no compute capability"
        flags+=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$cap")
        log "card: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -n 1), sm_$cap"
    fi
    command -v ninja >/dev/null && flags+=(-G Ninja)
    rm -rf "$work/src" "$work/build" && mkdir -p "$work/src" "$out"
    tar -C "$work/src" -xzf "$pack/llama.cpp.tgz"
    # The model is written meanwhile: one core of numpy beside the compilers.
    do_model >"$out/model.log" 2>&1 &
    local model_job=$! t0
    t0=$(now)
    { cmake -S "$work/src/llama.cpp" -B "$work/build" "${flags[@]}" &&
        cmake --build "$work/build" --target llama-server -j "$(nproc)"; } >"$out/build.log" 2>&1 \
        || { tail -n 30 "$out/build.log" >&2; die "the build failed (log: $out/build.log)"; }
    cp "$work/build/bin/llama-server" "$work/llama-server"
    echo "build_seconds=$(( $(now) - t0 ))" | tee "$out/build.txt" >&2
    wait "$model_job" || { cat "$out/model.log" >&2; die "writing the model failed"; }
}

# The model's shape and type: Llama-3.1-8B at q8_0 on a GPU, SmolLM2-135M at f16 for the dry run.
model_path() {
    if [[ $cpu == true ]]; then echo "$work/smollm2-135m-f16.gguf"; else echo "$work/llama-3.1-8b-q8_0.gguf"; fi
}

do_model() {
    local python shape=llama-3.1-8b type=q8_0 model t0
    python=${PYTHON:-$(command -v python3 || command -v python)} || die "no python3"
    "$python" -c 'import numpy' 2>/dev/null || die "$python has no numpy"
    if [[ $cpu == true ]]; then
        shape=smollm2-135m
        type=f16
    fi
    model=$(model_path)
    mkdir -p "$work" "$out"
    t0=$(now)
    if [[ ! -f $model ]]; then
        tar -C "$work" -xzf "$pack/llama.cpp.tgz" llama.cpp/gguf-py
        "$python" scripts/make-gguf.py --gguf-py "$work/llama.cpp/gguf-py" --shape "$shape" \
            --type "$type" --context 32768 --tokenizer "$pack/tokenizer.json" --out "$model.part" >&2
        mv "$model.part" "$model"
    fi
    echo "model_seconds=$(( $(now) - t0 ))" | tee "$out/model.txt" >&2
}

do_tune() {
    [[ -x $work/llama-server ]] || die "no llama-server in $work: run '$0 build' first"
    local model trials=() t0
    model=$(model_path)
    [[ -f $model ]] || do_model
    [[ $cpu == true && ${#tune_args[@]} -eq 0 ]] && trials=(--trials 2)
    mkdir -p "$out"
    export INFERTUNE_GPU_CHECK_MODEL=$model INFERTUNE_GPU_CHECK_SERVER=$work/llama-server
    local bin=$pack/infertune
    [[ -x $bin ]] || bin=target/debug/infertune
    [[ -x $bin ]] || die "no infertune binary: run '$0 pack' first"
    t0=$(now)
    "$bin" tune --space scripts/gpu-check/llamacpp-gpu.yaml --results "$out" --study gpu-check \
        "${trials[@]}" "${tune_args[@]}" | tee "$out/summary.txt"
    echo "tune_seconds=$(( $(now) - t0 ))" | tee -a "$out/summary.txt" >&2
}

case $step in
    pack) do_pack ;;
    build) do_build ;;
    tune) do_tune ;;
    all) do_build && do_tune ;;
    *) die "$usage" ;;
esac
