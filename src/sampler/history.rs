//! What model-based samplers learn from: each informative trial as a point of the unit cube
//! with a rank that puts feasible trials first (by score), SLO-breaking ones next (closest to
//! meeting their SLOs first), configs that could not serve (failed to start or crashed) last.

use super::propose::Dims;
use crate::record::{Outcome, TrialRecord, Violation};
use std::cmp::Ordering;

/// How a trial ended, for learning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tier {
    /// The config could not serve: it did not start (oom, invalid-config, crash, timeout),
    /// crashed while serving or logged a fatal error. A region to avoid.
    ConfigFailure,
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
    /// How far the trial missed its SLOs (see [`shortfall`]); 0 when it met them.
    pub shortfall: f64,
    /// Position of the trial in the list it was observed from.
    pub index: usize,
}

impl Observation {
    /// Best-first order: tier, then (among SLO-breaking trials) the smaller shortfall, then
    /// score. A high-throughput config far over its latency bounds thus ranks below one that
    /// nearly meets them, which steers the search towards the feasible region.
    pub(crate) fn better_first(a: &Observation, b: &Observation) -> Ordering {
        b.tier
            .cmp(&a.tier)
            .then(a.shortfall.total_cmp(&b.shortfall))
            .then(b.score.partial_cmp(&a.score).unwrap_or(Ordering::Equal))
    }
}

/// How far `trial` misses its SLOs: the sum of its violations' shortfalls (see
/// [`Violation::shortfall`]); a violation without a measured SLO counts as infinitely far.
pub(crate) fn shortfall(trial: &TrialRecord) -> f64 {
    trial.violations.iter().map(Violation::shortfall).sum()
}

/// The informative trials, in trial order. Rejected configs and failures unrelated to the config
/// (port busy, unknown) teach nothing about the landscape and are left out.
pub(crate) fn observations(dims: &Dims, trials: &[TrialRecord]) -> Vec<Observation> {
    trials
        .iter()
        .enumerate()
        .filter_map(|(index, t)| {
            let fatal = t.server.as_ref().and_then(|s| s.stopped);
            let tier = match t.outcome {
                Outcome::Feasible => Tier::Feasible,
                // Stopped because the server logged a fatal error: as good as a crash.
                Outcome::Pruned { .. } if fatal.is_some_and(|s| s.is_fatal()) => {
                    Tier::ConfigFailure
                }
                Outcome::Infeasible | Outcome::Pruned { .. } => Tier::SloBroken,
                Outcome::Failed { .. } | Outcome::Crashed { .. } if t.is_config_failure() => {
                    Tier::ConfigFailure
                }
                Outcome::Failed { .. } | Outcome::Crashed { .. } | Outcome::Rejected { .. } => {
                    return None
                }
            };
            let score = t
                .score
                .filter(|s| s.is_finite())
                .unwrap_or(f64::NEG_INFINITY);
            let shortfall = if tier == Tier::SloBroken {
                shortfall(t)
            } else {
                0.0
            };
            Some(Observation {
                x: dims.encode(&t.params),
                tier,
                score,
                shortfall,
                index,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::testkit::record;

    fn broken(score: f64, violation: Violation) -> TrialRecord {
        let mut t = record(Default::default(), Outcome::Infeasible, Some(score));
        t.violations = vec![violation];
        t
    }

    fn slo(text: &str, measured: Option<f64>) -> Violation {
        Violation::Slo {
            slo: text.parse().unwrap(),
            measured,
        }
    }

    #[test]
    fn shortfall_is_the_log_ratio_of_the_miss() {
        let near = broken(1.0, slo("tpot:p99<=50ms", Some(52.5)));
        assert!((shortfall(&near) - 1.05f64.ln()).abs() < 1e-9);
        let unmeasured = broken(1.0, slo("ttft:p99<=2000ms", None));
        assert_eq!(shortfall(&unmeasured), f64::INFINITY);
        let pending = broken(1.0, Violation::Pending);
        assert_eq!(shortfall(&pending), f64::INFINITY);
        let met = broken(1.0, slo("tpot:p99<=50ms", Some(40.0)));
        assert_eq!(shortfall(&met), 0.0);
    }

    #[test]
    fn slo_breaking_trials_closer_to_their_bounds_rank_first() {
        let far_but_fast = Observation {
            x: vec![],
            tier: Tier::SloBroken,
            score: 900.0,
            shortfall: shortfall(&broken(900.0, slo("tpot:p99<=50ms", Some(150.0)))),
            index: 0,
        };
        let near_but_slow = Observation {
            score: 400.0,
            shortfall: shortfall(&broken(400.0, slo("tpot:p99<=50ms", Some(51.0)))),
            ..far_but_fast.clone()
        };
        let feasible = Observation {
            tier: Tier::Feasible,
            score: 100.0,
            shortfall: 0.0,
            ..far_but_fast.clone()
        };
        let mut ranked = [far_but_fast, near_but_slow, feasible];
        ranked.sort_by(Observation::better_first);
        let scores: Vec<f64> = ranked.iter().map(|o| o.score).collect();
        assert_eq!(scores, [100.0, 400.0, 900.0]);
    }

    #[test]
    fn a_fatal_server_stop_counts_as_a_config_failure_and_thrashing_as_slo_broken() {
        use crate::record::{ServerSignal, ServerStats};
        let space = crate::sampler::testkit::FnSpaceBuilder::new()
            .int("n", 1, 8, None, false)
            .build();
        let dims = Dims::of(&space);
        let stopped = |signal| TrialRecord {
            server: Some(ServerStats {
                stopped: Some(signal),
                ..ServerStats::default()
            }),
            ..record(
                Default::default(),
                Outcome::Pruned {
                    reason: "server signal".into(),
                },
                None,
            )
        };
        let seen = observations(
            &dims,
            &[
                stopped(ServerSignal::FatalLog),
                stopped(ServerSignal::Thrashing),
            ],
        );
        let tiers: Vec<Tier> = seen.iter().map(|o| o.tier).collect();
        assert_eq!(tiers, [Tier::ConfigFailure, Tier::SloBroken]);
    }
}
