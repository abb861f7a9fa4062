//! The objective: maximise or minimise a metric subject to SLOs.

pub use crate::probe::loadsearch::{LoadKnob, LoadSearchSpec};
use crate::record::{metric, Slo, SloOp};
use serde::{Deserialize, Serialize};

/// Optimisation direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Higher is better.
    #[default]
    Maximize,
    /// Lower is better.
    Minimize,
}

/// What a trial is scored on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectiveSpec {
    /// Direction.
    #[serde(default)]
    pub direction: Direction,
    /// A metric name (`output_throughput`, ...) or an expression of metrics.
    pub metric: String,
    /// SLOs every feasible trial must meet, as written (see [`ObjectiveSpec::slos`] for the
    /// implicit error-rate bound).
    #[serde(default)]
    pub subject_to: Vec<Slo>,
    /// Optional second objective for the Pareto view.
    #[serde(default)]
    pub secondary: Option<SecondaryObjective>,
    /// Optional per-trial load search; its result replaces `metric` as the trial's value.
    #[serde(default)]
    pub load_search: Option<LoadSearchSpec>,
    /// Score this stage of a staged load (from 0, as `stage` in bench's JSON): `metric` and
    /// every SLO are read from its metrics instead of the whole run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<u32>,
}

impl ObjectiveSpec {
    /// The SLOs every feasible trial must meet: `subject_to`, plus `error_rate<=0%` (any
    /// failed request makes a trial infeasible) unless `subject_to` bounds `error_rate` itself.
    pub fn slos(&self) -> Vec<Slo> {
        let mut slos = self.subject_to.clone();
        if !slos.iter().any(|slo| slo.metric == metric::ERROR_RATE) {
            slos.push(Slo {
                metric: metric::ERROR_RATE.into(),
                stat: None,
                op: SloOp::Le,
                threshold: 0.0,
            });
        }
        slos
    }

    /// True when `metric` reads the trial's `devices` (e.g. `output_throughput / devices`):
    /// the objective is per accelerator.
    pub fn per_device(&self) -> bool {
        self.metric
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|word| word == metric::DEVICES)
    }
}

/// A second objective, shown next to the first in a Pareto view (it does not drive the search).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecondaryObjective {
    /// Direction.
    #[serde(default)]
    pub direction: Direction,
    /// A metric name or an expression of metrics, e.g. `p99_ttft_ms`.
    pub metric: String,
}

impl Direction {
    /// `value` oriented so that higher is better.
    pub(crate) fn orient(self, value: f64) -> f64 {
        match self {
            Direction::Maximize => value,
            Direction::Minimize => -value,
        }
    }

    /// The lowercase word, as written in a space.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Maximize => "maximize",
            Direction::Minimize => "minimize",
        }
    }
}
