//! Parameter definitions of a search space (the typed form of the YAML `parameters:` list).

use crate::record::Value;
pub use crate::topo::NumaCandidates;
use serde::{Deserialize, Serialize};

/// One tunable (or fixed, or derived) parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamDef {
    /// Name used in constraints, records (`param_<name>`) and by default to render the engine flag.
    pub name: String,
    /// Domain of the parameter.
    pub kind: ParamKind,
    /// Condition (expression over other params); when false the parameter is absent from the config.
    pub when: Option<String>,
    /// How the engine receives it; `None` = the engine adapter's default for the name.
    pub target: Option<Target>,
    /// The engine's own default, used for the baseline trial. `None` = omit (engine decides).
    pub default: Option<Value>,
}

impl ParamDef {
    /// A parameter `name` over `kind`, with no condition, target override or default.
    pub fn new(name: &str, kind: ParamKind) -> ParamDef {
        ParamDef {
            name: name.into(),
            kind,
            when: None,
            target: None,
            default: None,
        }
    }
}

/// Domain of a parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// Integers in `[low, high]`, optionally on a grid of `step` from `low`, optionally log-uniform.
    Int {
        low: i64,
        high: i64,
        step: Option<i64>,
        log: bool,
    },
    /// Reals in `[low, high]`, optionally on a grid of `step` from `low`, optionally log-uniform.
    Float {
        low: f64,
        high: f64,
        step: Option<f64>,
        log: bool,
    },
    /// One of a list of scalars.
    Choice { values: Vec<Value> },
    /// true/false; rendering is per engine (vLLM: `--x` / `--no-x`).
    Bool,
    /// Always this value.
    Const { value: Value },
    /// Computed from other parameters by an expression, e.g. `max(max_model_len, 2048)`.
    Derived { expr: String },
    /// A NUMA binding (a numactl argument list, or "none"); candidates resolved from the topology.
    Numa { candidates: NumaCandidates },
}

/// How a parameter reaches the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A command-line flag with this exact spelling, e.g. `--max-num-seqs`.
    Flag(String),
    /// An environment variable.
    Env(String),
    /// A dotted path into the engine's JSON config file, e.g. `BackendConfig.ScheduleConfig.maxBatchSize`.
    ConfigPath(String),
    /// Only used in constraints/derived expressions; never passed to the engine.
    None,
}
