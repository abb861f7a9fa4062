#!/usr/bin/env python3
"""Writes a random-weight GGUF model with a real architecture's shape, fully offline.

A launch-config tuner measures what a model costs the engine per token, and with generation
ignoring EOS that cost depends on the model's shape (layers, hidden size, heads, KV heads,
vocabulary, weight type), not on its weights. This script writes such a model straight with
llama.cpp's own GGUF library (gguf-py, from the cached llama.cpp tree), so it needs numpy and
nothing else: no torch, no transformers, no download.

- The shape comes from scripts/model-shapes.json (--shape NAME) or a Hugging Face
  config.json (--config FILE; Llama and Qwen2 architectures).
- The tokenizer is the project's locally trained byte-level BPE (--tokenizer tokenizer.json
  from the tiny model folder); the vocabulary is padded with unused tokens to the real size,
  so the embedding and the output head have the real model's shape.
- Weights: f16 from a normal distribution; q8_0 and q4_0 as blocks of random quants with one
  fixed scale (llama.cpp's own block layouts), so writing an 8B model takes seconds, not the
  minutes quantizing would. Everything derives from --seed: two runs write identical files.

    python scripts/make-gguf.py --gguf-py TREE/gguf-py --tokenizer MODEL/tokenizer.json \\
        --shape smollm2-135m --type f16 --out smollm2-135m-f16.gguf
"""

import argparse
import json
import sys
import time
import types
from pathlib import Path

SHAPES = Path(__file__).with_name("model-shapes.json")
ARCHITECTURES = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2"}
# Bytes per block of 32 weights and the scale that keeps activations finite.
BLOCKS = {"q8_0": (34, 0.02 / 64), "q4_0": (18, 0.02 / 4)}


