//! The objective: maximise or minimise a metric subject to SLOs.

use crate::probe::Slo;
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
}
