//! The simulated engine, card and model that `sim eval` and `sim serve` share.

use crate::record::{Params, Value};
use crate::sim::config::Deployment;
use crate::sim::profiles::CardScale;
use crate::space::EngineKind;

/// The simulated engine, card and model.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct TargetArgs {
    /// Card profile (H100, H200, A100-40, A100-80, A6000, L40S, T4, V100, Ascend-910B4, MXC500).
    #[arg(long)]
    pub(super) card: String,
    /// Model profile, e.g. Qwen2.5-7B (a leading `org/` and `-Instruct` aliases are accepted),
    /// or the path of a Hugging Face config.json.
    #[arg(long, required_unless_present = "model_config")]
    pub(super) model: Option<String>,
    /// The model's Hugging Face config.json (instead of --model).
    #[arg(long, conflicts_with = "model")]
    pub(super) model_config: Option<String>,
    /// Tensor-parallel size (cards).
    #[arg(long, visible_alias = "tensor-parallel-size", default_value_t = 1)]
    pub(super) tp: u32,
    /// Engine modelled: vllm or mindie.
    #[arg(long, value_parser = parse_engine)]
    pub(super) engine: Option<EngineKind>,
    /// Engine version; vLLM below 0.8 uses the V0 scheduler.
    #[arg(long)]
    pub(super) engine_version: Option<String>,
    /// Engine parameter NAME=VALUE (vLLM names like max_num_seqs, or MindIE names like maxBatchSize).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_assignment)]
    pub(super) set: Vec<(String, Value)>,
    /// Seed of the engine noise.
    #[arg(long, default_value_t = 0)]
    pub(super) seed: u64,
}

impl TargetArgs {
    /// The deployment for `params` (MindIE when a MindIE-style name is set and no --engine).
    pub(super) fn deployment(&self, params: &Params) -> Deployment {
        let mindie_names = params
            .keys()
            .any(|k| k.chars().any(|c| c.is_ascii_uppercase()));
        let engine = self.engine.unwrap_or(if mindie_names {
            EngineKind::Mindie
        } else {
            EngineKind::Vllm
        });
        Deployment {
            engine,
            version: self.engine_version.clone(),
            card: self.card.clone(),
            card_scale: CardScale::default(),
            model: self
                .model_config
                .clone()
                .or_else(|| self.model.clone())
                .unwrap_or_default(),
            tp: self.tp,
        }
    }
}

fn parse_engine(text: &str) -> Result<EngineKind, String> {
    match text.to_ascii_lowercase().as_str() {
        "vllm" => Ok(EngineKind::Vllm),
        "mindie" => Ok(EngineKind::Mindie),
        other => Err(format!(
            "`{other}`: the simulator models `vllm` and `mindie`"
        )),
    }
}

/// `NAME=VALUE` with VALUE read as bool, integer, float, or text.
fn parse_assignment(text: &str) -> Result<(String, Value), String> {
    let (name, raw) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}`: expected NAME=VALUE, e.g. max_num_seqs=128"))?;
    let value = match raw {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => raw
            .parse::<i64>()
            .map(Value::Int)
            .or_else(|_| raw.parse::<f64>().map(Value::Float))
            .unwrap_or_else(|_| Value::Str(raw.to_string())),
    };
    Ok((name.trim().to_string(), value))
}
