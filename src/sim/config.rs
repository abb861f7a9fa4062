//! What is simulated (engine, card, model, TP) and the complete engine configuration derived
//! from a parameter set: the engine's defaults, its validation, and the model-specific checks.

use super::knobs::Knobs;
use super::numa::{self, NumaBinding};
use super::profiles::{self, CardProfile, CardScale, EngineProfile, ModelProfile, Scheduling};
use crate::record::{FailureKind, Params};
use crate::space::EngineKind;
use serde::{Deserialize, Serialize};

/// The engine, hardware and model being simulated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Deployment {
    /// `Vllm` or `Mindie`.
    pub engine: EngineKind,
    /// Engine version; for vLLM, below 0.8 selects the V0 scheduler, 0.8 to 0.11 the V1
    /// scheduler without async scheduling. `None` = a current V1.
    pub version: Option<String>,
    /// Card profile name, e.g. `H100`, or the path of a card profile file.
    pub card: String,
    /// How the card differs from its profile (calibrated or perturbed); nominal by default.
    #[serde(default, skip_serializing_if = "CardScale::is_nominal")]
    pub card_scale: CardScale,
    /// Model profile name, e.g. `Qwen2.5-7B`.
    pub model: String,
    /// Cards used with tensor parallelism (a `tensor_parallel_size`/`worldSize` param overrides it).
    pub tp: u32,
}

#[cfg(test)]
impl Deployment {
    /// A current vLLM serving `model` on `tp` `card`s.
    pub(crate) fn vllm(card: &str, model: &str, tp: u32) -> Deployment {
        Deployment {
            engine: EngineKind::Vllm,
            version: None,
            card: card.into(),
            card_scale: CardScale::default(),
            model: model.into(),
            tp,
        }
    }
}

/// Why a simulated engine could not start (or a run could not be simulated).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct SimFailure {
    /// Failure class, as the supervisor would classify the real engine's exit.
    pub kind: FailureKind,
    /// The engine's message (e.g. a vLLM `ValueError` text), or what is wrong with the input.
    pub message: String,
}

impl SimFailure {
    /// A refused configuration or input.
    pub fn invalid(message: impl Into<String>) -> Self {
        SimFailure {
            kind: FailureKind::InvalidConfig,
            message: message.into(),
        }
    }

    /// An out-of-memory failure at start.
    pub fn oom(message: impl Into<String>) -> Self {
        SimFailure {
            kind: FailureKind::Oom,
            message: message.into(),
        }
    }
}

/// A complete engine configuration: every knob the model reads, defaults filled in.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Which engine (for messages).
    pub kind: EngineKind,
    /// Card profile, with the deployment's scale applied.
    pub card: CardProfile,
    /// Model profile.
    pub model: &'static ModelProfile,
    /// Engine generation profile.
    pub engine: &'static EngineProfile,
    /// Tensor-parallel size.
    pub tp: u32,
    /// Most sequences running at once.
    pub max_num_seqs: u32,
    /// Token budget of one step.
    pub max_num_batched_tokens: u32,
    /// Most prompts admitted in one prefill step.
    pub max_prefill_seqs: u32,
    /// KV block size, tokens.
    pub block_size: u32,
    /// Prompts may be split across steps.
    pub chunked_prefill: bool,
    /// Shared prompt prefixes are computed once and reused.
    pub prefix_caching: bool,
    /// Fraction of device memory the engine may use.
    pub memory_utilization: f64,
    /// Fixed KV cache size per card, GiB (MindIE `npuMemSize`); `None` = from the utilization.
    pub kv_cache_gib: Option<f64>,
    /// Longest prompt + output accepted.
    pub max_model_len: u32,
    /// Cap on generated tokens per request.
    pub max_output_tokens: Option<u32>,
    /// No graph capture: higher launch cost per step, faster start.
    pub enforce_eager: bool,
    /// KV cache stored in 8 bits.
    pub kv_cache_fp8: bool,
    /// Host NUMA binding of the server process.
    pub numa: NumaBinding,
    /// How steps are composed.
    pub scheduling: Scheduling,
}

