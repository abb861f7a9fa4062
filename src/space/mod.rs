//! Search spaces: the YAML schema, typed parameters, constraint expressions and engine rule packs.

mod batching;
mod encode;
pub mod error;
pub mod executor;
pub mod expr;
mod fingerprint;
mod numa;
pub mod objective;
pub mod overrides;
pub mod param;
pub mod redact;
mod resolve;
pub mod rules;
pub(crate) mod sample;
pub mod secrets;

pub mod version;
mod yaml;

pub use batching::{BatchCap, Batching};
pub use error::SpaceError;
pub use param::{NumaCandidates, ParamDef, ParamKind, Target};

use crate::probe::WorkloadSpec;
use crate::record::Params;
use objective::ObjectiveSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Which serving engine a space drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// vLLM (`vllm serve`).
    Vllm,
    /// SGLang (`python -m sglang.launch_server`).
    Sglang,
    /// Huawei MindIE (`mindieservice_daemon` + config.json).
    Mindie,
    /// llama.cpp (`llama-server`).
    Llamacpp,
    /// XInference (`xinference-local`, then the model's registration and launch).
    Xinference,
    /// Any command given as an argv template.
    Custom,
    /// infertune's own simulator server (`infertune sim serve`).
    Sim,
}

impl std::fmt::Display for EngineKind {
    /// The kind as a space spells it (`engine.kind`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EngineKind::Vllm => "vllm",
            EngineKind::Sglang => "sglang",
            EngineKind::Mindie => "mindie",
            EngineKind::Llamacpp => "llamacpp",
            EngineKind::Xinference => "xinference",
            EngineKind::Custom => "custom",
            EngineKind::Sim => "sim",
        })
    }
}

/// A loaded, validated search space.
#[derive(Clone, Debug)]
pub struct StudySpec {
    /// Where it came from (file path), for messages.
    pub origin: String,
    /// Short name (defaults to the file stem); used for the study name.
    pub name: String,
    /// Engine, version and model.
    pub engine: EngineSection,
    /// How the server is started and probed for readiness.
    pub launch: LaunchSection,
    /// Which accelerators trials run on.
    pub placement: Placement,
    /// Where trials run (kept out of the study's fingerprint).
    pub executor: executor::ExecutorSpec,
    /// Parameters in declaration order.
    pub parameters: Vec<ParamDef>,
    /// Named constraint expressions that every config must satisfy.
    pub constraints: Vec<Constraint>,
    /// Engine rule pack settings.
    pub rules: RuleSettings,
    /// The engine's rule pack, from the [`rules::RuleBook`] the space was loaded with.
    pub rule_pack: &'static rules::RulePack,
    /// The fixed probe workload each trial runs.
    pub probe: WorkloadSpec,
    /// What to optimise, subject to which SLOs.
    pub objective: ObjectiveSpec,
    /// Sampler, budget, seed.
    pub search: SearchSettings,
    /// Values of the launch that are never written (tokens, API keys).
    pub secrets: secrets::Secrets,
}

/// Engine identity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineSection {
    /// Which engine.
    pub kind: EngineKind,
    /// Engine version the rule pack applies to (e.g. "0.6.3"); `None` = ask the engine's `--version`.
    pub version: Option<String>,
    /// Model path or name passed to the engine (for `sim`: a model profile name).
    pub model: String,
    /// Name the server reports in `/v1/models`; defaults to `model`.
    pub served_model_name: Option<String>,
    /// Accelerator card profile (used by `sim`; informational otherwise).
    pub card: Option<String>,
}

impl EngineSection {
    /// The name `/v1/models` reports: `served_model_name`, else `model`.
    pub(crate) fn served_name(&self) -> &str {
        self.served_model_name.as_deref().unwrap_or(&self.model)
    }
}

/// Launch settings shared by all trials.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaunchSection {
    /// Replaces the engine's default program + leading args (e.g. `["python", "-m", "vllm.entrypoints.openai.api_server"]`).
    pub command: Option<Vec<String>>,
    /// Host the server binds (always a local address for tests).
    pub host: String,
    /// First port to use; trials get ports allocated from here.
    pub port: u16,
    /// Extra environment for the server.
    pub env: BTreeMap<String, String>,
    /// Give up on readiness after this long.
    pub ready_timeout: Duration,
    /// Health endpoint path (engine default when `None`).
    pub health_path: Option<String>,
    /// Fixed extra arguments appended to every launch.
    pub extra_args: Vec<String>,
    /// Template config file (MindIE config.json).
    pub config_template: Option<PathBuf>,
    /// Grace period between SIGTERM and SIGKILL at teardown.
    pub stop_grace: Duration,
}

