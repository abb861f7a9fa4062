//! Reading engine parameters (vLLM and MindIE spellings) out of a resolved `Params` map.

use crate::record::{Params, Value};
use crate::space::EngineKind;
use crate::util::did_you_mean;

/// The engine settings the model reacts to, in one vocabulary. `None` = engine default.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Knobs {
    /// `max_num_seqs` / MindIE `maxBatchSize`.
    pub max_num_seqs: Option<u32>,
    /// `max_num_batched_tokens` / MindIE `maxPrefillTokens`.
    pub max_num_batched_tokens: Option<u32>,
    /// MindIE `maxPrefillBatchSize`: most prompts in one prefill step.
    pub max_prefill_seqs: Option<u32>,
    /// `block_size` / MindIE `cacheBlockSize`.
    pub block_size: Option<u32>,
    /// `enable_chunked_prefill`.
    pub chunked_prefill: Option<bool>,
    /// `enable_prefix_caching`.
    pub prefix_caching: Option<bool>,
    /// `gpu_memory_utilization`.
    pub memory_utilization: Option<f64>,
    /// MindIE `npuMemSize`: KV cache GiB per card (`-1` = automatic).
    pub kv_cache_gib: Option<f64>,
    /// `max_model_len` / MindIE `maxSeqLen`.
    pub max_model_len: Option<u32>,
    /// MindIE `maxIterTimes`: cap on generated tokens per request.
    pub max_output_tokens: Option<u32>,
    /// `tensor_parallel_size` / MindIE `worldSize`.
    pub tensor_parallel_size: Option<u32>,
    /// `enforce_eager`.
    pub enforce_eager: Option<bool>,
    /// `kv_cache_dtype`.
    pub kv_cache_dtype: Option<String>,
    /// `dtype`.
    pub dtype: Option<String>,
    /// `quantization`: how the weights are served (`fp8`), over the checkpoint's own.
    pub quantization: Option<String>,
    /// `numa`: numactl arguments or `none`.
    pub numa: Option<String>,
}

/// vLLM parameters accepted but without effect in the model.
const VLLM_IGNORED: &[&str] = &[
    "scheduler_delay_factor",
    "use_v2_block_manager",
    "disable_custom_all_reduce",
    "swap_space",
    "max_num_partial_prefills",
    "long_prefill_token_threshold",
    "disable_log_requests",
    "disable_log_stats",
    "seed",
    "trust_remote_code",
    "max_seq_len_to_capture",
    "distributed_executor_backend",
    "async_scheduling",
    "num_scheduler_steps",
    "served_model_name",
    "model",
    "host",
    "port",
];

/// MindIE parameters accepted but without effect in the model.
const MINDIE_IGNORED: &[&str] = &[
    "maxInputTokenLen",
    "supportSelectBatch",
    "prefillTimeMsPerReq",
    "decodeTimeMsPerReq",
    "maxQueueDelayMicroseconds",
    "maxPreemptCount",
    "truncation",
    "tokenizerProcessNumber",
    "npuDeviceIds",
    "modelName",
    "modelWeightPath",
];

type Setter = fn(&mut Knobs, &str, &Value) -> Result<(), String>;

const VLLM_KNOBS: &[(&str, Setter)] = &[
    ("max_num_seqs", |k, n, v| set_u32(&mut k.max_num_seqs, n, v)),
    ("max_num_batched_tokens", |k, n, v| {
        set_u32(&mut k.max_num_batched_tokens, n, v)
    }),
    ("block_size", |k, n, v| set_u32(&mut k.block_size, n, v)),
    ("enable_chunked_prefill", |k, n, v| {
        set_bool(&mut k.chunked_prefill, n, v)
    }),
    ("enable_prefix_caching", |k, n, v| {
        set_bool(&mut k.prefix_caching, n, v)
    }),
    ("gpu_memory_utilization", |k, n, v| {
        set_f64(&mut k.memory_utilization, n, v)
    }),
    ("max_model_len", |k, n, v| {
        set_u32(&mut k.max_model_len, n, v)
    }),
    ("tensor_parallel_size", |k, n, v| {
        set_u32(&mut k.tensor_parallel_size, n, v)
    }),
    ("enforce_eager", |k, n, v| {
        set_bool(&mut k.enforce_eager, n, v)
    }),
    ("kv_cache_dtype", |k, _, v| {
        k.kv_cache_dtype = Some(v.to_string());
        Ok(())
    }),
    ("dtype", |k, _, v| {
        k.dtype = Some(v.to_string());
        Ok(())
    }),
    ("quantization", |k, _, v| {
        k.quantization = Some(v.to_string());
        Ok(())
    }),
    ("numa", |k, _, v| {
        k.numa = Some(v.to_string());
        Ok(())
    }),
];

const MINDIE_KNOBS: &[(&str, Setter)] = &[
    ("maxBatchSize", |k, n, v| set_u32(&mut k.max_num_seqs, n, v)),
    ("maxPrefillTokens", |k, n, v| {
        set_u32(&mut k.max_num_batched_tokens, n, v)
    }),
    ("maxPrefillBatchSize", |k, n, v| {
        set_u32(&mut k.max_prefill_seqs, n, v)
    }),
    ("cacheBlockSize", |k, n, v| set_u32(&mut k.block_size, n, v)),
    ("maxSeqLen", |k, n, v| set_u32(&mut k.max_model_len, n, v)),
    ("npuMemSize", |k, n, v| set_f64(&mut k.kv_cache_gib, n, v)),
    ("maxIterTimes", |k, n, v| {
        set_u32(&mut k.max_output_tokens, n, v)
    }),
    ("worldSize", |k, n, v| {
        set_u32(&mut k.tensor_parallel_size, n, v)
    }),
    ("numa", |k, _, v| {
        k.numa = Some(v.to_string());
        Ok(())
    }),
];

