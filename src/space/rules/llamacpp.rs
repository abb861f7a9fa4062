//! llama.cpp (`llama-server`) checks on batch sizes, slots and the KV cache type.

use super::{Ctx, Rule};
use crate::record::Value;
use crate::space::version::VersionRange;

/// KV cache types that are not quantized.
const PLAIN_CACHE_TYPES: [&str; 3] = ["f32", "f16", "bf16"];

/// llama.cpp's rules.
pub static RULES: &[Rule] = &[
    Rule {
        id: "llamacpp.ubatch_le_batch",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let (u, b) = (c.int("ubatch_size")?, c.int("batch_size").unwrap_or(2048));
            (u > b).then(|| {
                format!(
                    "n_ubatch ({u}) is larger than n_batch ({b}); llama.cpp caps n_ubatch at \
                     n_batch, so set ubatch_size <= batch_size"
                )
            })
        },
        repair: Some(|c| {
            c.set(
                "ubatch_size",
                Value::Int(c.int("batch_size").unwrap_or(2048)),
            )
        }),
    },
    Rule {
        id: "llamacpp.context_per_slot_positive",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let (ctx, slots) = (c.int("ctx_size")?, c.int("parallel").unwrap_or(1).max(1));
            (ctx > 0 && ctx / slots == 0).then(|| {
                format!(
                    "n_ctx_slot = n_ctx ({ctx}) / n_parallel ({slots}) = 0: every slot needs \
                     context; raise --ctx-size or lower --parallel"
                )
            })
        },
        repair: None,
    },
    Rule {
        id: "llamacpp.quantized_v_cache_needs_flash_attn",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let v = c.text("cache_type_v")?;
            let quantized = !PLAIN_CACHE_TYPES.contains(&v.as_str());
            (quantized && !flash_attention(c)).then(|| {
                "llama_init_from_model: V cache quantization requires flash_attn".to_string()
            })
        },
        repair: None,
    },
];

/// Flash attention as configured: `auto` lets llama.cpp turn it on; absent = off.
fn flash_attention(c: &Ctx) -> bool {
    c.text("flash_attn").as_deref() == Some("auto") || c.switch("flash_attn", false)
}
