#!/usr/bin/env python3
"""Writes a random-weight model folder that vLLM can serve, fully offline.

The folder holds a byte-level BPE tokenizer trained on synthetic text (with a chat
template), a model config, bf16 weights in safetensors and a generation config. Everything
is derived from --seed, so two runs with the same arguments write identical files.

--size picks one of the project's own small Llama shapes; --shape a real architecture's from
scripts/model-shapes.json (Llama or Qwen2; the vocabulary keeps its real size, the tokenizer
using its first ids), whose cost per token is the real model's when generation ignores EOS.

Needs torch, transformers and tokenizers (all installed with vLLM):
    python scripts/make-tiny-model.py --out DIR --seed 0 --size tiny
    python scripts/make-tiny-model.py --out DIR --seed 0 --shape smollm2-135m
"""

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

VOCAB_SIZE = 1024
MAX_POSITIONS = 4096
BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>"]
SPECIAL_TOKENS = [BOS, EOS, PAD, *ROLE_TOKENS]

# Roles outside system/user/assistant are rejected so every turn starts with a special token.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unsupported role: ' + message['role']) }}"
    "{% endif %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + eos_token + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)

# Shapes per size: head_dim is hidden_size / heads = 64 for both (vLLM's CPU attention
# supports head sizes 64 and 128).
SIZES = {
    "tiny": dict(hidden_size=128, intermediate_size=512, num_hidden_layers=2, num_attention_heads=2),
    "small": dict(hidden_size=512, intermediate_size=1024, num_hidden_layers=8, num_attention_heads=8),
}

SYLLABLES = [
    "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "zen", "dor", "fal", "gri", "hap", "jun",
    "kel", "mor", "nix", "pol", "qua", "ril", "sto", "tra", "ul", "wex", "yo", "the", "and",
    "ing", "er", "on", "an", "in", "re", "st", "ou", "es",
]
PUNCTUATION = [".", ",", "?", "!", ":", ";"]


def synthetic_corpus(rng: random.Random, lines: int) -> list[str]:
    """Pseudo-words, numbers and chat-shaped lines, drawn from `rng`."""
    words = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(400)]
    corpus = []
    for _ in range(lines):
        parts = []
        for _ in range(rng.randint(4, 20)):
            roll = rng.random()
            if roll < 0.08:
                parts.append(str(rng.randint(0, 9999)))
            elif roll < 0.14:
                parts.append(rng.choice(words).capitalize())
            else:
                parts.append(rng.choice(words))
        line = " ".join(parts) + rng.choice(PUNCTUATION)
        if rng.random() < 0.2:
            line = f"{rng.choice(ROLE_TOKENS)}\n{line}{EOS}"
        corpus.append(line)
    return corpus


def build_tokenizer(seed: int):
    """Trains a byte-level BPE on the seed's corpus and wraps it for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(synthetic_corpus(random.Random(seed), 4000), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        additional_special_tokens=ROLE_TOKENS,
        chat_template=CHAT_TEMPLATE,
        model_max_length=MAX_POSITIONS,
        clean_up_tokenization_spaces=False,
    )


def shape_of(size: str, shape: str | None, tokenizer) -> tuple[str, dict]:
    """The architecture and config fields of --size or --shape."""
    if shape is None:
        return "llama", dict(
            vocab_size=len(tokenizer),
            max_position_embeddings=MAX_POSITIONS,
            num_key_value_heads=SIZES[size]["num_attention_heads"],
            rms_norm_eps=1e-5,
            tie_word_embeddings=True,
            **SIZES[size],
        )
    shapes = json.loads(Path(__file__).with_name("model-shapes.json").read_text())
    if shape not in shapes or shape.startswith("_"):
        known = ", ".join(k for k in shapes if not k.startswith("_"))
        raise SystemExit(f"error: --shape {shape} is unknown; known shapes: {known}")
    fields = dict(shapes[shape])
    return fields.pop("architecture"), fields


def build_model(seed: int, size: str, shape: str | None, tokenizer):
    """A causal LM of the chosen shape with random bf16 weights drawn from the seed."""
    import torch
    from transformers import (GenerationConfig, LlamaConfig, LlamaForCausalLM, Qwen2Config,
                              Qwen2ForCausalLM)

    architecture, fields = shape_of(size, shape, tokenizer)
    config_class, model_class = {
        "llama": (LlamaConfig, LlamaForCausalLM),
        "qwen2": (Qwen2Config, Qwen2ForCausalLM),
    }[architecture]
    config = config_class(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        torch_dtype="bfloat16",
        **fields,
    )
    torch.manual_seed(seed)
    model = model_class(config).to(torch.bfloat16).eval()
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return model


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="model folder to write")
    parser.add_argument("--seed", type=int, default=0, help="seed for tokenizer corpus and weights")
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny", help="the project's own small shape")
    parser.add_argument("--shape", help="a real architecture's shape from scripts/model-shapes.json")
    return parser.parse_args(argv)


def main(argv) -> int:
    args = parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"error: --out {args.out} is not empty; pass a new or empty folder", file=sys.stderr)
        return 2
    started = time.monotonic()
    tokenizer = build_tokenizer(args.seed)
    model = build_model(args.seed, args.size, args.shape, tokenizer)
    args.out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(args.out)
    model.save_pretrained(args.out, safe_serialization=True)
    summary = {
        "out": str(args.out),
        "size": args.shape or args.size,
        "seed": args.seed,
        "vocab": len(tokenizer),
        "parameters": sum(p.numel() for p in model.parameters()),
        "seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
