//! What model-based samplers learn from: each informative trial as a point of the unit cube
//! with a rank that puts feasible trials first, SLO-breaking ones next, start-up failures last.

use super::propose::Dims;
use crate::study::{Outcome, TrialRecord};
use std::cmp::Ordering;

/// How a trial ended, for learning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tier {
    /// The config could not start (oom, invalid-config, crash, timeout): a region to avoid.
    StartupFailure,
    /// It ran but broke an SLO (infeasible or pruned): informative, yet worse than any feasible.
    SloBroken,
    /// It ran and met every SLO.
    Feasible,
}

/// One informative trial.
#[derive(Clone, Debug)]
pub(crate) struct Observation {
    /// Unit-cube coordinates (NaN for inactive parameters).
    pub x: Vec<f64>,
    /// How it ended.
    pub tier: Tier,
    /// Score, higher is better; `-inf` when there is none.
    pub score: f64,
}

impl Observation {
    /// Best-first order: tier, then score.
    pub(crate) fn better_first(a: &Observation, b: &Observation) -> Ordering {
        b.tier
            .cmp(&a.tier)
            .then(b.score.partial_cmp(&a.score).unwrap_or(Ordering::Equal))
    }
}

/// The informative trials, in trial order. Rejected configs and failures unrelated to the config
/// (port busy, unknown) teach nothing about the landscape and are left out.
pub(crate) fn observations(dims: &Dims, trials: &[TrialRecord]) -> Vec<Observation> {
    trials
        .iter()
        .filter_map(|t| {
            let tier = match t.outcome {
                Outcome::Feasible => Tier::Feasible,
                Outcome::Infeasible | Outcome::Pruned { .. } => Tier::SloBroken,
                Outcome::Failed { .. } if t.is_startup_failure() => Tier::StartupFailure,
                Outcome::Failed { .. } | Outcome::Rejected { .. } => return None,
            };
            let score = t
                .score
                .filter(|s| s.is_finite())
                .unwrap_or(f64::NEG_INFINITY);
            Some(Observation {
                x: dims.encode(&t.params),
                tier,
                score,
            })
        })
        .collect()
}
