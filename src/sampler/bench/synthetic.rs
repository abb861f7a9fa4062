//! A synthetic serving landscape with the shape real tuning runs show: throughput rises with the
//! batch the KV cache can hold, an SLO cliff on p99 TPOT/TTFT caps it, high memory utilisation
//! with many sequences runs out of memory at start-up, too little leaves no room for the KV
//! cache, and chunked prefill, prefix caching, fp8 KV and block size shift the ridge.
//!
//! The model is a closed-loop steady state: `B = min(max_num_seqs, concurrency, KV slots)`
//! requests decode together; each decode step costs `base + per_seq·B + attention(B·context)`,
//! and every request's prefill is amortised over the steps of the batch.

use super::space::{param, FnSpace};
use super::{Objective, Scenario, StartupFailure};
use crate::launch::FailureKind;
use crate::probe::{MetricMap, Slo};
use crate::space::{ParamKind, Params, Rejection, Value};

/// Model, card and workload constants of one scenario.
#[derive(Clone, Debug)]
pub struct Profile {
    /// Scenario name.
    pub name: &'static str,
    /// Accelerator memory per card, GB.
    pub card_gb: f64,
    /// Weights per card, GB.
    pub weights_gb: f64,
    /// KV cache per token per card (fp16), KB.
    pub kv_kb_per_token: f64,
    /// Activation memory per 1k batched tokens, MB (inside the utilisation budget).
    pub act_mb_per_ktoken: f64,
    /// CUDA-graph/sampler memory per sequence slot, MB (outside the budget).
    pub graph_mb_per_seq: f64,
    /// `max_model_len` the server is started with.
    pub max_model_len: i64,
    /// Prompt tokens per request.
    pub input_tokens: f64,
    /// Output tokens per request.
    pub output_tokens: f64,
    /// Fraction of the prompt shared by all requests (system prompt).
    pub prefix_share: f64,
    /// Closed-loop client concurrency.
    pub concurrency: f64,
    /// Prefill speed, tokens/s.
    pub prefill_tok_s: f64,
    /// Fixed cost of a decode step, ms.
    pub step_base_ms: f64,
    /// Cost per sequence in a decode step, ms.
    pub step_per_seq_ms: f64,
    /// Attention cost per million context tokens in a step, ms.
    pub attn_ms_per_mtoken: f64,
    /// SLO: p99 TTFT bound, ms.
    pub ttft_p99_ms: f64,
    /// SLO: p99 TPOT bound, ms.
    pub tpot_p99_ms: f64,
}

/// The four benchmark scenarios (constants after published figures: Qwen2.5-0.5B on A100 at
/// concurrency 200 ≈ 6.5k output tok/s with ~29 ms TPOT; 7B-class models fit one 80 GB card;
/// a 72B model needs TP4; 910B4 cards have 32 GB).
pub fn profiles() -> Vec<Profile> {
    vec![
        Profile {
            name: "qwen2.5-7b-h100-chat",
            card_gb: 80.0,
            weights_gb: 15.2,
            kv_kb_per_token: 57.0,
            act_mb_per_ktoken: 180.0,
            graph_mb_per_seq: 9.0,
            max_model_len: 8192,
            input_tokens: 600.0,
            output_tokens: 250.0,
            prefix_share: 0.4,
            concurrency: 160.0,
            prefill_tok_s: 16000.0,
            step_base_ms: 12.0,
            step_per_seq_ms: 0.05,
            attn_ms_per_mtoken: 40.0,
            ttft_p99_ms: 6000.0,
            tpot_p99_ms: 50.0,
        },
        Profile {
            name: "qwen2.5-0.5b-a100-1024x1024",
            card_gb: 40.0,
            weights_gb: 1.0,
            kv_kb_per_token: 12.0,
            act_mb_per_ktoken: 40.0,
            graph_mb_per_seq: 4.0,
            max_model_len: 4096,
            input_tokens: 1024.0,
            output_tokens: 1024.0,
            prefix_share: 0.0,
            concurrency: 224.0,
            prefill_tok_s: 40000.0,
            step_base_ms: 8.0,
            step_per_seq_ms: 0.03,
            attn_ms_per_mtoken: 30.0,
            ttft_p99_ms: 10000.0,
            tpot_p99_ms: 40.0,
        },
        Profile {
            name: "qwen2.5-72b-tp4-long-input",
            card_gb: 80.0,
            weights_gb: 36.5,
            kv_kb_per_token: 82.0,
            act_mb_per_ktoken: 400.0,
            graph_mb_per_seq: 20.0,
            max_model_len: 16384,
            input_tokens: 6000.0,
            output_tokens: 300.0,
            prefix_share: 0.1,
            concurrency: 32.0,
            prefill_tok_s: 9000.0,
            step_base_ms: 28.0,
            step_per_seq_ms: 0.2,
            attn_ms_per_mtoken: 60.0,
            ttft_p99_ms: 20000.0,
            tpot_p99_ms: 180.0,
        },
        Profile {
            name: "qwen1.5-7b-910b4-openqa",
            card_gb: 32.0,
            weights_gb: 15.5,
            kv_kb_per_token: 512.0,
            act_mb_per_ktoken: 250.0,
            graph_mb_per_seq: 12.0,
            max_model_len: 4096,
            input_tokens: 40.0,
            output_tokens: 240.0,
            prefix_share: 0.0,
            concurrency: 256.0,
            prefill_tok_s: 5000.0,
            step_base_ms: 30.0,
            step_per_seq_ms: 0.12,
            attn_ms_per_mtoken: 90.0,
            ttft_p99_ms: 15000.0,
            tpot_p99_ms: 90.0,
        },
    ]
}

