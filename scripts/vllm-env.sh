# shellcheck shell=bash
# Shared settings for the CPU vLLM used by the end-to-end tests.
#
# Source it (`. scripts/vllm-env.sh`) to get the pinned versions, the paths of the
# provisioned venv and tiny model, and the environment every vLLM server and tool
# started for this project must run with. `scripts/provision-vllm-cpu.sh` creates
# what these paths point to. Override the locations with:
#   INFERTUNE_CACHE       where the venv, the uv tool and the model live
#                         (default: $HOME/.cache/infertune)
#   INFERTUNE_MODEL_SIZE  tiny | small (default: tiny)
#   INFERTUNE_MODEL_SEED  seed for the tiny model's tokenizer and weights (default: 0)
#   VLLM_CACHE_ROOT       vLLM's compile cache (default: <repo>/.cache/vllm)

export INFERTUNE_VLLM_CPU_VERSION=0.32.0
export INFERTUNE_TORCH_VERSION=2.13.0
export INFERTUNE_TORCHVISION_VERSION=0.28.0
export INFERTUNE_UV_VERSION=0.13.9

INFERTUNE_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export INFERTUNE_REPO_ROOT
export INFERTUNE_CACHE="${INFERTUNE_CACHE:-$HOME/.cache/infertune}"
export INFERTUNE_MODEL_SIZE="${INFERTUNE_MODEL_SIZE:-tiny}"
export INFERTUNE_MODEL_SEED="${INFERTUNE_MODEL_SEED:-0}"

export INFERTUNE_UV_DIR="$INFERTUNE_CACHE/uv-$INFERTUNE_UV_VERSION"
export INFERTUNE_VLLM_VENV="$INFERTUNE_CACHE/vllm-cpu-$INFERTUNE_VLLM_CPU_VERSION"
export INFERTUNE_VLLM_PYTHON="$INFERTUNE_VLLM_VENV/bin/python"
export INFERTUNE_VLLM_BIN="$INFERTUNE_VLLM_VENV/bin/vllm"
export INFERTUNE_VLLM_MODEL="$INFERTUNE_CACHE/models/llama-$INFERTUNE_MODEL_SIZE-seed$INFERTUNE_MODEL_SEED"
# A random-weight model of Qwen2.5-0.5B's shape (search-spaces/vllm-cpu-realistic.yaml), built by
# `scripts/provision-vllm-cpu.sh --realistic`.
export INFERTUNE_VLLM_MODEL_QWEN05="$INFERTUNE_CACHE/models/qwen2.5-0.5b-seed$INFERTUNE_MODEL_SEED"

# The environment for every vLLM process: no hub access, no usage reports, caches
# inside the project instead of the user's home.
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export VLLM_NO_USAGE_STATS=1
export DO_NOT_TRACK=1
export VLLM_CACHE_ROOT="${VLLM_CACHE_ROOT:-$INFERTUNE_REPO_ROOT/.cache/vllm}"
export HF_HOME="${HF_HOME:-$INFERTUNE_REPO_ROOT/.cache/huggingface}"
