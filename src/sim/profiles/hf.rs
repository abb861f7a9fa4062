//! A model's shape read from its Hugging Face `config.json`: dense or grouped-query attention,
//! mixture-of-experts (every layer, or every n-th as Llama 4 Maverick), vocabulary and weight
//! dtype. Parameters are counted from the shapes (SwiGLU MLPs, untied embeddings unless
//! `tie_word_embeddings`). A multimodal config (Llama 4) is read from its `text_config`: the
//! language model is what serves text; the vision encoder's weights are not counted.

use super::{ModelProfile, Moe};
use serde_json::{Map, Value};

/// Architectures whose layer layout the parameter count below describes.
const KNOWN_ARCHITECTURES: &[&str] = &[
    "LlamaForCausalLM",
    "Llama4ForConditionalGeneration",
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen2MoeForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
];

/// Read `text` (a `config.json`) into a profile called `name`; errors name the field at fault.
pub(crate) fn parse(name: &str, text: &str) -> Result<ModelProfile, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))?;
    let Some(c) = value.as_object() else {
        return Err("expected a JSON object like a Hugging Face config.json".into());
    };
    let arch = architecture(c)?;
    let bytes_per_param = bytes_per_param(c, arch)?;
    let c = language_model(c, arch)?;
    let hidden = int(c, "hidden_size")?;
    let layers = int(c, "num_hidden_layers")?;
    let heads = int(c, "num_attention_heads")?;
    let kv_heads = opt_int(c, "num_key_value_heads")?.unwrap_or(heads);
    if kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
        return Err(format!(
            "field `num_key_value_heads` ({kv_heads}) must divide `num_attention_heads` ({heads})"
        ));
    }
    let head_dim = opt_int(c, "head_dim")?.unwrap_or(hidden / heads);
    let vocab = int(c, "vocab_size")?;
    let max_len = int(c, "max_position_embeddings")?;
    let tied = c
        .get("tie_word_embeddings")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let experts = opt_int(c, "num_local_experts")?.or(opt_int(c, "num_experts")?);
    let (h, l) = (f64::from(hidden), f64::from(layers));
    let attention =
        h * f64::from(heads * head_dim) * 2.0 + h * f64::from(kv_heads * head_dim) * 2.0;
    let embeddings = f64::from(vocab) * h * if tied { 1.0 } else { 2.0 };
    let (mlp, moe) = match experts.filter(|e| *e > 1) {
        None => (3.0 * h * f64::from(int(c, "intermediate_size")?), None),
        Some(experts) => mixture(c, arch, experts, h, layers)?,
    };
    Ok(ModelProfile {
        name: name.to_string(),
        aliases: Vec::new(),
        params_b: (embeddings + l * (attention + mlp)) / 1e9,
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        vocab,
        max_len,
        moe,
        bytes_per_param,
        repo: None,
    })
}

/// The mean MLP parameters of a layer and the experts of a mixture-of-experts model with
/// `experts` experts per MoE layer: routed experts, a shared expert (Qwen's
/// `shared_expert_intermediate_size`; Llama 4's of `intermediate_size`) and the router; Llama 4
/// makes every `interleave_moe_layer_step`-th layer MoE, the others dense of
/// `intermediate_size_mlp`.
fn mixture(
    c: &Map<String, Value>,
    arch: &str,
    experts: u32,
    h: f64,
    layers: u32,
) -> Result<(f64, Option<Moe>), String> {
    let llama4 = arch == "Llama4ForConditionalGeneration";
    let per_token = int(c, "num_experts_per_tok")?;
    if per_token > experts {
        return Err(format!(
            "field `num_experts_per_tok` ({per_token}) exceeds the {experts} experts"
        ));
    }
    let expert_inter = match opt_int(c, "moe_intermediate_size")? {
        Some(n) => n,
        None => int(c, "intermediate_size")?,
    };
    let shared = match opt_int(c, "shared_expert_intermediate_size")? {
        Some(n) => n,
        None if llama4 => int(c, "intermediate_size")?,
        None => 0,
    };
    let step = if llama4 {
        opt_int(c, "interleave_moe_layer_step")?.unwrap_or(1)
    } else {
        1
    };
    let moe_layers = layers / step;
    let dense_inter = match opt_int(c, "intermediate_size_mlp")? {
        Some(n) => n,
        None => int(c, "intermediate_size")?,
    };
    let expert_params = 3.0 * h * f64::from(expert_inter) * f64::from(experts);
    let moe_layer = expert_params + 3.0 * h * f64::from(shared) + h * f64::from(experts);
    let dense_layer = 3.0 * h * f64::from(dense_inter);
    let mean = (f64::from(moe_layers) * moe_layer + f64::from(layers - moe_layers) * dense_layer)
        / f64::from(layers);
    let moe = Moe {
        experts,
        per_token,
        expert_params_b: f64::from(moe_layers) * expert_params / 1e9,
    };
    Ok((mean, Some(moe)))
}

