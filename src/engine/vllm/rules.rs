//! vLLM's start-up checks (vllm/config/scheduler.py, vllm/config/cache.py,
//! vllm/engine/arg_utils.py), with vLLM's own messages.
//!
//! Version landmarks: V1 is the default engine from 0.8.0 (chunked prefill always on); the V0
//! engine and its flags (`--scheduler-delay-factor`, `--num-scheduler-steps`) are gone from
//! 0.11.0; `--use-v2-block-manager` (a no-op since 0.6.4) is gone by 0.8.0. Before 0.8.0,
//! chunked prefill is off unless asked for (for models up to 32K context).

use crate::record::{Params, Value};
use crate::space::rules::{nearest, Ctx, Rule, RulePack, VersionQuery};
use crate::space::version::VersionRange;
use crate::space::{BatchCap, EngineKind};

const V1_ENGINE: &str = "0.8.0";
const V0_REMOVED: &str = "0.11.0";
const BEFORE_V1: VersionRange = VersionRange {
    since: None,
    until: Some(V1_ENGINE),
};
const SINCE_V1: VersionRange = VersionRange {
    since: Some(V1_ENGINE),
    until: None,
};
const BEFORE_V0_REMOVAL: VersionRange = VersionRange {
    since: None,
    until: Some(V0_REMOVED),
};
const SINCE_V0_REMOVAL: VersionRange = VersionRange {
    since: Some(V0_REMOVED),
    until: None,
};
const V0_BLOCK_SIZES: [i64; 3] = [8, 16, 32];

/// vLLM's rule pack: its rules, its usual platform and how to ask its version.
pub(crate) static PACK: RulePack = RulePack {
    engine: EngineKind::Vllm,
    rules: RULES,
    platform: "cuda",
    version_query: Some(VersionQuery {
        binary: "vllm",
        args: &["--version"],
    }),
    batch_caps: &[BATCH],
};

/// The running batch's cap and the step token budget decodes and prefill chunks share.
pub(crate) const BATCH: BatchCap = BatchCap {
    cap: "max_num_seqs",
    step_tokens: Some("max_num_batched_tokens"),
};

