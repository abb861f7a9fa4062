//! Whether a parameter's values fit what a catalogue entry accepts (type, choices), and the
//! entry's default as a value of the parameter.

use super::{Entry, ValueType};
use crate::record::Value;
use crate::space::{ParamDef, ParamKind};

/// Integer ranges up to this wide are checked value by value against a choice list.
const MAX_ENUMERATED: i64 = 10_000;

/// Whether every value of the domain is a bool.
pub(super) fn domain_is_bool(kind: &ParamKind) -> bool {
    match kind {
        ParamKind::Bool => true,
        ParamKind::Const { value } => matches!(value, Value::Bool(_)),
        ParamKind::Choice { values } => values.iter().all(|v| matches!(v, Value::Bool(_))),
        _ => false,
    }
}

/// The domain in words: `an int in [1, 8]`.
pub(super) fn describe_kind(kind: &ParamKind) -> String {
    match kind {
        ParamKind::Int { low, high, .. } => format!("an int in [{low}, {high}]"),
        ParamKind::Float { low, high, .. } => format!("a float in [{low}, {high}]"),
        ParamKind::Choice { values } => format!(
            "a choice of {}",
            values
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ParamKind::Const { value } => format!("the constant {value}"),
        _ => "not a bool".into(),
    }
}

/// The listed values of a parameter (constants and choices); `None` for ranges.
fn listed(kind: &ParamKind) -> Option<Vec<Value>> {
    match kind {
        ParamKind::Choice { values } => Some(values.clone()),
        ParamKind::Const { value } => Some(vec![value.clone()]),
        _ => None,
    }
}

/// Refuses a parameter that can take a value outside `choices`.
pub(super) fn check_choices(def: &ParamDef, key: &str, choices: &[String]) -> Result<(), String> {
    let accepted = choices.join(", ");
    let refuse = |value: String| {
        Err(format!(
            "parameter `{}` can be {value}, which `{key}` does not accept; it accepts {accepted}",
            def.name
        ))
    };
    let accepts = |text: &str| choices.iter().any(|c| c == text);
    match &def.kind {
        ParamKind::Int { low, high, .. } if high - low <= MAX_ENUMERATED => {
            match (*low..=*high).find(|i| !accepts(&i.to_string())) {
                Some(bad) => refuse(bad.to_string()),
                None => Ok(()),
            }
        }
        ParamKind::Int { .. } | ParamKind::Float { .. } => Err(format!(
            "parameter `{}` is {}, but `{key}` accepts only {accepted}; make it a `choice`",
            def.name,
            describe_kind(&def.kind)
        )),
        kind => match listed(kind)
            .unwrap_or_default()
            .into_iter()
            .find(|v| !accepts(&v.to_string()))
        {
            Some(bad) => refuse(format!("`{bad}`")),
            None => Ok(()),
        },
    }
}

/// Refuses a parameter that can take a value that is not of type `ty`.
pub(super) fn check_numeric(def: &ParamDef, key: &str, ty: ValueType) -> Result<(), String> {
    let wanted = if ty == ValueType::Int {
        "a whole number"
    } else {
        "a number"
    };
    let fits = |v: &Value| match (ty, v) {
        (ValueType::Int, Value::Str(s)) => s.parse::<i64>().is_ok(),
        (ValueType::Int, v) => v.as_i64().is_some() && !matches!(v, Value::Bool(_)),
        (_, Value::Str(s)) => s.parse::<f64>().is_ok(),
        (_, v) => v.as_f64().is_some() && !matches!(v, Value::Bool(_)),
    };
    let bad = match &def.kind {
        ParamKind::Float {
            low, high, step, ..
        } if ty == ValueType::Int => {
            let whole = |x: f64| x.fract() == 0.0;
            let on_grid = step.is_some_and(whole) && whole(*low);
            (!on_grid).then(|| describe_kind(&def.kind))
        }
        kind => listed(kind)
            .unwrap_or_default()
            .into_iter()
            .find(|v| !fits(v))
            .map(|v| format!("`{v}`")),
    };
    match bad {
        Some(value) => Err(format!(
            "parameter `{}` can be {value}, but `{key}` takes {wanted}; change its type or values",
            def.name
        )),
        None => Ok(()),
    }
}

/// The catalogue's default for `def` when the space gives none and it lies in the domain.
pub(super) fn default_for(def: &ParamDef, entry: &Entry) -> Option<Value> {
    if def.default.is_some() || matches!(def.kind, ParamKind::Const { .. }) {
        return None;
    }
    let text = entry.default.as_deref()?;
    let value = match &def.kind {
        ParamKind::Int { .. } => Value::Int(text.parse().ok()?),
        ParamKind::Float { .. } => Value::Float(text.parse().ok()?),
        ParamKind::Bool => Value::Bool(match text {
            "True" | "true" | "enabled" => true,
            "False" | "false" | "disabled" => false,
            _ => return None,
        }),
        ParamKind::Choice { values } => values.iter().find(|v| v.to_string() == text)?.clone(),
        _ => return None,
    };
    def.kind.to_unit(&value).is_some().then_some(value)
}
