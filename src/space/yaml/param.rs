//! `parameters:` entries → typed [`ParamDef`]s, refusing inconsistent definitions.

use super::raw::{RawCandidates, RawParam};
use crate::record::Value;
use crate::space::error::Pos;
use crate::space::{NumaCandidates, ParamDef, ParamKind, Target};
use crate::util::did_you_mean;
use serde_saphyr::Spanned;

/// A parameter error: where, and what.
pub(crate) type ParamError = (Pos, String);

const KINDS: [&str; 7] = ["int", "float", "choice", "bool", "const", "derived", "numa"];

/// Converts one entry named `name` (declared at `at`).
pub(crate) fn convert(name: &str, at: Pos, raw: &RawParam) -> Result<ParamDef, ParamError> {
    let kind_at = Pos::of(&raw.kind.referenced);
    let kind = match raw.kind.value.as_str() {
        "int" => int_kind(name, at, raw)?,
        "float" => float_kind(name, at, raw)?,
        "choice" => {
            let values = raw
                .values
                .as_ref()
                .ok_or_else(|| missing(name, at, "values", "choice"))?;
            if values.value.is_empty() {
                return Err((
                    Pos::of(&values.referenced),
                    format!("parameter `{name}`: `values` is empty; list at least one choice"),
                ));
            }
            ParamKind::Choice {
                values: values.value.clone(),
            }
        }
        "bool" => ParamKind::Bool,
        "const" => ParamKind::Const {
            value: raw
                .value
                .clone()
                .ok_or_else(|| missing(name, at, "value", "const"))?,
        },
        "derived" => ParamKind::Derived {
            expr: raw
                .expr
                .as_ref()
                .ok_or_else(|| missing(name, at, "expr", "derived"))?
                .value
                .clone(),
        },
        "numa" => ParamKind::Numa {
            candidates: numa_candidates(name, raw)?,
        },
        other => {
            let hint = did_you_mean(other, &KINDS)
                .map(|k| format!("; did you mean `{k}`?"))
                .unwrap_or_default();
            return Err((
                kind_at,
                format!(
                    "parameter `{name}`: unknown type `{other}` (expected one of {}){hint}",
                    KINDS.join(", ")
                ),
            ));
        }
    };
    refuse_foreign_keys(name, at, raw)?;
    let def = ParamDef {
        name: name.to_string(),
        when: raw.when.as_ref().map(|w| w.value.clone()),
        target: target(name, at, raw)?,
        default: raw.default.as_ref().map(|d| d.value.clone()),
        kind,
    };
    check_default(&def, raw)?;
    Ok(def)
}

fn missing(name: &str, at: Pos, key: &str, kind: &str) -> ParamError {
    (
        at,
        format!("parameter `{name}`: type `{kind}` needs `{key}:`"),
    )
}

fn number(name: &str, key: &str, v: &Spanned<Value>) -> Result<f64, ParamError> {
    v.value
        .as_f64()
        .filter(|_| !matches!(v.value, Value::Bool(_)))
        .ok_or_else(|| {
            (
                Pos::of(&v.referenced),
                format!(
                    "parameter `{name}`: `{key}` must be a number, got `{}`",
                    v.value
                ),
            )
        })
}

fn integer(name: &str, key: &str, v: &Spanned<Value>) -> Result<i64, ParamError> {
    match v.value {
        Value::Int(i) => Ok(i),
        _ => Err((
            Pos::of(&v.referenced),
            format!(
                "parameter `{name}`: `{key}` of an int parameter must be a whole number, got `{}`",
                v.value
            ),
        )),
    }
}

type Bounds<'a> = (&'a Spanned<Value>, &'a Spanned<Value>);

fn bounds<'a>(
    name: &str,
    at: Pos,
    raw: &'a RawParam,
    kind: &str,
) -> Result<Bounds<'a>, ParamError> {
    let low = raw
        .low
        .as_ref()
        .ok_or_else(|| missing(name, at, "low", kind))?;
    let high = raw
        .high
        .as_ref()
        .ok_or_else(|| missing(name, at, "high", kind))?;
    Ok((low, high))
}

fn check_range(
    name: &str,
    raw: &RawParam,
    low: f64,
    high: f64,
    log: bool,
    (lo, hi): Bounds,
) -> Result<(), ParamError> {
    if low > high {
        return Err((
            Pos::of(&hi.referenced),
            format!(
                "parameter `{name}`: low ({}) is greater than high ({}); swap them",
                lo.value, hi.value
            ),
        ));
    }
    if log && low <= 0.0 {
        return Err((
            Pos::of(&lo.referenced),
            format!(
                "parameter `{name}`: `log: true` needs low > 0, got {}; raise low or drop `log`",
                lo.value
            ),
        ));
    }
    if let Some(step) = &raw.step {
        if number(name, "step", step)? <= 0.0 {
            return Err((
                Pos::of(&step.referenced),
                format!("parameter `{name}`: step must be > 0"),
            ));
        }
    }
    Ok(())
}

