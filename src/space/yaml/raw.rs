//! The space file as written: serde structs that keep the location of every node a later
//! check may need to point at.

use crate::probe::WorkloadSpec;
use crate::record::Value;
use crate::space::objective::ObjectiveSpec;
use crate::space::EngineKind;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;
use std::fmt;

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSpace {
    pub name: Option<String>,
    pub engine: RawEngine,
    #[serde(default)]
    pub launch: RawLaunch,
    pub parameters: Spanned<ParamList>,
    #[serde(default)]
    pub constraints: Vec<RawConstraint>,
    #[serde(default)]
    pub rules: RawRules,
    pub probe: Spanned<WorkloadSpec>,
    pub objective: Spanned<ObjectiveSpec>,
    #[serde(default)]
    pub search: RawSearch,
    #[serde(default)]
    pub executor: crate::space::executor::ExecutorSpec,
}

/// `engine:`
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEngine {
    pub kind: EngineKind,
    pub version: Option<Spanned<Value>>,
    pub model: Spanned<String>,
    pub served_model_name: Option<String>,
    pub card: Option<String>,
}

/// `launch:`
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLaunch {
    pub command: Option<Vec<Spanned<String>>>,
    pub host: Option<String>,
    pub port: Option<Spanned<u16>>,
    #[serde(default)]
    pub env: BTreeMap<String, Spanned<Value>>,
    pub ready_timeout: Option<Spanned<String>>,
    pub health_path: Option<String>,
    #[serde(default)]
    pub extra_args: Vec<Spanned<String>>,
    pub config_template: Option<Spanned<String>>,
    pub stop_grace: Option<Spanned<String>>,
    pub devices: Option<Vec<u32>>,
    pub devices_per_trial: Option<Spanned<RawCount>>,
}

/// A whole number or an expression giving one.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum RawCount {
    Number(u32),
    Expr(String),
}

/// One entry of `parameters:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawParam {
    #[serde(rename = "type")]
    pub kind: Spanned<String>,
    pub low: Option<Spanned<Value>>,
    pub high: Option<Spanned<Value>>,
    pub step: Option<Spanned<Value>>,
    pub log: Option<bool>,
    pub values: Option<Spanned<Vec<Value>>>,
    pub value: Option<Value>,
    pub expr: Option<Spanned<String>>,
    pub candidates: Option<Spanned<RawCandidates>>,
    pub when: Option<Spanned<String>>,
    pub flag: Option<String>,
    pub env: Option<String>,
    pub path: Option<String>,
    pub internal: Option<bool>,
    pub default: Option<Spanned<Value>>,
}

/// `candidates: auto` or a list of numactl argument strings.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum RawCandidates {
    Word(String),
    List(Vec<String>),
}

/// `parameters:` in declaration order, each with the location of its name.
pub(crate) struct ParamList(pub Vec<(Spanned<String>, Spanned<RawParam>)>);

impl<'de> Deserialize<'de> for ParamList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = ParamList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of parameter names to definitions")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParamList, A::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    out.push((key, map.next_value()?));
                }
                Ok(ParamList(out))
            }
        }
        deserializer.deserialize_map(Ordered)
    }
}

/// One entry of `constraints:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConstraint {
    pub name: Spanned<String>,
    pub expr: Spanned<String>,
}

/// `rules:`
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRules {
    pub enabled: Option<bool>,
    #[serde(default)]
    pub disable: Vec<Spanned<String>>,
    #[serde(default)]
    pub repair: bool,
    pub platform: Option<String>,
}

/// `search:`
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSearch {
    pub sampler: Option<String>,
    pub trials: Option<u32>,
    pub budget: Option<Spanned<String>>,
    pub seed: Option<u64>,
    pub baseline: Option<bool>,
    pub revalidate_top: Option<u32>,
    pub repeats: Option<u32>,
    pub resolution: Option<Spanned<f64>>,
    pub max_repeats: Option<Spanned<u32>>,
    #[serde(default)]
    pub enqueue: Vec<Spanned<crate::record::Params>>,
    pub parallel: Option<Spanned<u32>>,
    #[serde(default)]
    pub warm_start: Vec<Spanned<serde_json::Value>>,
    pub transfer_weight: Option<Spanned<f64>>,
    pub prior: Option<Spanned<String>>,
}
