//! Shared rendering of a resolved config into flags, environment and config-file entries.

use crate::record::{Params, Value};
use crate::space::{ParamDef, ParamKind, StudySpec, Target};
use anyhow::{bail, Result};
use std::collections::BTreeMap;

/// How an engine's command line spells booleans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BoolStyle {
    /// `--x` for true, `--no-x` for false (Python `BooleanOptionalAction`, as vLLM uses).
    Negatable,
    /// `--x` for true, nothing for false (`store_true` flags, as SGLang and llama.cpp use).
    StoreTrue,
}

/// Where a parameter without an explicit `target` goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DefaultTarget {
    /// A flag spelled `--` + the name with `_` → `-`.
    Flag,
    /// A dotted path into the engine's config file, equal to the name.
    ConfigPath,
    /// Nowhere: the engine consumes it another way (placeholders of a custom command).
    Unrouted,
}

/// A config split by destination.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Rendered {
    /// Flags and their values, in the space's declaration order.
    pub flags: Vec<String>,
    /// Environment set by parameters with an `env` target.
    pub env: BTreeMap<String, String>,
    /// `(dotted path, value)` for parameters with a `config_path` target.
    pub config: Vec<(String, Value)>,
    /// numactl arguments of the NUMA parameter, when it binds (not "none").
    pub numa: Option<String>,
    /// Names of parameters left for the engine to place itself ([`DefaultTarget::Unrouted`]).
    pub unrouted: Vec<String>,
}

impl Rendered {
    /// Fails when a parameter targets a config file but `engine` has none.
    pub(crate) fn reject_config_paths(&self, engine: &str) -> Result<()> {
        if let Some((path, _)) = self.config.first() {
            bail!(
                "a parameter targets the config path `{path}`, but {engine} takes no config file; \
                 give it a `flag` or `env` target instead"
            );
        }
        Ok(())
    }
}

/// The default flag spelling of a parameter name: `max_num_seqs` → `--max-num-seqs`.
pub(crate) fn flag_for(name: &str) -> String {
    format!("--{}", name.replace('_', "-"))
}

/// The text form of a value on a command line or in the environment.
pub(crate) fn value_text(value: &Value) -> String {
    value.to_string()
}

/// Split `params` (a resolved config of `space`) by destination.
pub(crate) fn render_params(
    space: &StudySpec,
    params: &Params,
    bools: BoolStyle,
    default_target: DefaultTarget,
) -> Result<Rendered> {
    if let Some(unknown) = params
        .keys()
        .find(|name| !space.parameters.iter().any(|d| &d.name == *name))
    {
        bail!(
            "the config sets `{unknown}`, which {} does not declare; add it to `parameters:` or drop it",
            space.origin
        );
    }
    let mut out = Rendered::default();
    for def in &space.parameters {
        let Some(value) = params.get(&def.name) else {
            continue;
        };
        if matches!(def.kind, ParamKind::Numa { .. }) {
            if def.target != Some(Target::None) {
                out.numa = numa_binding(def, value)?;
            }
            continue;
        }
        route(def, value, bools, default_target, &mut out)?;
    }
    Ok(out)
}

fn route(
    def: &ParamDef,
    value: &Value,
    bools: BoolStyle,
    default_target: DefaultTarget,
    out: &mut Rendered,
) -> Result<()> {
    let target = match (&def.target, default_target) {
        (Some(t), _) => t.clone(),
        (None, DefaultTarget::Flag) => Target::Flag(flag_for(&def.name)),
        (None, DefaultTarget::ConfigPath) => Target::ConfigPath(def.name.clone()),
        (None, DefaultTarget::Unrouted) => {
            out.unrouted.push(def.name.clone());
            return Ok(());
        }
    };
    match target {
        Target::Flag(flag) => push_flag(&mut out.flags, &flag, value, bools),
        Target::Env(var) => {
            out.env.insert(var, value_text(value));
        }
        Target::ConfigPath(path) => out.config.push((path, value.clone())),
        Target::None => {}
    }
    Ok(())
}

/// Append `flag` with `value`: booleans per `bools`, anything else as `flag value`.
pub(crate) fn push_flag(flags: &mut Vec<String>, flag: &str, value: &Value, bools: BoolStyle) {
    match (value, bools) {
        (Value::Bool(true), _) => flags.push(flag.to_string()),
        (Value::Bool(false), BoolStyle::Negatable) => {
            flags.push(format!("--no-{}", flag.trim_start_matches('-')))
        }
        (Value::Bool(false), BoolStyle::StoreTrue) => {}
        (other, _) => {
            flags.push(flag.to_string());
            flags.push(value_text(other));
        }
    }
}

fn numa_binding(def: &ParamDef, value: &Value) -> Result<Option<String>> {
    let Value::Str(text) = value else {
        bail!(
            "parameter `{}` is a NUMA binding and needs numactl arguments such as \"-N 0 -m 0\" \
             or \"none\", not {value}",
            def.name
        );
    };
    let text = text.trim();
    Ok((!text.is_empty() && text != "none").then(|| text.to_string()))
}
