//! The objective: maximise or minimise a metric subject to SLOs.

pub use crate::probe::loadsearch::{LoadKnob, LoadSearchSpec};
use crate::record::Slo;
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
    /// SLOs every feasible trial must meet.
    #[serde(default)]
    pub subject_to: Vec<Slo>,
    /// Optional second objective for the Pareto view.
    #[serde(default)]
    pub secondary: Option<SecondaryObjective>,
    /// Optional per-trial load search; its result replaces `metric` as the trial's value.
    #[serde(default)]
    pub load_search: Option<LoadSearchSpec>,
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
    pub fn orient(self, value: f64) -> f64 {
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