/// Which accelerators trials run on (`launch.devices`, `launch.devices_per_trial`). Kept out of
/// [`LaunchSection`] and the study's fingerprint: a study may resume on other devices.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Placement {
    /// Accelerators trials may use; `None`: those the host topology lists.
    pub devices: Option<Vec<u32>>,
    /// Accelerators each trial takes.
    pub devices_per_trial: DevicesPerTrial,
}

impl Default for Placement {
    fn default() -> Self {
        Placement {
            devices: None,
            devices_per_trial: DevicesPerTrial::Count(1),
        }
    }
}

/// How many accelerators a trial takes: a fixed count or an expression over its parameters
/// (e.g. `tensor_parallel_size`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum DevicesPerTrial {
    /// The same count for every trial.
    Count(u32),
    /// A CEL expression over the resolved config.
    Expr(String),
}

impl DevicesPerTrial {
    /// The count for the resolved config `params`, or why it cannot be computed.
    pub fn count(&self, params: &crate::record::Params) -> Result<u32, String> {
        let source = match self {
            DevicesPerTrial::Count(n) => return Ok(*n),
            DevicesPerTrial::Expr(source) => source,
        };
        let value = expr::eval(source, params)
            .map_err(|e| format!("launch.devices_per_trial `{source}`: {e}"))?;
        value
            .as_i64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                format!(
                    "launch.devices_per_trial `{source}` gave {value}, not a count of devices \
                     (a whole number from 0)"
                )
            })
    }
}

/// A named constraint expression over params (CEL syntax).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Constraint {
    /// Name shown when it rejects a config.
    pub name: String,
    /// The expression; a config is valid when it evaluates to true.
    pub expr: String,
}

/// Engine rule-pack settings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RuleSettings {
    /// Apply the engine's rule pack (default true).
    pub enabled: bool,
    /// Rule ids switched off for this space.
    pub disable: Vec<String>,
    /// Clamp values into range instead of rejecting where a rule allows it.
    pub repair: bool,
    /// Hardware platform rules depend on ("cuda", "cpu", "npu", ...).
    pub platform: Option<String>,
}

/// Search settings.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchSettings {
    /// Sampler name (`grid`, `random`, `qmc`, `tpe`, `pso`, ...).
    pub sampler: String,
    /// Number of trials (including the baseline).
    pub trials: u32,
    /// Wall-clock budget.
    pub budget: Option<Duration>,
    /// Seed for the sampler and the workload.
    pub seed: u64,
    /// Run the engine's default config first.
    pub baseline: bool,
    /// Re-validate the top k configs at the end (and the baseline, for the gain over it).
    pub revalidate_top: u32,
    /// Repeats per re-validated config, the baseline included.
    pub repeats: u32,
    /// The verdict's target: once the repeats ran, the winner and the baseline are measured
    /// again in turn until the 95% interval of the gain is within this fraction of the
    /// baseline's mean (0.10: ±10 points), up to `max_repeats` each and the budget.
    pub resolution: f64,
    /// Most repeats of the winner and of the baseline while the verdict's interval is wider
    /// than `resolution`; at least `repeats`.
    pub max_repeats: u32,
    /// Configs to try first, in order, after the baseline (each overlays the defaults); a
    /// config the engine would refuse is recorded as rejected and never launched.
    pub enqueue: Vec<Params>,
    /// Trials in flight at once, each on its own slot (devices, ports); at least 1.
    pub parallel: u32,
    /// Earlier studies of the same engine whose trials seed the sampler (a warm start).
    pub warm_start: Vec<WarmStartEntry>,
    /// How far the trials of `warm_start` are trusted, in `(0, 1]`.
    pub transfer_weight: f64,
    /// What the study knows before its first trial.
    pub prior: Prior,
}

impl SearchSettings {
    /// The verdict's target as the study runs it: `None` without re-validation repeats (then
    /// no runs go beyond the search's).
    pub fn verdict_target(&self) -> Option<VerdictTarget> {
        (self.revalidate_top > 0 && self.repeats > 0).then_some(VerdictTarget {
            half_width_pct: self.resolution * 100.0,
            max_repeats: self.max_repeats,
        })
    }
}

/// How well the verdict must know the gain over the baseline (`search.resolution`,
/// `search.max_repeats`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerdictTarget {
    /// Half-width of the gain's 95% interval to reach, in points of the baseline's mean.
    pub half_width_pct: f64,
    /// Most repeats of the winner and of the baseline.
    pub max_repeats: u32,
}

