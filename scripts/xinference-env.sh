# shellcheck shell=bash
# Shared settings for the CPU XInference used by the end-to-end tests.
#
# Source it (`. scripts/xinference-env.sh`) after `scripts/vllm-env.sh` and
# `scripts/llamacpp-env.sh`: XInference takes torch from the CPU vLLM venv and serves the
# GGUF copies of the tiny model that the llama.cpp provisioning converts.
# `scripts/provision-xinference.sh` creates what these paths point to, from the lock
# `scripts/xinference/xinference.lock`.

export INFERTUNE_XINFERENCE_VERSION=4.1.0
export INFERTUNE_XINFERENCE_VENV="$INFERTUNE_CACHE/xinference-$INFERTUNE_XINFERENCE_VERSION"
export INFERTUNE_XINFERENCE_PYTHON="$INFERTUNE_XINFERENCE_VENV/bin/python"
# The server (`xinference-local`) and the client (`xinference register`, `xinference launch`).
export INFERTUNE_XINFERENCE_BIN="$INFERTUNE_XINFERENCE_VENV/bin/xinference-local"
export INFERTUNE_XINFERENCE_CLI="$INFERTUNE_XINFERENCE_VENV/bin/xinference"