/// The language model's fields: `text_config` for a multimodal architecture, else `c` itself.
fn language_model<'c>(
    c: &'c Map<String, Value>,
    arch: &str,
) -> Result<&'c Map<String, Value>, String> {
    if arch != "Llama4ForConditionalGeneration" {
        return Ok(c);
    }
    c.get("text_config")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            format!("field `text_config` missing ({arch} keeps its language model there)")
        })
}

fn architecture(c: &Map<String, Value>) -> Result<&str, String> {
    let arch = c
        .get("architectures")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .ok_or("field `architectures` missing (expected e.g. [\"LlamaForCausalLM\"])")?;
    if KNOWN_ARCHITECTURES.contains(&arch) {
        Ok(arch)
    } else {
        Err(format!(
            "field `architectures`: `{arch}` is not modelled; known: {}",
            KNOWN_ARCHITECTURES.join(", ")
        ))
    }
}

/// Bytes per weight as vLLM serves it: 16-bit for `auto` dtypes, 1 for fp8 checkpoints (`fp8`,
/// FBGEMM's as Meta ships Llama 4, or `compressed-tensors` whose every scheme stores 8-bit
/// float weights).
fn bytes_per_param(c: &Map<String, Value>, arch: &str) -> Result<f64, String> {
    let quant = c
        .get("quantization_config")
        .and_then(|q| q.get("quant_method"))
        .and_then(Value::as_str);
    match quant {
        None => {}
        Some("fp8" | "fbgemm_fp8") => return Ok(1.0),
        Some("compressed-tensors") => return compressed_tensors(&c["quantization_config"]),
        Some(other) => {
            return Err(format!(
                "field `quantization_config.quant_method`: `{other}` is not modelled for \
                 {arch} (only unquantised and fp8 weights)"
            ))
        }
    }
    match c
        .get("torch_dtype")
        .or(c.get("dtype"))
        .and_then(Value::as_str)
    {
        None | Some("bfloat16" | "float16" | "float32") => Ok(2.0),
        Some(other) => Err(format!(
            "field `torch_dtype`: `{other}` is not modelled (bfloat16, float16, float32)"
        )),
    }
}

/// Bytes per weight of a `compressed-tensors` checkpoint: 1 when every group of
/// `config_groups` stores its weights as 8-bit floats (the fp8 scheme); any other scheme (int8,
/// 4-bit) is not modelled.
fn compressed_tensors(q: &Value) -> Result<f64, String> {
    let field = "quantization_config.config_groups";
    let groups = q
        .get("config_groups")
        .and_then(Value::as_object)
        .filter(|g| !g.is_empty())
        .ok_or_else(|| {
            format!("field `{field}` missing (compressed-tensors names its schemes there)")
        })?;
    for (name, group) in groups {
        let weights = group.get("weights");
        let bits = weights
            .and_then(|w| w.get("num_bits"))
            .and_then(Value::as_u64);
        let kind = weights.and_then(|w| w.get("type")).and_then(Value::as_str);
        if (bits, kind) != (Some(8), Some("float")) {
            return Err(format!(
                "field `{field}.{name}.weights`: {} {}-bit weights are not modelled (only the \
                 fp8 scheme, 8-bit float weights)",
                kind.unwrap_or("untyped"),
                bits.map_or("?".into(), |b| b.to_string())
            ));
        }
    }
    Ok(1.0)
}

fn opt_int(c: &Map<String, Value>, field: &str) -> Result<Option<u32>, String> {
    match c.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| format!("field `{field}` must be a positive integer, got {v}")),
    }
}