fn int_kind(name: &str, at: Pos, raw: &RawParam) -> Result<ParamKind, ParamError> {
    let b = bounds(name, at, raw, "int")?;
    let (low, high) = (integer(name, "low", b.0)?, integer(name, "high", b.1)?);
    let log = raw.log.unwrap_or(false);
    check_range(name, raw, low as f64, high as f64, log, b)?;
    let step = raw
        .step
        .as_ref()
        .map(|s| integer(name, "step", s))
        .transpose()?;
    Ok(ParamKind::Int {
        low,
        high,
        step,
        log,
    })
}

fn float_kind(name: &str, at: Pos, raw: &RawParam) -> Result<ParamKind, ParamError> {
    let b = bounds(name, at, raw, "float")?;
    let (low, high) = (number(name, "low", b.0)?, number(name, "high", b.1)?);
    let log = raw.log.unwrap_or(false);
    check_range(name, raw, low, high, log, b)?;
    let step = raw
        .step
        .as_ref()
        .map(|s| number(name, "step", s))
        .transpose()?;
    Ok(ParamKind::Float {
        low,
        high,
        step,
        log,
    })
}

fn numa_candidates(name: &str, raw: &RawParam) -> Result<NumaCandidates, ParamError> {
    match raw.candidates.as_ref().map(|c| (&c.value, Pos::of(&c.referenced))) {
        None => Ok(NumaCandidates::Auto),
        Some((RawCandidates::Word(w), _)) if w == "auto" => Ok(NumaCandidates::Auto),
        Some((RawCandidates::List(list), pos)) if list.is_empty() => Err((
            pos,
            format!("parameter `{name}`: `candidates` is empty; use `auto` or list numactl arguments"),
        )),
        Some((RawCandidates::List(list), _)) => Ok(NumaCandidates::List(list.clone())),
        Some((RawCandidates::Word(w), pos)) => Err((
            pos,
            format!("parameter `{name}`: `candidates` must be `auto` or a list like [\"none\", \"-N 0 -m 0\"], got `{w}`"),
        )),
    }
}

/// Keys that belong to other parameter types are mistakes, not silently ignored.
fn refuse_foreign_keys(name: &str, at: Pos, raw: &RawParam) -> Result<(), ParamError> {
    let kind = raw.kind.value.as_str();
    let numeric = matches!(kind, "int" | "float");
    let present = [
        ("low", raw.low.is_some(), numeric),
        ("high", raw.high.is_some(), numeric),
        ("step", raw.step.is_some(), numeric),
        ("log", raw.log.is_some(), numeric),
        ("values", raw.values.is_some(), kind == "choice"),
        ("value", raw.value.is_some(), kind == "const"),
        ("expr", raw.expr.is_some(), kind == "derived"),
        ("candidates", raw.candidates.is_some(), kind == "numa"),
    ];
    match present.iter().find(|(_, set, allowed)| *set && !allowed) {
        Some((key, _, _)) => Err((
            at,
            format!("parameter `{name}`: `{key}` does not apply to type `{kind}`"),
        )),
        None => Ok(()),
    }
}

fn target(name: &str, at: Pos, raw: &RawParam) -> Result<Option<Target>, ParamError> {
    let mut targets = Vec::new();
    if let Some(f) = &raw.flag {
        targets.push(Target::Flag(f.clone()));
    }
    if let Some(e) = &raw.env {
        targets.push(Target::Env(e.clone()));
    }
    if let Some(p) = &raw.path {
        targets.push(Target::ConfigPath(p.clone()));
    }
    if raw.internal == Some(true) {
        targets.push(Target::None);
    }
    if targets.len() > 1 {
        return Err((
            at,
            format!(
                "parameter `{name}`: give at most one of `flag`, `env`, `path`, `internal: true`"
            ),
        ));
    }
    Ok(targets.pop())
}

fn check_default(def: &ParamDef, raw: &RawParam) -> Result<(), ParamError> {
    let Some(d) = &raw.default else { return Ok(()) };
    let fits = match &def.kind {
        ParamKind::Const { .. } | ParamKind::Derived { .. } => false,
        ParamKind::Numa {
            candidates: NumaCandidates::Auto,
        } => matches!(d.value, Value::Str(_)),
        kind => kind.to_unit(&d.value).is_some(),
    };
    if fits {
        return Ok(());
    }
    Err((
        Pos::of(&d.referenced),
        format!(
            "parameter `{}`: default `{}` is not in its domain (the default is the engine's own \
             value for the baseline trial)",
            def.name, d.value
        ),
    ))
}