impl Knobs {
    /// Read `params` with `kind`'s parameter names. Unknown names are refused the way the
    /// engine's argument parser refuses them, with the closest known name as a hint.
    pub(crate) fn from_params(kind: EngineKind, params: &Params) -> Result<Knobs, String> {
        let (table, ignored) = match kind {
            EngineKind::Mindie => (MINDIE_KNOBS, MINDIE_IGNORED),
            _ => (VLLM_KNOBS, VLLM_IGNORED),
        };
        let mut knobs = Knobs::default();
        for (name, value) in params {
            let normalized = match kind {
                EngineKind::Mindie => name.clone(),
                _ => name.trim_start_matches("--").replace('-', "_"),
            };
            if let Some((_, set)) = table.iter().find(|(n, _)| *n == normalized) {
                set(&mut knobs, name, value)?;
            } else if !ignored.contains(&normalized.as_str()) {
                return Err(unrecognized(kind, name, table, ignored));
            }
        }
        Ok(knobs)
    }
}

/// Whether the model of `kind` accepts the parameter `name` (with or without effect).
pub(crate) fn accepts(kind: EngineKind, name: &str) -> bool {
    match kind {
        EngineKind::Mindie => {
            MINDIE_KNOBS.iter().any(|(n, _)| *n == name) || MINDIE_IGNORED.contains(&name)
        }
        _ => {
            let normalized = name.trim_start_matches("--").replace('-', "_");
            VLLM_KNOBS.iter().any(|(n, _)| *n == normalized)
                || VLLM_IGNORED.contains(&normalized.as_str())
        }
    }
}

fn unrecognized(
    kind: EngineKind,
    name: &str,
    table: &[(&str, Setter)],
    ignored: &[&str],
) -> String {
    let known = table.iter().map(|(n, _)| *n).chain(ignored.iter().copied());
    let best = did_you_mean(name, known)
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    match kind {
        EngineKind::Mindie => format!("unknown MindIE config key `{name}`{best}"),
        _ => format!(
            "vllm serve: error: unrecognized arguments: --{}{best}",
            name.replace('_', "-")
        ),
    }
}

fn set_u32(slot: &mut Option<u32>, name: &str, value: &Value) -> Result<(), String> {
    let n = match value {
        Value::Str(s) => parse_count(s),
        other => other.as_i64(),
    };
    match n.and_then(|n| u32::try_from(n).ok()) {
        Some(n) => {
            *slot = Some(n);
            Ok(())
        }
        None => Err(format!(
            "parameter `{name}`: expected a whole number ≥ 0 (\"8k\" allowed), got `{value}`"
        )),
    }
}

fn parse_count(text: &str) -> Option<i64> {
    let t = text.trim().to_ascii_lowercase();
    match t.strip_suffix('k') {
        Some(k) => k.parse::<f64>().ok().map(|x| (x * 1024.0).round() as i64),
        None => t.parse().ok(),
    }
}

fn set_f64(slot: &mut Option<f64>, name: &str, value: &Value) -> Result<(), String> {
    let x = match value {
        Value::Str(s) => s.trim().parse().ok(),
        Value::Bool(_) => None,
        other => other.as_f64(),
    };
    match x {
        Some(x) if f64::is_finite(x) => {
            *slot = Some(x);
            Ok(())
        }
        _ => Err(format!(
            "parameter `{name}`: expected a number, got `{value}`"
        )),
    }
}

fn set_bool(slot: &mut Option<bool>, name: &str, value: &Value) -> Result<(), String> {
    let b = match value {
        Value::Bool(b) => Some(*b),
        Value::Str(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Some(true),
            "false" | "no" | "off" | "0" => Some(false),
            _ => None,
        },
        Value::Int(i @ (0 | 1)) => Some(*i == 1),
        _ => None,
    };
    match b {
        Some(b) => {
            *slot = Some(b);
            Ok(())
        }
        None => Err(format!(
            "parameter `{name}`: expected true or false, got `{value}`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::params_of as params;

    #[test]
    fn reads_vllm_and_mindie_names() {
        let p = params(&[
            ("max_num_seqs", Value::Int(64)),
            ("max-num-batched-tokens", Value::Str("8k".into())),
            ("enable_chunked_prefill", Value::Str("false".into())),
            ("gpu_memory_utilization", Value::Float(0.85)),
            ("scheduler_delay_factor", Value::Float(0.3)),
        ]);
        let k = Knobs::from_params(EngineKind::Vllm, &p).unwrap();
        assert_eq!(k.max_num_seqs, Some(64));
        assert_eq!(k.max_num_batched_tokens, Some(8192));
        assert_eq!(k.chunked_prefill, Some(false));
        assert_eq!(k.memory_utilization, Some(0.85));
        let m = params(&[
            ("maxBatchSize", Value::Int(128)),
            ("worldSize", Value::Int(8)),
        ]);
        let k = Knobs::from_params(EngineKind::Mindie, &m).unwrap();
        assert_eq!(
            (k.max_num_seqs, k.tensor_parallel_size),
            (Some(128), Some(8))
        );
    }

    #[test]
    fn refuses_unknown_names_and_bad_values() {
        let e = Knobs::from_params(EngineKind::Vllm, &params(&[("max_num_seq", Value::Int(1))]))
            .unwrap_err();
        assert!(e.contains("unrecognized arguments: --max-num-seq"), "{e}");
        assert!(e.contains("did you mean `max_num_seqs`"), "{e}");
        let e = Knobs::from_params(
            EngineKind::Vllm,
            &params(&[("block_size", Value::Float(1.5))]),
        )
        .unwrap_err();
        assert!(e.contains("`block_size`: expected a whole number"), "{e}");
    }
}