fn int(c: &Map<String, Value>, field: &str) -> Result<u32, String> {
    opt_int(c, field)?.ok_or_else(|| format!("field `{field}` missing"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIXTRAL: &str = r#"{"architectures": ["MixtralForCausalLM"], "hidden_size": 4096,
        "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32,
        "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "num_local_experts": 8, "vocab_size": 32000, "torch_dtype": "bfloat16"}"#;

    #[test]
    fn mixtral_counts_its_experts() {
        let m = parse("Mixtral-8x7B", MIXTRAL).unwrap();
        // Mixtral-8x7B has 46.7 B parameters, 12.9 B of them active per token.
        assert!((m.params_b - 46.7).abs() < 0.1, "{}", m.params_b);
        assert!(
            (m.active_params_b() - 12.9).abs() < 0.1,
            "{}",
            m.active_params_b()
        );
        let moe = m.moe.as_ref().unwrap();
        assert_eq!((moe.experts, moe.per_token), (8, 2));
        assert_eq!((m.kv_heads, m.head_dim), (8, 128));
    }

    /// Llama 4 Scout's published config.json, FP8 as Meta ships its FP8 checkpoints: the
    /// language model in `text_config`, 16 experts on every layer with a shared one.
    const LLAMA4_SCOUT_FP8: &str = r#"{"architectures": ["Llama4ForConditionalGeneration"],
        "quantization_config": {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0},
        "torch_dtype": "bfloat16",
        "text_config": {"hidden_size": 5120, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "num_attention_heads": 40, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 48, "num_local_experts": 16,
        "num_experts_per_tok": 1, "interleave_moe_layer_step": 1, "vocab_size": 202048,
        "max_position_embeddings": 10485760, "tie_word_embeddings": false,
        "torch_dtype": "bfloat16"},
        "vision_config": {"hidden_size": 1408, "num_hidden_layers": 34}}"#;

    #[test]
    fn llama4_scout_reads_its_text_config_with_a_shared_expert_in_fp8() {
        let m = parse("Llama-4-Scout", LLAMA4_SCOUT_FP8).unwrap();
        // Scout: 109 B parameters with its vision encoder (about 1.7 B), 17 B active.
        assert!((m.params_b - 107.8).abs() < 1.0, "{}", m.params_b);
        assert!(
            (m.active_params_b() - 17.2).abs() < 0.5,
            "{}",
            m.active_params_b()
        );
        assert_eq!(m.bytes_per_param, 1.0);
        assert_eq!((m.layers, m.kv_heads, m.head_dim), (48, 8, 128));
        let moe = m.moe.as_ref().unwrap();
        assert_eq!((moe.experts, moe.per_token), (16, 1));
        // Maverick's layout: every second layer MoE (128 experts), the others dense.
        let maverick = LLAMA4_SCOUT_FP8
            .replace("\"num_local_experts\": 16", "\"num_local_experts\": 128")
            .replace(
                "\"interleave_moe_layer_step\": 1",
                "\"interleave_moe_layer_step\": 2",
            );
        let m = parse("Llama-4-Maverick", &maverick).unwrap();
        // Maverick: 400 B parameters, 17 B active.
        assert!((m.params_b - 400.0).abs() < 10.0, "{}", m.params_b);
        assert!(
            (m.active_params_b() - 17.2).abs() < 1.0,
            "{}",
            m.active_params_b()
        );
        let no_text = r#"{"architectures": ["Llama4ForConditionalGeneration"]}"#;
        assert!(parse("x", no_text).unwrap_err().contains("`text_config`"));
    }

    #[test]
    fn compressed_tensors_fp8_weights_take_one_byte_and_other_schemes_are_named() {
        let fp8 = LLAMA4_SCOUT_FP8.replace(
            r#"{"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0}"#,
            r#"{"quant_method": "compressed-tensors", "format": "float-quantized",
                "config_groups": {"group_0": {"targets": ["Linear"],
                "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                "input_activations": {"num_bits": 8, "type": "float", "dynamic": true}}}}"#,
        );
        let m = parse("Llama-4-Scout-FP8", &fp8).unwrap();
        assert_eq!(m.bytes_per_param, 1.0);
        assert_eq!(parse("Mixtral", MIXTRAL).unwrap().bytes_per_param, 2.0);
        assert!((m.weight_bytes() / (m.params_b * 1e9) - 1.0).abs() < 1e-9);
        let int4 = fp8.replace(
            r#""num_bits": 8, "type": "float", "strategy""#,
            r#""num_bits": 4, "type": "int", "strategy""#,
        );
        let e = parse("x", &int4).unwrap_err();
        assert!(
            e.contains("group_0.weights") && e.contains("int 4-bit"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_field() {
        let missing = MIXTRAL.replace("\"num_hidden_layers\": 32,", "");
        assert!(parse("x", &missing)
            .unwrap_err()
            .contains("`num_hidden_layers` missing"));
        let gpt = MIXTRAL.replace("MixtralForCausalLM", "GPT2LMHeadModel");
        let e = parse("x", &gpt).unwrap_err();
        assert!(
            e.contains("`architectures`") && e.contains("GPT2LMHeadModel"),
            "{e}"
        );
        let no_k = MIXTRAL.replace("\"num_experts_per_tok\": 2,", "");
        assert!(parse("x", &no_k)
            .unwrap_err()
            .contains("`num_experts_per_tok`"));
        let bad = MIXTRAL.replace("\"vocab_size\": 32000", "\"vocab_size\": \"big\"");
        assert!(parse("x", &bad)
            .unwrap_err()
            .contains("`vocab_size` must be"));
    }
}
