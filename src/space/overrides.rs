//! The engine-default (baseline) config, and the config `infertune launch` starts: the
//! baseline, then `--set NAME=VALUE`.

use super::{ParamDef, ParamKind, StudySpec};
use crate::record::{Params, Value};
use crate::util::did_you_mean;
use anyhow::{anyhow, bail, Result};

/// The engine-default config: every parameter's `default:` and every constant; the rest omitted.
pub(crate) fn baseline_config(space: &StudySpec) -> Params {
    space
        .parameters
        .iter()
        .filter_map(|p| match (&p.kind, &p.default) {
            (ParamKind::Const { value }, _) | (_, Some(value)) => {
                Some((p.name.clone(), value.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The baseline of `space`, overridden by `sets` (`NAME=VALUE` each).
pub fn config_with_overrides(space: &StudySpec, sets: &[String]) -> Result<Params> {
    let mut params = baseline_config(space);
    for set in sets {
        let Some((name, text)) = set.split_once('=') else {
            bail!("--set {set}: expected NAME=VALUE, e.g. --set max_num_seqs=64");
        };
        let name = name.trim();
        let def = space
            .parameters
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| unknown(space, name))?;
        params.insert(name.to_string(), parse(def, text.trim())?);
    }
    Ok(params)
}

fn unknown(space: &StudySpec, name: &str) -> anyhow::Error {
    let closest = did_you_mean(name, space.parameters.iter().map(|d| d.name.as_str()))
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    anyhow!(
        "--set {name}: {} declares no such parameter{closest}",
        space.origin
    )
}

/// Parse `text` as a value of `def`'s domain.
fn parse(def: &ParamDef, text: &str) -> Result<Value> {
    let name = &def.name;
    match &def.kind {
        ParamKind::Int { low, high, .. } => {
            let v: i64 = text
                .parse()
                .map_err(|_| anyhow!("--set {name}={text}: expected a whole number"))?;
            if v < *low || v > *high {
                bail!("--set {name}={v}: outside the parameter's range [{low}, {high}]");
            }
            Ok(Value::Int(v))
        }
        ParamKind::Float { low, high, .. } => {
            let v: f64 = text
                .parse()
                .map_err(|_| anyhow!("--set {name}={text}: expected a number"))?;
            if v < *low || v > *high {
                bail!("--set {name}={v}: outside the parameter's range [{low}, {high}]");
            }
            Ok(Value::Float(v))
        }
        ParamKind::Bool => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => bail!("--set {name}={text}: expected true or false"),
        },
        ParamKind::Choice { values } => values
            .iter()
            .find(|v| v.to_string() == text)
            .cloned()
            .ok_or_else(|| {
                let list: Vec<String> = values.iter().map(Value::to_string).collect();
                anyhow!(
                    "--set {name}={text}: not one of the choices [{}]",
                    list.join(", ")
                )
            }),
        ParamKind::Numa { .. } => Ok(Value::Str(text.to_string())),
        ParamKind::Const { .. } | ParamKind::Derived { .. } => {
            bail!("--set {name}: the parameter is constant or derived; change it in the space file")
        }
    }
}
