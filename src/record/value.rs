//! Parameter values and parameter sets, as stored in trial records.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// One parameter value. Untagged so YAML/JSON scalars map naturally.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// `true` / `false`.
    Bool(bool),
    /// Whole number.
    Int(i64),
    /// Real number.
    Float(f64),
    /// Any text (choice labels, numactl bindings, paths).
    Str(String),
}

/// A configuration: parameter name → value. Ordered so CSV columns are stable.
pub type Params = BTreeMap<String, Value>;

/// A configuration from `(name, value)` pairs.
pub fn params_of(pairs: &[(&str, Value)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

impl Value {
    /// The value as a float when it is numeric (bools count as 0/1).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Str(_) => None,
        }
    }

    /// The value as an integer when it is a whole number.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Float(f) if f.fract() == 0.0 => Some(*f as i64),
            _ => None,
        }
    }

    /// The value as a bool when it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untagged_round_trip_keeps_kinds() {
        let text = r#"{"a":true,"b":3,"c":0.5,"d":"x"}"#;
        let p: Params = serde_json::from_str(text).unwrap();
        assert_eq!(p["a"], Value::Bool(true));
        assert_eq!(p["b"], Value::Int(3));
        assert_eq!(p["c"], Value::Float(0.5));
        assert_eq!(p["d"], Value::Str("x".into()));
        assert_eq!(serde_json::to_string(&p).unwrap(), text);
    }

    #[test]
    fn numeric_views() {
        assert_eq!(Value::Float(4.0).as_i64(), Some(4));
        assert_eq!(Value::Float(4.5).as_i64(), None);
        assert_eq!(Value::Bool(true).as_f64(), Some(1.0));
        assert_eq!(Value::Str("a".into()).as_f64(), None);
    }
}
