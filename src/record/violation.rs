//! Why a probed trial does not count as meeting its SLOs, typed so that samplers read the
//! broken SLO and its measured value instead of parsing text.

use super::Slo;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One reason a probed trial is not feasible. Displayed as the text reports and CSV show,
/// e.g. `ttft:p99<=2000ms (was 3120ms)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Violation {
    /// An SLO the run broke; `measured` is `None` when its metric was not measured.
    Slo {
        /// The SLO as written in the space.
        slo: Slo,
        /// The run's value of the SLO's metric, in the metric's unit.
        measured: Option<f64>,
    },
    /// The objective could not be computed from the run's metrics.
    Objective {
        /// Why.
        message: String,
    },
    /// No measured request completed.
    NothingCompleted,
    /// The probe was stopped early because an SLO was certainly broken.
    Pruned {
        /// The pruning hook's explanation.
        reason: String,
    },
    /// A stand-in for a proposal still running (batch proposals); never journaled.
    Pending,
}

impl Slo {
    /// How a run with `metrics` breaks this SLO: its metric out of bounds or not measured;
    /// `None` when it holds.
    pub fn violation(&self, metrics: &super::MetricMap) -> Option<Violation> {
        let measured = metrics.get(&self.metric_key()).copied();
        match measured {
            Some(v) if self.holds(v) => None,
            _ => Some(Violation::Slo {
                slo: self.clone(),
                measured,
            }),
        }
    }
}

impl Violation {
    /// How far the trial misses this violation's SLO, as `ln(measured / bound)` oriented so a
    /// miss is positive (0 when it holds); infinitely far when there is no measured SLO.
    pub(crate) fn shortfall(&self) -> f64 {
        match self {
            Violation::Slo {
                slo,
                measured: Some(value),
            } => slo.miss(*value),
            _ => f64::INFINITY,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Slo {
                slo,
                measured: Some(value),
            } => write!(f, "{slo} (was {})", slo.format_value(*value)),
            Violation::Slo {
                slo,
                measured: None,
            } => write!(f, "{slo} (not measured)"),
            Violation::Objective { message } => write!(f, "objective: {message}"),
            Violation::NothingCompleted => f.write_str("no request completed"),
            Violation::Pruned { reason } => f.write_str(reason),
            Violation::Pending => f.write_str("pending"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slo(text: &str) -> Slo {
        text.parse().unwrap()
    }

    #[test]
    fn displays_as_reports_show_it() {
        let v = Violation::Slo {
            slo: slo("ttft:p99<=2s"),
            measured: Some(3120.4),
        };
        assert_eq!(v.to_string(), "ttft:p99<=2000ms (was 3120ms)");
        let unmeasured = Violation::Slo {
            slo: slo("error_rate<=1%"),
            measured: None,
        };
        assert_eq!(unmeasured.to_string(), "error_rate<=1% (not measured)");
        assert_eq!(
            Violation::NothingCompleted.to_string(),
            "no request completed"
        );
    }

    #[test]
    fn shortfall_reads_the_typed_measurement() {
        let over = Violation::Slo {
            slo: slo("tpot:p99<=50ms"),
            measured: Some(100.0),
        };
        assert!((over.shortfall() - 2f64.ln()).abs() < 1e-12);
        let under = Violation::Slo {
            slo: slo("output_throughput>=500"),
            measured: Some(250.0),
        };
        assert!((under.shortfall() - 2f64.ln()).abs() < 1e-12);
        assert_eq!(Violation::NothingCompleted.shortfall(), f64::INFINITY);
    }

    #[test]
    fn json_is_tagged() {
        let v = Violation::Slo {
            slo: slo("ttft:p99<=2s"),
            measured: Some(1.5),
        };
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"slo","slo":"ttft:p99<=2000ms","measured":1.5}"#
        );
        assert_eq!(serde_json::from_str::<Violation>(&text).unwrap(), v);
    }
}