/// The benchmark scenario of `profile`: vLLM-style space, this landscape, output throughput
/// subject to p99 TTFT and p99 TPOT bounds.
pub fn scenario(profile: Profile) -> anyhow::Result<Scenario> {
    let slos = vec![
        format!("ttft:p99<={}ms", profile.ttft_p99_ms).parse::<Slo>()?,
        format!("tpot:p99<={}ms", profile.tpot_p99_ms).parse::<Slo>()?,
    ];
    Ok(Scenario {
        name: profile.name.to_string(),
        space: Box::new(vllm_like_space(profile.max_model_len)),
        objective: Box::new(Landscape { profile }),
        metric: "output_throughput".into(),
        slos,
    })
}

/// The searched vLLM flags, with vLLM's own start-up checks as constraints.
pub fn vllm_like_space(max_model_len: i64) -> FnSpace {
    let int = |low, high, log| ParamKind::Int {
        low,
        high,
        step: None,
        log,
    };
    let parameters = vec![
        param("max_num_seqs", int(8, 1024, true)),
        param("max_num_batched_tokens", int(512, 32768, true)),
        param(
            "gpu_memory_utilization",
            ParamKind::Float {
                low: 0.7,
                high: 0.98,
                step: Some(0.01),
                log: false,
            },
        ),
        param(
            "block_size",
            ParamKind::Choice {
                values: vec![Value::Int(8), Value::Int(16), Value::Int(32)],
            },
        ),
        param("enable_chunked_prefill", ParamKind::Bool),
        crate::space::ParamDef {
            when: Some("enable_chunked_prefill".into()),
            ..param("max_num_partial_prefills", int(1, 8, false))
        },
        param("enable_prefix_caching", ParamKind::Bool),
        param(
            "kv_cache_dtype",
            ParamKind::Choice {
                values: vec![Value::Str("auto".into()), Value::Str("fp8".into())],
            },
        ),
    ];
    FnSpace::new(parameters, move |sampled| {
        let mut p = sampled.clone();
        let chunked = p.get("enable_chunked_prefill") == Some(&Value::Bool(true));
        if !chunked {
            p.remove("max_num_partial_prefills");
        }
        let tokens = p.get("max_num_batched_tokens").and_then(Value::as_i64);
        let seqs = p.get("max_num_seqs").and_then(Value::as_i64);
        if !chunked && tokens < Some(max_model_len) {
            return Err(Rejection {
                rule: "vllm.batched_tokens_ge_max_model_len".into(),
                message: format!(
                    "max_num_batched_tokens ({}) is smaller than max_model_len ({max_model_len})",
                    tokens.unwrap_or_default()
                ),
            });
        }
        if tokens < seqs {
            return Err(Rejection {
                rule: "vllm.batched_tokens_ge_num_seqs".into(),
                message: "max_num_batched_tokens must be greater than or equal to max_num_seqs"
                    .into(),
            });
        }
        Ok(p)
    })
}

/// The landscape of one profile.
pub struct Landscape {
    profile: Profile,
}

/// The knobs the landscape reads from a config.
struct Knobs {
    seqs: f64,
    batched: f64,
    util: f64,
    block: f64,
    chunked: bool,
    partial: f64,
    prefix: bool,
    fp8: bool,
}

impl Knobs {
    fn of(p: &Params) -> Option<Knobs> {
        let num = |k: &str| p.get(k).and_then(Value::as_f64);
        Some(Knobs {
            seqs: num("max_num_seqs")?,
            batched: num("max_num_batched_tokens")?,
            util: num("gpu_memory_utilization")?,
            block: num("block_size")?,
            chunked: p.get("enable_chunked_prefill")?.as_bool()?,
            partial: num("max_num_partial_prefills").unwrap_or(1.0),
            prefix: p.get("enable_prefix_caching")?.as_bool()?,
            fp8: p.get("kv_cache_dtype") == Some(&Value::Str("fp8".into())),
        })
    }
}

