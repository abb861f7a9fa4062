"""Writes src/engine/xinference/xinference-<version>.json: the settings XInference's launch accepts.

  $INFERTUNE_XINFERENCE_PYTHON scripts/gen-xinference-catalogue.py

XInference has no list of its own: a launch takes a few launch-level settings (model engine,
replicas, quantization, GPUs) and passes every other key to the engine. The llama.cpp engine
sets each key as an attribute of xllamacpp's CommonParams and only logs a failure; vLLM spreads
them into its engine arguments; Transformers reads a few. So the catalogue is the union of:
the launch-level settings (xinference/api/restful_api.py launch_model), the scalar attributes of
the installed xllamacpp's CommonParams (read here), the Transformers settings
(model/llm/transformers/core.py _sanitize_model_config) and vLLM's engine arguments (the shipped
vLLM catalogue's flags, `--max-num-seqs` as `max_num_seqs`).
"""

import json
import pathlib

import xinference
import xllamacpp

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENGINES = ["llama.cpp", "Transformers", "vLLM", "SGLang", "MLX"]

# Launch-level settings: the launch's own options, not engine kwargs.
LAUNCH = [
    {"name": "model_engine", "takes": "value", "type": "text", "choices": ENGINES},
    {"name": "replica", "takes": "value", "type": "int", "default": "1"},
    {"name": "quantization", "takes": "value", "type": "text"},
    {"name": "model_format", "takes": "value", "type": "text"},
    {"name": "n_gpu", "takes": "value", "type": "text", "default": "auto"},
]
# Read by XInference's llama.cpp engine itself (not CommonParams attributes); their defaults are
# XInference's, not llama.cpp's.
LLAMACPP_EXTRA = [{"name": "n_threads", "takes": "value", "type": "int"}]
# XInference sets these before a launch's own settings, so CommonParams' defaults do not apply.
XINFERENCE_DEFAULTS = {"n_ctx", "n_parallel", "n_gpu_layers"}
TRANSFORMERS = [
    {"name": "max_num_seqs", "takes": "value", "type": "int", "default": "16"},
    {"name": "device", "takes": "value", "type": "text", "default": "auto"},
    {"name": "enable_tensorizer", "takes": "value", "type": "bool", "default": "False"},
    {"name": "gptq_wbits", "takes": "value", "type": "int", "default": "16"},
    {"name": "gptq_groupsize", "takes": "value", "type": "int", "default": "-1"},
    {"name": "gptq_act_order", "takes": "value", "type": "bool", "default": "False"},
]


def llamacpp_entries():
    params = xllamacpp.CommonParams()
    out = []
    for name in sorted(dir(params)):
        if name.startswith("_"):
            continue
        value = getattr(params, name)
        if callable(value):
            continue
        # Enumerations (ggml_type, flash attention, ...) take their integer values.
        if isinstance(value, bool):
            ty, default = "bool", str(value)
        elif isinstance(value, int):
            ty, default = "int", str(int(value))
        elif isinstance(value, float):
            ty, default = "float", repr(value)
        elif isinstance(value, str):
            ty, default = "text", value or None
        else:
            continue
        entry = {"name": name, "takes": "value", "type": ty}
        if default is not None and name not in XINFERENCE_DEFAULTS:
            entry["default"] = default
        out.append(entry)
    return out


def vllm_entries():
    shipped = json.loads((ROOT / "src" / "engine" / "vllm" / "vllm-0.32.0.json").read_text())
    out = []
    for e in shipped["entries"]:
        if not e["name"].startswith("--"):
            continue
        entry = {"name": e["name"][2:].replace("-", "_"), "takes": "value"}
        for key in ("type", "choices", "default", "deprecated", "removed_in"):
            if key in e:
                entry[key] = e[key]
        out.append(entry)
    return out


def main():
    entries, seen = [], set()
    for entry in LAUNCH + LLAMACPP_EXTRA + llamacpp_entries() + TRANSFORMERS + vllm_entries():
        if entry["name"] not in seen:
            seen.add(entry["name"])
            entries.append(entry)
    catalogue = {
        "engine": "xinference",
        "version": xinference.__version__,
        "source": "XInference launch settings, xllamacpp "
        + xllamacpp.__version__
        + " CommonParams, Transformers settings and vLLM 0.32.0 engine arguments "
        + "(scripts/gen-xinference-catalogue.py)",
        "entries": entries,
    }
    path = ROOT / "src" / "engine" / "xinference" / f"xinference-{xinference.__version__}.json"
    path.write_text(json.dumps(catalogue, indent=2) + "\n")
    print(f"{path}: {len(entries)} entries")


if __name__ == "__main__":
    main()
