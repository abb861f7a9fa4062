//! Mapping between a parameter's domain and the unit interval, the common ground of all samplers.
//!
//! `from_unit(u)` turns `u ∈ [0, 1]` into a value of the domain (uniform in the value, or in its
//! log for `log: true`, snapped to `step`); `to_unit(v)` is its inverse (the centre of `v`'s cell).

use super::param::{NumaCandidates, ParamKind};
use crate::record::Value;

impl ParamKind {
    /// The value at position `u ∈ [0, 1]` of the domain; `None` for kinds a sampler does not
    /// choose (const, derived, numa with unresolved `auto` candidates).
    pub fn from_unit(&self, u: f64) -> Option<Value> {
        let u = u.clamp(0.0, 1.0);
        match self {
            ParamKind::Int {
                low,
                high,
                step,
                log,
            } => {
                let (lo, hi) = (*low as f64, *high as f64);
                let x = if *log {
                    (lo.ln() + u * ((hi + 1.0).ln() - lo.ln())).exp().floor()
                } else {
                    (lo + u * (hi - lo + 1.0)).floor()
                };
                Some(Value::Int(snap_int(x as i64, *low, *high, *step)))
            }
            ParamKind::Float {
                low,
                high,
                step,
                log,
            } => {
                let x = if *log {
                    (low.ln() + u * (high.ln() - low.ln())).exp()
                } else {
                    low + u * (high - low)
                };
                Some(Value::Float(snap_float(x, *low, *high, *step)))
            }
            ParamKind::Choice { values } => pick(values, u).cloned(),
            ParamKind::Bool => Some(Value::Bool(u >= 0.5)),
            ParamKind::Numa {
                candidates: NumaCandidates::List(list),
            } => pick(list, u).map(|s| Value::Str(s.clone())),
            ParamKind::Numa {
                candidates: NumaCandidates::Auto,
            }
            | ParamKind::Const { .. }
            | ParamKind::Derived { .. } => None,
        }
    }

    /// Position of `value` in `[0, 1]` (centre of its cell); `None` when it is not in the domain.
    pub(crate) fn to_unit(&self, value: &Value) -> Option<f64> {
        match self {
            ParamKind::Int { low, high, log, .. } => {
                let v = value.as_i64()?;
                if v < *low || v > *high {
                    return None;
                }
                let (lo, hi, x) = (*low as f64, *high as f64, v as f64);
                Some(if *log {
                    ((x + 0.5).ln() - lo.ln()) / ((hi + 1.0).ln() - lo.ln())
                } else {
                    (x - lo + 0.5) / (hi - lo + 1.0)
                })
            }
            ParamKind::Float { low, high, log, .. } => {
                let x = value.as_f64()?;
                if x < *low || x > *high {
                    return None;
                }
                if high == low {
                    return Some(0.5);
                }
                Some(if *log {
                    (x.ln() - low.ln()) / (high.ln() - low.ln())
                } else {
                    (x - low) / (high - low)
                })
            }
            ParamKind::Choice { values } => {
                cell_centre(values.iter().position(|c| c == value)?, values.len())
            }
            ParamKind::Bool => Some(if value.as_bool()? { 0.75 } else { 0.25 }),
            ParamKind::Numa {
                candidates: NumaCandidates::List(list),
            } => {
                let Value::Str(s) = value else { return None };
                cell_centre(list.iter().position(|c| c == s)?, list.len())
            }
            _ => None,
        }
    }
}

fn pick<T>(items: &[T], u: f64) -> Option<&T> {
    let n = items.len();
    items.get(((u * n as f64) as usize).min(n.saturating_sub(1)))
}

fn cell_centre(index: usize, n: usize) -> Option<f64> {
    Some((index as f64 + 0.5) / n as f64)
}

fn snap_int(x: i64, low: i64, high: i64, step: Option<i64>) -> i64 {
    let x = x.clamp(low, high);
    match step {
        Some(s) if s > 1 => {
            let k = ((x - low) as f64 / s as f64).round() as i64;
            let top = (high - low) / s;
            low + k.clamp(0, top) * s
        }
        _ => x,
    }
}