impl VerdictTarget {
    /// Most runs of the winner and of the baseline: the first and `max_repeats` repeats.
    pub fn most_runs(&self) -> usize {
        self.max_repeats as usize + 1
    }
}

/// What a study knows before its first trial (`search.prior`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prior {
    /// `search.prior` unset: `Twin` where the twin applies to a real engine (one it models,
    /// with a card and a model it can build), `Expert` elsewhere (`prior::twin::deployment`).
    Default,
    /// The engine's expert configs (see `engine::expert`) run first after the baseline.
    Expert,
    /// As `Expert`, and the digital twin evaluates the space before the first trial: its best
    /// configs run next and its predictions seed the sampler (`prior::twin`).
    Twin,
    /// Nothing: the search starts from its own initial design.
    None,
}

/// Transfer weight of a warm start when `search.transfer_weight` is not given.
pub const DEFAULT_TRANSFER_WEIGHT: f64 = 0.5;

/// The default `search.resolution`: a gain known within ±10 points of the defaults' mean tells a
/// tuning worth deploying from noise without re-measuring for hours.
pub const DEFAULT_RESOLUTION: f64 = 0.10;

/// One earlier study of `search.warm_start`.
#[derive(Clone, Debug, PartialEq)]
pub struct WarmStartEntry {
    /// The study folder (relative paths are taken from the space file's folder).
    pub study: PathBuf,
    /// Where the space file names it (0:0 when it came from the command line).
    pub pos: error::Pos,
}

/// Why a config was refused before launch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{rule}: {message}")]
pub struct Rejection {
    /// Constraint name or rule id, e.g. `vllm.batched_tokens_ge_max_model_len`.
    pub rule: String,
    /// The engine's own error text (rule packs) or the constraint's description.
    pub message: String,
}

/// What samplers need of a space: its parameters, and a check that completes a config.
pub trait Feasibility: Sync {
    /// Parameter definitions in declaration order.
    fn parameters(&self) -> &[ParamDef];
    /// Complete a sampled config (consts, derived values, inactive conditionals dropped),
    /// then apply constraints and the rule pack. Returns the full config or why it is refused.
    fn resolve(&self, sampled: &Params) -> Result<Params, Rejection>;
    /// How a config's batch forms under the probe, where the space knows it.
    fn batching(&self) -> Option<Batching> {
        None
    }
}

/// Reads a workload file (`bench --workload`, `sim eval --workload`: a space's `probe:`
/// section on its own) with `${NAME}` in its dataset's paths expanded as in a space.
/// Errors are a [`SpaceError`], worded as for a space.
pub fn load_workload(path: &std::path::Path) -> anyhow::Result<WorkloadSpec> {
    Ok(yaml::load_workload(path)?)
}

impl StudySpec {
    /// Load and validate a space file; `book` gives its engine's rule pack (the engine
    /// layer's `engine::rule_pack`).
    /// Errors are a [`SpaceError`] (file:line:col: what is wrong and how to fix it).
    /// `numa` parameters with `candidates: auto` stay [`NumaCandidates::Auto`] here.
    pub fn load(path: &std::path::Path, book: rules::RuleBook) -> anyhow::Result<StudySpec> {
        Ok(yaml::load(path, book)?)
    }

    /// Who may read the files a study of this space writes: the owner only when the space
    /// holds a secret.
    pub fn file_access(&self) -> crate::util::atomic::Access {
        if self.secrets.is_empty() {
            crate::util::atomic::Access::Shared
        } else {
            crate::util::atomic::Access::Owner
        }
    }

    /// Where parameter `name` is declared in the space file (0:0 when unknown), for
    /// messages about it found after loading.
    pub fn parameter_position(&self, name: &str) -> error::Pos {
        yaml::parameter_positions(std::path::Path::new(&self.origin))
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, pos)| pos)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod devices_per_trial_tests {
    use super::DevicesPerTrial;
    use crate::record::{Params, Value};

    #[test]
    fn an_expression_counts_from_the_config() {
        let params: Params = [("tensor_parallel_size".to_string(), Value::Int(4))].into();
        let count = DevicesPerTrial::Expr("tensor_parallel_size * 2".into());
        assert_eq!(count.count(&params), Ok(8));
        assert_eq!(DevicesPerTrial::Count(2).count(&params), Ok(2));
        let negative = DevicesPerTrial::Expr("0 - tensor_parallel_size".into());
        assert!(negative.count(&params).unwrap_err().contains("not a count"));
    }
}