/// vLLM's rules, in the order vLLM meets them (argument parsing first, then config checks).
static RULES: &[Rule] = &[
    Rule {
        id: "vllm.removed_use_v2_block_manager",
        versions: SINCE_V1,
        platforms: None,
        check: |c| removed_flag(c, "use_v2_block_manager"),
        repair: None,
    },
    Rule {
        id: "vllm.removed_scheduler_delay_factor",
        versions: SINCE_V0_REMOVAL,
        platforms: None,
        check: |c| removed_flag(c, "scheduler_delay_factor"),
        repair: None,
    },
    Rule {
        id: "vllm.removed_num_scheduler_steps",
        versions: SINCE_V0_REMOVAL,
        platforms: None,
        check: |c| removed_flag(c, "num_scheduler_steps"),
        repair: None,
    },
    Rule {
        id: "vllm.block_size_choices",
        versions: BEFORE_V1,
        platforms: None,
        check: |c| {
            let b = c.int("block_size")?;
            (!V0_BLOCK_SIZES.contains(&b)).then(|| {
                format!("argument --block-size: invalid choice: {b} (choose from 8, 16, 32)")
            })
        },
        repair: Some(|c| snap_block_size(c, &V0_BLOCK_SIZES)),
    },
    Rule {
        id: "vllm.block_size_cuda_le_32",
        versions: SINCE_V1,
        platforms: Some(&["cuda"]),
        check: |c| {
            let b = c.int("block_size")?;
            (b > 32).then(|| {
                format!("block_size {b}: on CUDA devices, only block sizes up to 32 are supported.")
            })
        },
        repair: Some(|c| snap_block_size(c, &V0_BLOCK_SIZES)),
    },
    Rule {
        id: "vllm.cpu_block_size_multiple_of_32",
        versions: SINCE_V0_REMOVAL,
        platforms: Some(&["cpu"]),
        check: |c| {
            let b = c.int("block_size")?;
            (b % 32 != 0)
                .then(|| format!("No common block size for {b} (CPU_ATTN: [MultipleOf(32)])"))
        },
        repair: Some(|c| {
            let b = c.int("block_size").unwrap_or(32);
            c.set("block_size", Value::Int(((b + 16) / 32).max(1) * 32))
        }),
    },
    Rule {
        id: "vllm.gpu_memory_utilization_le_1",
        versions: BEFORE_V0_REMOVAL,
        platforms: None,
        check: |c| {
            let u = c.float("gpu_memory_utilization")?;
            (u > 1.0).then(|| {
                format!(
                    "GPU memory utilization must be less than 1.0. Got {}.",
                    py_float(u)
                )
            })
        },
        repair: Some(|c| c.set("gpu_memory_utilization", Value::Float(1.0))),
    },
    Rule {
        id: "vllm.gpu_memory_utilization_range",
        versions: SINCE_V0_REMOVAL,
        platforms: None,
        check: |c| {
            let u = c.float("gpu_memory_utilization")?;
            let (what, kind) = if u > 1.0 {
                ("less than or equal to 1", "less_than_equal")
            } else if u <= 0.0 {
                ("greater than 0", "greater_than")
            } else {
                return None;
            };
            Some(format!(
                "1 validation error for CacheConfig\ngpu_memory_utilization\n  Input should be {what} \
                 [type={kind}, input_value={}, input_type=float]",
                py_float(u)
            ))
        },
        repair: Some(|c| {
            let u = c.float("gpu_memory_utilization").unwrap_or(1.0);
            c.set("gpu_memory_utilization", Value::Float(u.clamp(0.01, 1.0)))
        }),
    },
    Rule {
        id: "vllm.concurrent_partial_prefill_unsupported",
        versions: SINCE_V0_REMOVAL,
        platforms: None,
        check: |c| {
            (partial_prefills(c) > 1 || c.int("max_long_partial_prefills").unwrap_or(1) > 1).then(|| {
                "Concurrent Partial Prefill is not supported. We recommend to remove Concurrent \
                 Partial Prefill from your config."
                    .to_string()
            })
        },
        repair: Some(|c| {
            let mut p = c.set("max_num_partial_prefills", Value::Int(1));
            if c.params.contains_key("max_long_partial_prefills") {
                p.insert("max_long_partial_prefills".into(), Value::Int(1));
            }
            p
        }),
    },
    Rule {
        id: "vllm.batched_tokens_ge_max_model_len",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let (b, m) = (c.int("max_num_batched_tokens")?, c.int("max_model_len")?);
            (b < m && !chunked_prefill(c)).then(|| {
                format!(
                    "max_num_batched_tokens ({b}) is smaller than max_model_len ({m}). This \
                     effectively limits the maximum sequence length to max_num_batched_tokens and \
                     makes vLLM reject longer sequences. Please increase max_num_batched_tokens or \
                     decrease max_model_len."
                )
            })
        },
        repair: Some(|c| {
            c.set(
                "max_num_batched_tokens",
                Value::Int(c.int("max_model_len").unwrap_or(0)),
            )
        }),
    },
    Rule {
        id: "vllm.batched_tokens_ge_max_num_seqs",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let (b, s) = (c.int("max_num_batched_tokens")?, c.int("max_num_seqs")?);
            (b < s).then(|| {
                format!(
                    "max_num_batched_tokens ({b}) must be greater than or equal to max_num_seqs ({s})."
                )
            })
        },
        repair: Some(|c| {
            c.set(
                "max_num_seqs",
                Value::Int(c.int("max_num_batched_tokens").unwrap_or(1)),
            )
        }),
    },
    Rule {
        id: "vllm.partial_prefills_need_chunked_prefill",
        versions: BEFORE_V0_REMOVAL,
        platforms: None,
        check: |c| {
            (partial_prefills(c) > 1 && !chunked_prefill(c)).then(|| {
                "Chunked prefill must be enabled to set max_num_partial_prefills > 1.".to_string()
            })
        },
        repair: None,
    },
    Rule {
        id: "vllm.long_prefill_threshold_le_max_model_len",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let (t, m) = (
                c.int("long_prefill_token_threshold")?,
                c.int("max_model_len")?,
            );
            (partial_prefills(c) > 1 && t > m).then(|| {
                format!(
                    "long_prefill_token_threshold ({t}) cannot be greater than the max_model_len ({m})."
                )
            })
        },
        repair: Some(|c| {
            let m = c.int("max_model_len").unwrap_or(0);
            c.set("long_prefill_token_threshold", Value::Int(m))
        }),
    },
];

/// The engine's chunked-prefill setting: as configured, else off before V1, on since.
fn chunked_prefill(c: &Ctx) -> bool {
    c.switch("enable_chunked_prefill", c.at_least(V1_ENGINE))
}

fn partial_prefills(c: &Ctx) -> i64 {
    c.int("max_num_partial_prefills").unwrap_or(1)
}

/// argparse's refusal of a flag the release no longer has (a `false` switch renders nothing).
fn removed_flag(c: &Ctx, name: &str) -> Option<String> {
    let value = c.params.get(name)?;
    let flag = format!("--{}", name.replace('_', "-"));
    match value {
        Value::Bool(false) => None,
        Value::Bool(true) => Some(format!("vllm: error: unrecognized arguments: {flag}")),
        other => Some(format!(
            "vllm: error: unrecognized arguments: {flag} {other}"
        )),
    }
}

fn snap_block_size(c: &Ctx, allowed: &[i64]) -> Params {
    let b = c.int("block_size").unwrap_or(16);
    c.set("block_size", Value::Int(nearest(b, allowed)))
}

/// Python's rendering of a float (`1.0`, not `1`).
fn py_float(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}