impl Objective for Landscape {
    fn evaluate(&self, params: &Params) -> Result<MetricMap, StartupFailure> {
        let k = Knobs::of(params).ok_or_else(|| StartupFailure {
            kind: FailureKind::InvalidConfig,
            message: format!("config lacks a landscape parameter: {params:?}"),
        })?;
        let m = &self.profile;
        let kv_slots = kv_slots(m, &k)?;
        let batch = k.seqs.min(m.concurrency).min(kv_slots).max(1.0);
        let attn = match k.block as i64 {
            8 => 1.08,
            32 => 0.97,
            _ => 1.0,
        } * if k.fp8 { 0.65 } else { 1.0 };
        let context = m.input_tokens + m.output_tokens / 2.0;
        let step_ms = m.step_base_ms * if k.fp8 { 1.05 } else { 1.0 }
            + m.step_per_seq_ms * batch
            + m.attn_ms_per_mtoken * batch * context / 1e6 * attn;
        let hit = if k.prefix { 0.9 * m.prefix_share } else { 0.0 };
        let prefill_tokens = m.input_tokens * (1.0 - hit);
        let efficiency = k.batched / (k.batched + 768.0);
        let prefill_ms = prefill_tokens / (m.prefill_tok_s * efficiency) * 1000.0;
        let mean_tpot = step_ms + batch * prefill_ms / m.output_tokens;
        let ripple = 1.0 + 0.005 * unit_hash(params);
        let throughput = batch / mean_tpot * 1000.0 * ripple;

        let chunk = k.batched.min(prefill_tokens * k.partial);
        let chunk_ms = chunk / (m.prefill_tok_s * efficiency) * 1000.0;
        let p99_tpot = if k.chunked {
            mean_tpot * (1.12 + 0.02 * k.partial) + 0.05 * chunk_ms
        } else {
            mean_tpot * 1.3 + 0.15 * chunk_ms
        };
        let budget = (k.batched - batch).max(256.0) / k.partial;
        let chunks = if k.chunked {
            (prefill_tokens / budget).ceil()
        } else {
            1.0
        };
        let prefill_load = (batch * prefill_ms / m.output_tokens / mean_tpot).min(0.95);
        let contention = 1.0 + prefill_load / (1.0 - prefill_load) / k.partial.sqrt();
        let first_token = chunks * step_ms + prefill_ms;
        let queue = (m.concurrency - batch).max(0.0) / batch * m.output_tokens * mean_tpot;
        let p99_ttft = 2.0 * first_token * contention + 1.2 * queue;
        Ok(MetricMap::from([
            ("output_throughput".to_string(), throughput),
            (
                "request_throughput".to_string(),
                throughput / m.output_tokens,
            ),
            ("mean_tpot_ms".to_string(), mean_tpot),
            ("p99_tpot_ms".to_string(), p99_tpot),
            (
                "mean_ttft_ms".to_string(),
                first_token * contention + queue / 2.0,
            ),
            ("p99_ttft_ms".to_string(), p99_ttft),
        ]))
    }
}

/// Sequences the KV cache holds, or the start-up failure the memory plan causes.
fn kv_slots(m: &Profile, k: &Knobs) -> Result<f64, StartupFailure> {
    let usable = m.card_gb - 1.0;
    let budget = k.util * m.card_gb;
    let graphs = 0.4 + m.graph_mb_per_seq * k.seqs / 1000.0;
    if budget + graphs > usable {
        return Err(StartupFailure {
            kind: FailureKind::Oom,
            message: format!(
                "CUDA out of memory: budget {budget:.1} GiB + graphs {graphs:.1} GiB > {usable:.1} GiB"
            ),
        });
    }
    let kv_gb = budget - m.weights_gb - m.act_mb_per_ktoken * k.batched / 1e6;
    let kv_kb = m.kv_kb_per_token * if k.fp8 { 0.5 } else { 1.0 };
    let kv_tokens = kv_gb.max(0.0) * 1e6 / kv_kb;
    if kv_tokens < m.max_model_len as f64 {
        return Err(StartupFailure {
            kind: FailureKind::Oom,
            message: format!(
                "The model's max seq len ({}) is larger than the maximum number of tokens that \
                 can be stored in KV cache ({kv_tokens:.0})",
                m.max_model_len
            ),
        });
    }
    let shared = if k.prefix {
        m.prefix_share * m.input_tokens
    } else {
        0.0
    };
    let per_seq = m.input_tokens - shared + m.output_tokens / 2.0 + k.block / 2.0;
    Ok((kv_tokens - shared) / per_seq)
}

/// A fixed pseudo-random number in `[-1, 1]` per config: run-to-run variation.
fn unit_hash(params: &Params) -> f64 {
    let text = serde_json::to_string(params).unwrap_or_default();
    let h = text.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3)
    });
    (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}