fn snap_float(x: f64, low: f64, high: f64, step: Option<f64>) -> f64 {
    let x = x.clamp(low, high);
    match step {
        Some(s) if s > 0.0 => {
            let top = ((high - low) / s + 1e-9).floor();
            let k = ((x - low) / s).round().clamp(0.0, top);
            // Round to the step's decimals so 0.1-steps give 0.3, not 0.30000000000000004,
            // and never step past `high` through rounding.
            let decimals = (-s.log10().floor()).clamp(0.0, 12.0) as i32;
            let scale = 10f64.powi(decimals);
            (((low + k * s) * scale).round() / scale).clamp(low, high)
        }
        _ => x,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(low: i64, high: i64, step: Option<i64>, log: bool) -> ParamKind {
        ParamKind::Int {
            low,
            high,
            step,
            log,
        }
    }

    #[test]
    fn int_covers_the_range_evenly_and_inverts() {
        let k = int(1, 4, None, false);
        let got: Vec<_> = [0.0, 0.3, 0.6, 0.99, 1.0]
            .iter()
            .map(|u| k.from_unit(*u).unwrap())
            .collect();
        assert_eq!(got, [1, 2, 3, 4, 4].map(Value::Int));
        for v in 1..=4 {
            let u = k.to_unit(&Value::Int(v)).unwrap();
            assert_eq!(k.from_unit(u), Some(Value::Int(v)));
        }
        assert_eq!(k.to_unit(&Value::Int(5)), None);
    }

    #[test]
    fn int_step_and_log_stay_on_grid() {
        let k = int(32, 256, Some(32), false);
        for i in 0..=100 {
            let v = k.from_unit(i as f64 / 100.0).unwrap().as_i64().unwrap();
            assert!((32..=256).contains(&v) && v % 32 == 0, "{v}");
        }
        let l = int(1, 1024, None, true);
        let mid = l.from_unit(0.5).unwrap().as_i64().unwrap();
        assert!((16..=64).contains(&mid), "log midpoint {mid}");
        assert_eq!(l.from_unit(1.0), Some(Value::Int(1024)));
    }

    #[test]
    fn float_step_snaps_cleanly() {
        let k = ParamKind::Float {
            low: 0.5,
            high: 0.95,
            step: Some(0.05),
            log: false,
        };
        for i in 0..=50 {
            let v = k.from_unit(i as f64 / 50.0).unwrap().as_f64().unwrap();
            assert!((0.5..=0.95 + 1e-12).contains(&v));
            assert!(((v / 0.05) - (v / 0.05).round()).abs() < 1e-9);
            assert!(
                k.to_unit(&Value::Float(v)).is_some(),
                "{v} must stay in the domain"
            );
        }
        assert_eq!(k.from_unit(1.0), Some(Value::Float(0.95)));
    }

    #[test]
    fn choices_bools_and_numa_lists() {
        let c = ParamKind::Choice {
            values: vec![Value::Int(16), Value::Int(32), Value::Str("x".into())],
        };
        assert_eq!(c.from_unit(0.0), Some(Value::Int(16)));
        assert_eq!(c.from_unit(1.0), Some(Value::Str("x".into())));
        assert_eq!(
            c.from_unit(c.to_unit(&Value::Int(32)).unwrap()),
            Some(Value::Int(32))
        );
        assert_eq!(ParamKind::Bool.from_unit(0.2), Some(Value::Bool(false)));
        let n = ParamKind::Numa {
            candidates: NumaCandidates::List(vec!["none".into(), "-N 0 -m 0".into()]),
        };
        assert_eq!(n.from_unit(0.9), Some(Value::Str("-N 0 -m 0".into())));
        let auto = ParamKind::Numa {
            candidates: NumaCandidates::Auto,
        };
        assert_eq!(auto.from_unit(0.5), None);
    }
}