impl EngineConfig {
    /// Resolve `params` for `deployment`: read the knobs, run the engine's rule pack, fill in
    /// defaults and apply the checks that depend on the model and the card.
    pub fn resolve(deployment: &Deployment, params: &Params) -> Result<EngineConfig, SimFailure> {
        let card = deployment
            .card_scale
            .apply(profiles::card(&deployment.card).map_err(SimFailure::invalid)?);
        let model = profiles::model(&deployment.model).map_err(SimFailure::invalid)?;
        let knobs = Knobs::from_params(deployment.engine, params).map_err(SimFailure::invalid)?;
        let model = match knobs.quantization.as_deref() {
            None => model,
            Some(scheme) => profiles::quantised(model, scheme).map_err(SimFailure::invalid)?,
        };
        let engine = engine_profile(deployment)?;
        crate::engine::rule_pack(deployment.engine)
            .check(deployment.version.as_deref(), Some(&card.platform), params)
            .map_err(|r| SimFailure::invalid(r.message))?;
        let tp = knobs.tensor_parallel_size.unwrap_or(deployment.tp);
        let large_card = card.memory_gib >= 70.0 && !card.name.starts_with("A100");
        let pick = |small: u32, large: u32| if large_card { large } else { small };
        let max_model_len = knobs.max_model_len.unwrap_or(match deployment.engine {
            EngineKind::Mindie => model.max_len.min(2560),
            _ => model.max_len,
        });
        let chunked_prefill = knobs
            .chunked_prefill
            .unwrap_or(engine.default_chunked_prefill || max_model_len > 32768);
        let default_budget = if chunked_prefill {
            pick(
                engine.default_batched_tokens,
                engine.default_batched_tokens_large_card,
            )
        } else {
            max_model_len.max(engine.default_batched_tokens)
        };
        let max_num_seqs = knobs.max_num_seqs.unwrap_or(pick(
            engine.default_max_num_seqs,
            engine.default_max_num_seqs_large_card,
        ));
        let config = EngineConfig {
            kind: deployment.engine,
            card,
            model,
            engine,
            tp,
            max_num_seqs,
            max_num_batched_tokens: knobs.max_num_batched_tokens.unwrap_or(default_budget),
            max_prefill_seqs: knobs.max_prefill_seqs.unwrap_or(max_num_seqs),
            block_size: knobs.block_size.unwrap_or(engine.default_block_size),
            chunked_prefill,
            prefix_caching: knobs
                .prefix_caching
                .unwrap_or(engine.default_prefix_caching),
            memory_utilization: knobs
                .memory_utilization
                .unwrap_or(engine.default_memory_utilization),
            kv_cache_gib: knobs.kv_cache_gib.filter(|g| *g > 0.0),
            max_model_len,
            max_output_tokens: knobs.max_output_tokens,
            enforce_eager: knobs.enforce_eager.unwrap_or(false),
            kv_cache_fp8: knobs
                .kv_cache_dtype
                .as_deref()
                .is_some_and(|d| d.starts_with("fp8")),
            numa: numa::parse(knobs.numa.as_deref().unwrap_or("none"))
                .map_err(SimFailure::invalid)?,
            scheduling: if chunked_prefill {
                Scheduling::Mixed
            } else {
                engine.scheduling
            },
        };
        config.check_against_model(knobs.dtype.as_deref())?;
        Ok(config)
    }

    fn check_against_model(&self, dtype: Option<&str>) -> Result<(), SimFailure> {
        let m = self.model;
        let positive = [
            ("max_num_seqs", self.max_num_seqs),
            ("max_num_batched_tokens", self.max_num_batched_tokens),
            ("block_size", self.block_size),
            ("max_model_len", self.max_model_len),
            ("tensor_parallel_size", self.tp),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(SimFailure::invalid(format!("{name} must be at least 1")));
        }
        if !(self.memory_utilization > 0.0 && self.memory_utilization <= 1.0) {
            return Err(SimFailure::invalid(format!(
                "GPU memory utilization must be within (0, 1]. Got {}.",
                self.memory_utilization
            )));
        }
        if !m.heads.is_multiple_of(self.tp) {
            return Err(SimFailure::invalid(format!(
                "Total number of attention heads ({}) must be divisible by tensor parallel size \
                 ({}). (`num_attention_heads` of the model's config.json)",
                m.heads, self.tp
            )));
        }
        if self.max_model_len > m.max_len {
            return Err(SimFailure::invalid(format!(
                "User-specified max_model_len ({}) is greater than the derived max_model_len \
                 (max_position_embeddings={} or model_max_length=None in model's config.json).",
                self.max_model_len, m.max_len
            )));
        }
        let wants_bf16 = matches!(dtype, Some("bfloat16" | "bf16"));
        if wants_bf16 && !self.card.bf16 {
            return Err(SimFailure::invalid(format!(
                "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. \
                 Your {} GPU does not support it. You can use float16 instead by explicitly \
                 setting the `dtype` flag in CLI, for example: --dtype=half.",
                self.card.name
            )));
        }
        numa::check_nodes(&self.numa, &self.card.host).map_err(SimFailure::invalid)
    }

    /// Check a request against the context limits as the engine's API does (the error is the
    /// HTTP 400 text); returns the output length after the engine's own cap.
    pub(crate) fn check_request(&self, prompt: u32, output: u32) -> Result<u32, String> {
        let output = self.max_output_tokens.map_or(output, |cap| output.min(cap));
        let total = u64::from(prompt) + u64::from(output);
        if total > u64::from(self.max_model_len) {
            return Err(format!(
                "This model's maximum context length is {} tokens. However, you requested {total} \
                 tokens ({prompt} in the messages, {output} in the completion). Please reduce the \
                 length of the messages or completion.",
                self.max_model_len
            ));
        }
        if !self.chunked_prefill && prompt > self.max_num_batched_tokens {
            return Err(format!(
                "Input prompt ({prompt} tokens) is too long and exceeds limit of {}",
                self.max_num_batched_tokens
            ));
        }
        Ok(output)
    }

