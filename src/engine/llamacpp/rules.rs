//! llama.cpp (`llama-server`) start-up refusals, with the server's own text (checked against a
//! build from the llama.cpp tree of llama-cpp-python 0.3.36, `version: 0.5.0-dev`, commit
//! 0c1e570).
//!
//! What it accepts is not listed: `ubatch_size` > `batch_size` runs as `ubatch_size` =
//! `batch_size`, and a context too small for the slots is raised to 256 tokens per slot.

use crate::space::rules::{Ctx, Rule, RulePack, VersionQuery};
use crate::space::version::VersionRange;
use crate::space::{BatchCap, EngineKind};

/// KV cache types that are not quantized.
const PLAIN_CACHE_TYPES: [&str; 3] = ["f32", "f16", "bf16"];

/// Slots `--parallel -1` (the default, "auto") gives.
const AUTO_SLOTS: i64 = 4;

/// llama.cpp's rule pack: its rules, its usual platform and how to ask its version.
pub(crate) static PACK: RulePack = RulePack {
    engine: EngineKind::Llamacpp,
    rules: RULES,
    platform: "any",
    version_query: Some(VersionQuery {
        binary: "llama-server",
        args: &["--version"],
    }),
    // One slot per request in flight.
    batch_caps: &[BatchCap {
        cap: "parallel",
        step_tokens: None,
    }],
};

/// llama.cpp's rules.
static RULES: &[Rule] = &[
    Rule {
        id: "llamacpp.parallel_nonzero",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            (c.int("parallel")? == 0).then(|| {
                "error while handling argument \"--parallel\": error: invalid value for \
                 n_parallel"
                    .to_string()
            })
        },
        repair: None,
    },
    Rule {
        id: "llamacpp.batch_or_ubatch_nonzero",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            (c.int("batch_size")? == 0 && c.int("ubatch_size")? == 0).then(|| {
                "llama_init_from_model: n_batch and n_ubatch cannot both be zero".to_string()
            })
        },
        repair: None,
    },
    Rule {
        // One slot and a batch of 1: the server aborts while reserving its first batch.
        id: "llamacpp.batch_size_at_least_2",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            (c.int("batch_size")? == 1 && slots(c) == 1).then(|| {
                "get_sub_batch: failed to add token 0 at index 1 (error -1, n = 2) (the server \
                 aborts at start; use batch_size >= 2)"
                    .to_string()
            })
        },
        repair: None,
    },
    Rule {
        // The server aborts when a batch cannot hold one output per slot.
        id: "llamacpp.batch_covers_slots",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let batch = c.int("batch_size")?;
            let slots = slots(c);
            (batch >= 1 && batch < slots).then(|| {
                format!(
                    "GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) failed (the server \
                     aborts at start: batch_size ({batch}) is smaller than its {slots} slots; \
                     use batch_size >= parallel)"
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
            (quantized && flash_attention_off(c)).then(|| {
                "llama_init_from_model: quantized V cache requires flash_attn to be enabled"
                    .to_string()
            })
        },
        repair: None,
    },
];

/// The number of server slots: `parallel`, where -1 or absent means llama.cpp's automatic 4.
fn slots(c: &Ctx) -> i64 {
    match c.int("parallel") {
        Some(n) if n > 0 => n,
        _ => AUTO_SLOTS,
    }
}

/// Flash attention switched off explicitly (`off`, `false`, `0`); its default, `auto`, turns
/// it on for a quantized V cache.
fn flash_attention_off(c: &Ctx) -> bool {
    c.params.contains_key("flash_attn") && !c.switch("flash_attn", true) && !is_auto(c)
}

fn is_auto(c: &Ctx) -> bool {
    c.text("flash_attn").as_deref() == Some("auto")
}
