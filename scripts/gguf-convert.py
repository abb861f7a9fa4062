"""Runs llama.cpp's convert_hf_to_gguf.py on the project's tiny model.

Usage: gguf-convert.py LLAMA_CPP_TREE MODEL_DIR [converter arguments...]

The converter names a tokenizer's pre-tokenizer by hashing how it splits a fixed text and
refuses hashes it does not know. The tiny model's tokenizer is trained locally with the
GPT-2 byte-level pre-tokenizer, so an unknown hash is answered with "gpt2" here; every other
step is the converter's own.
"""

import sys

tree, model_dir, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path[:0] = [tree, f"{tree}/gguf-py"]

import convert_hf_to_gguf  # noqa: E402  (needs the path above)

try:
    from conversion import base as conversion_base  # newer trees keep the model classes here
    text_model = conversion_base.TextModel
except ImportError:
    text_model = convert_hf_to_gguf.TextModel

original = text_model.get_vocab_base_pre


def vocab_base_pre(self, tokenizer):
    try:
        return original(self, tokenizer)
    except NotImplementedError:
        return "gpt-2"


text_model.get_vocab_base_pre = vocab_base_pre
sys.argv = ["convert_hf_to_gguf.py", model_dir, *rest]
convert_hf_to_gguf.main()