    /// KV-cache bytes of one token on one card.
    pub(crate) fn kv_bytes_per_token_per_card(&self) -> f64 {
        let heads_per_card = self.model.kv_heads.div_ceil(self.tp).max(1);
        let bytes = 2.0
            * f64::from(self.model.layers)
            * f64::from(heads_per_card)
            * f64::from(self.model.head_dim)
            * 2.0;
        if self.kv_cache_fp8 {
            bytes / 2.0
        } else {
            bytes
        }
    }
}

/// The engine generation profile `deployment` selects (vLLM V0/V1 by version, or MindIE).
pub(crate) fn engine_profile(
    deployment: &Deployment,
) -> Result<&'static EngineProfile, SimFailure> {
    match deployment.engine {
        EngineKind::Mindie => Ok(profiles::engine("mindie")),
        EngineKind::Vllm | EngineKind::Sim => {
            // V1 from 0.8; from 0.12 the scheduler runs one step ahead of the device (async
            // scheduling by default), which hides most of its host time.
            let version = match deployment.version.as_deref() {
                None => None,
                Some(text) => Some(vllm_major_minor(text)?),
            };
            Ok(profiles::engine(match version {
                Some(v) if v < (0, 8) => "vllm-v0",
                Some(v) if v < (0, 12) => "vllm-v1",
                _ => "vllm-v1-async",
            }))
        }
        other => Err(SimFailure::invalid(format!(
            "the simulator models vLLM and MindIE, not {other:?}; use engine vllm or mindie"
        ))),
    }
}

fn vllm_major_minor(text: &str) -> Result<(u32, u32), SimFailure> {
    let mut parts = text.trim_start_matches('v').split(['.', '+', '-']);
    let mut next = || parts.next().and_then(|p| p.parse::<u32>().ok());
    match (next(), next()) {
        (Some(major), Some(minor)) => Ok((major, minor)),
        _ => Err(SimFailure::invalid(format!(
            "engine version `{text}` is not a version number; write it like `0.6.3`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Value;

    #[test]
    fn v1_defaults_depend_on_the_card() {
        let h100 =
            EngineConfig::resolve(&Deployment::vllm("H100", "Qwen2.5-7B", 1), &Params::new())
                .unwrap();
        assert_eq!(
            (h100.max_num_seqs, h100.max_num_batched_tokens),
            (1024, 8192)
        );
        assert!(h100.chunked_prefill && h100.prefix_caching);
        let a100 = EngineConfig::resolve(
            &Deployment::vllm("A100-80", "Qwen2.5-7B", 1),
            &Params::new(),
        )
        .unwrap();
        assert_eq!(
            (a100.max_num_seqs, a100.max_num_batched_tokens),
            (256, 2048)
        );
    }

    #[test]
    fn v0_without_chunking_defaults_the_budget_to_max_model_len() {
        let mut d = Deployment::vllm("A6000", "Qwen2-0.5B", 1);
        d.version = Some("0.6.3".into());
        let c = EngineConfig::resolve(&d, &Params::new()).unwrap();
        assert_eq!(c.scheduling, Scheduling::PrefillFirst);
        assert_eq!(c.max_num_batched_tokens, 32768);
    }

    #[test]
    fn model_checks_use_the_engines_messages() {
        let e = EngineConfig::resolve(&Deployment::vllm("H100", "Qwen2.5-0.5B", 4), &Params::new())
            .unwrap_err();
        assert!(e
            .message
            .contains("attention heads (14) must be divisible by tensor parallel size (4)"));
        let p: Params = [("max_model_len".to_string(), Value::Int(65536))].into();
        let e = EngineConfig::resolve(&Deployment::vllm("H100", "Qwen2.5-7B", 1), &p).unwrap_err();
        assert!(
            e.message.contains("User-specified max_model_len (65536)"),
            "{e}"
        );
        let p: Params = [("dtype".to_string(), Value::Str("bfloat16".into()))].into();
        let e = EngineConfig::resolve(&Deployment::vllm("T4", "Qwen2-7B", 4), &p).unwrap_err();
        assert!(e.message.contains("--dtype=half"), "{e}");
        let mut d = Deployment::vllm("H100", "Qwen2.5-7B", 1);
        d.version = Some("latest".into());
        assert!(EngineConfig::resolve(&d, &Params::new())
            .unwrap_err()
            .message
            .contains("like `0.6.3`"));
    }
}
