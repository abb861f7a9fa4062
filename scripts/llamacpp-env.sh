# shellcheck shell=bash
# Shared settings for the CPU llama.cpp server used by the end-to-end tests.
#
# Source it (`. scripts/llamacpp-env.sh`) after `scripts/vllm-env.sh` (the GGUF models are
# converted from the tiny model the vLLM provisioning builds). `scripts/provision-llamacpp.sh`
# creates what these paths point to. The server is built from the llama.cpp tree that the
# `llama-cpp-python` source distribution on PyPI vendors, pinned by version and checksum.

export INFERTUNE_LLAMACPP_PY_VERSION=0.3.36
export INFERTUNE_LLAMACPP_SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
export INFERTUNE_LLAMACPP_DIR="$INFERTUNE_CACHE/llamacpp-$INFERTUNE_LLAMACPP_PY_VERSION"
export INFERTUNE_LLAMACPP_BIN="$INFERTUNE_LLAMACPP_DIR/bin/llama-server"
export INFERTUNE_LLAMACPP_MODEL_F16="$INFERTUNE_LLAMACPP_DIR/models/llama-$INFERTUNE_MODEL_SIZE-seed$INFERTUNE_MODEL_SEED-f16.gguf"
export INFERTUNE_LLAMACPP_MODEL_Q8="$INFERTUNE_LLAMACPP_DIR/models/llama-$INFERTUNE_MODEL_SIZE-seed$INFERTUNE_MODEL_SEED-q8_0.gguf"
export INFERTUNE_LLAMACPP_MODEL_SMOLLM2="$INFERTUNE_LLAMACPP_DIR/models/smollm2-135m-seed$INFERTUNE_MODEL_SEED-f16.gguf"