def load_shape(args) -> dict:
    """The shape by name from model-shapes.json, or read from a config.json."""
    if args.config is None:
        shapes = json.loads(SHAPES.read_text())
        if args.shape not in shapes or args.shape.startswith("_"):
            names = ", ".join(k for k in shapes if not k.startswith("_"))
            raise SystemExit(f"error: --shape {args.shape} is unknown; known shapes: {names}")
        return dict(shapes[args.shape], name=args.shape)
    config = json.loads(args.config.read_text())
    arch = ARCHITECTURES.get((config.get("architectures") or ["?"])[0])
    if arch is None:
        raise SystemExit(
            f"error: {args.config}: architectures {config.get('architectures')} is not one of "
            f"{', '.join(ARCHITECTURES)}"
        )
    keys = ["hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "vocab_size", "max_position_embeddings"]
    missing = [k for k in keys if k not in config]
    if missing:
        raise SystemExit(f"error: {args.config} lacks {', '.join(missing)}")
    shape = {k: config[k] for k in keys}
    shape.update(
        architecture=arch,
        num_key_value_heads=config.get("num_key_value_heads", config["num_attention_heads"]),
        rope_theta=float(config.get("rope_theta", 10000.0)),
        rms_norm_eps=float(config.get("rms_norm_eps", 1e-5)),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
        name=args.config.parent.name,
    )
    return shape


def import_gguf(path: Path):
    """gguf-py from the llama.cpp tree; its metadata module wants PyYAML only for model cards."""
    sys.path.insert(0, str(path))
    try:
        import yaml  # noqa: F401
    except ImportError:
        sys.modules["yaml"] = types.ModuleType("yaml")
    import gguf

    return gguf


def vocabulary(tokenizer: Path, size: int, gguf):
    """Tokens, types, merges and special ids of the tokenizer, padded to `size`."""
    spec = json.loads(tokenizer.read_text())
    by_id = {i: t for t, i in spec["model"]["vocab"].items()}
    special = {a["id"]: a["content"] for a in spec.get("added_tokens", []) if a.get("special")}
    by_id.update(special)
    if len(by_id) > size:
        raise SystemExit(f"error: {tokenizer} has {len(by_id)} tokens, more than the shape's {size}")
    tokens, kinds = [], []
    for i in range(size):
        if i in by_id:
            tokens.append(by_id[i])
            kinds.append(gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL)
        else:
            tokens.append(f"[PAD{i}]")
            kinds.append(gguf.TokenType.UNUSED)
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    ids = {name: i for i, name in special.items()}
    return tokens, kinds, merges, ids


def chat_template(tokenizer: Path):
    """The chat template saved beside the tokenizer, if any."""
    jinja = tokenizer.with_name("chat_template.jinja")
    if jinja.exists():
        return jinja.read_text()
    config = tokenizer.with_name("tokenizer_config.json")
    return json.loads(config.read_text()).get("chat_template") if config.exists() else None


def matrix(rng, rows: int, cols: int, kind: str, np):
    """A weight matrix of `rows` × `cols` in `kind`: the array and its raw GGUF type."""
    if kind == "f16":
        data = rng.standard_normal((rows, cols), dtype=np.float32) * 0.02
        return data.astype(np.float16), None
    if cols % 32:
        raise SystemExit(f"error: rows of {cols} weights do not split into blocks of 32 for {kind}")
    size, scale = BLOCKS[kind]
    blocks = rng.integers(0, 256, (rows, cols // 32, size), dtype=np.uint8)
    blocks[:, :, 0:2] = np.frombuffer(np.float16(scale).tobytes(), dtype=np.uint8)
    return blocks.reshape(rows, -1), kind


def write(args, shape, gguf, np):
    """Writes the model's metadata and tensors to `args.out` (through a .partial file)."""
    arch = shape["architecture"]
    hidden, heads = shape["hidden_size"], shape["num_attention_heads"]
    kv_heads, head_dim = shape["num_key_value_heads"], shape["hidden_size"] // heads
    inter, vocab = shape["intermediate_size"], shape["vocab_size"]
    context = args.context or shape["max_position_embeddings"]
    tokens, kinds, merges, ids = vocabulary(args.tokenizer, vocab, gguf)
    partial = args.out.with_name(args.out.name + ".partial")
    writer = gguf.GGUFWriter(partial, arch)
    writer.add_name(f"{shape['name']}-random")
    file_types = {"f16": gguf.LlamaFileType.MOSTLY_F16, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
                  "q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}
    writer.add_file_type(file_types[args.type])
    if args.type != "f16":
        writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    writer.add_vocab_size(vocab)
    writer.add_context_length(context)
    writer.add_embedding_length(hidden)
    writer.add_block_count(shape["num_hidden_layers"])
    writer.add_feed_forward_length(inter)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(shape["rope_theta"])
    writer.add_layer_norm_rms_eps(shape["rms_norm_eps"])
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(kinds)
    writer.add_token_merges(merges)
    for name, add in [("<|bos|>", writer.add_bos_token_id), ("<|eos|>", writer.add_eos_token_id),
                      ("<|pad|>", writer.add_pad_token_id)]:
        if name in ids:
            add(ids[name])
    writer.add_add_bos_token(True)
    template = chat_template(args.tokenizer)
    if template:
        writer.add_chat_template(template)

    rng = np.random.default_rng(args.seed)
    ones = np.ones(hidden, dtype=np.float32)

    def add_matrix(name, rows, cols):
        data, raw = matrix(rng, rows, cols, args.type, np)
        qtype = {None: None, "q8_0": gguf.GGMLQuantizationType.Q8_0,
                 "q4_0": gguf.GGMLQuantizationType.Q4_0}[raw]
        writer.add_tensor(name, data, raw_dtype=qtype)

    add_matrix("token_embd.weight", vocab, hidden)
    writer.add_tensor("output_norm.weight", ones)
    if not shape["tie_word_embeddings"]:
        add_matrix("output.weight", vocab, hidden)
    for layer in range(shape["num_hidden_layers"]):
        blk = f"blk.{layer}"
        writer.add_tensor(f"{blk}.attn_norm.weight", ones)
        writer.add_tensor(f"{blk}.ffn_norm.weight", ones)
        add_matrix(f"{blk}.attn_q.weight", heads * head_dim, hidden)
        add_matrix(f"{blk}.attn_k.weight", kv_heads * head_dim, hidden)
        add_matrix(f"{blk}.attn_v.weight", kv_heads * head_dim, hidden)
        add_matrix(f"{blk}.attn_output.weight", hidden, heads * head_dim)
        add_matrix(f"{blk}.ffn_gate.weight", inter, hidden)
        add_matrix(f"{blk}.ffn_up.weight", inter, hidden)
        add_matrix(f"{blk}.ffn_down.weight", hidden, inter)
        if arch == "qwen2":
            for part, width in [("q", heads), ("k", kv_heads), ("v", kv_heads)]:
                writer.add_tensor(f"{blk}.attn_{part}.bias",
                                  np.zeros(width * head_dim, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.rename(args.out)
    return context


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--shape", help="a shape named in scripts/model-shapes.json")
    which.add_argument("--config", type=Path, help="a Hugging Face config.json to copy the shape of")
    parser.add_argument("--type", choices=["f16", "q8_0", "q4_0"], default="f16",
                        help="weight type of the matrices (norms and biases stay f32)")
    parser.add_argument("--tokenizer", type=Path, required=True,
                        help="tokenizer.json of the project's tiny model")
    parser.add_argument("--gguf-py", type=Path, required=True, help="gguf-py folder of a llama.cpp tree")
    parser.add_argument("--context", type=int, help="training context to record (default: the shape's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights")
    parser.add_argument("--out", type=Path, required=True, help="GGUF file to write")
    return parser.parse_args(argv)


def main(argv) -> int:
    args = parse_args(argv)
    for path, flag in [(args.tokenizer, "--tokenizer"), (args.gguf_py / "gguf", "--gguf-py")]:
        if not path.exists():
            print(f"error: {flag}: {path} does not exist", file=sys.stderr)
            return 2
    started = time.monotonic()
    shape = load_shape(args)
    gguf = import_gguf(args.gguf_py)
    import numpy as np

    args.out.parent.mkdir(parents=True, exist_ok=True)
    context = write(args, shape, gguf, np)
    print(json.dumps({
        "out": str(args.out),
        "shape": shape["name"],
        "type": args.type,
        "context": context,
        "bytes": args.out.stat().st_size,
        "seconds": round(time.monotonic() - started, 1),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
