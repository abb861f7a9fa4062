//! The percentile pruner: a trial whose objective, part-way through its probe, is behind most
//! other trials at the same checkpoint stops there (as Optuna's percentile pruner compares
//! intermediate values at the same step). The planner hands each trial its bars; the probe (or
//! the benchmark's virtual probe) compares as it goes.

use crate::record::{Intermediate, Outcome, TrialRecord};
use crate::space::objective::Direction;
use crate::util::stats::quantile;

/// Shares of the probe's measured requests at which a trial is compared.
pub(crate) const CHECKPOINTS: [f64; 3] = [0.25, 0.5, 0.75];

/// When a trial is behind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PercentilePruner {
    /// A trial below this percentile of the others at a checkpoint is pruned (50: the median).
    pub percentile: f64,
    /// Others needed at a checkpoint before it compares.
    pub startup_trials: usize,
    /// Which way the objective is better.
    pub direction: Direction,
}

/// What a trial must reach at a checkpoint to go on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Bar {
    /// The checkpoint: a share of the probe's measured requests.
    pub at: f64,
    /// The objective's value there of the trial at the pruner's percentile.
    pub value: f64,
}

impl PercentilePruner {
    /// The bars at each checkpoint from the feasible trials of `records` that measured one.
    pub fn bars(&self, records: &[TrialRecord]) -> Vec<Bar> {
        CHECKPOINTS
            .iter()
            .filter_map(|&at| {
                let oriented: Vec<f64> = records
                    .iter()
                    .filter(|r| matches!(r.outcome, Outcome::Feasible))
                    .filter_map(|r| value_at(&r.intermediate, at))
                    .map(|v| self.direction.orient(v))
                    .collect();
                (oriented.len() >= self.startup_trials.max(1)).then(|| Bar {
                    at,
                    value: self
                        .direction
                        .orient(quantile(&oriented, 1.0 - self.percentile / 100.0)),
                })
            })
            .collect()
    }

    /// The bar `so_far` falls behind, if any: the first checkpoint reached where it is worse.
    pub fn behind(&self, bars: &[Bar], so_far: &[Intermediate]) -> Option<Bar> {
        bars.iter().copied().find(|bar| {
            value_at(so_far, bar.at)
                .is_some_and(|v| self.direction.orient(v) < self.direction.orient(bar.value))
        })
    }
}

fn value_at(values: &[Intermediate], at: f64) -> Option<f64> {
    values
        .iter()
        .find(|i| (i.at - at).abs() < 1e-9)
        .map(|i| i.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(values: [f64; 3], outcome: Outcome) -> TrialRecord {
        TrialRecord {
            intermediate: CHECKPOINTS
                .iter()
                .zip(values)
                .map(|(&at, value)| Intermediate { at, value })
                .collect(),
            ..TrialRecord::new(0, Default::default(), outcome)
        }
    }

    #[test]
    fn a_trial_below_the_median_of_feasible_trials_at_a_checkpoint_is_behind() {
        let pruner = PercentilePruner {
            percentile: 50.0,
            startup_trials: 3,
            direction: Direction::Maximize,
        };
        let mut records = vec![
            trial([10.0, 20.0, 30.0], Outcome::Feasible),
            trial([12.0, 22.0, 32.0], Outcome::Feasible),
        ];
        assert!(pruner.bars(&records).is_empty(), "too few to compare");
        records.push(trial([14.0, 24.0, 34.0], Outcome::Feasible));
        records.push(trial([99.0, 99.0, 99.0], Outcome::Infeasible));
        let bars = pruner.bars(&records);
        assert_eq!(
            bars[0],
            Bar {
                at: 0.25,
                value: 12.0
            },
            "infeasible trials do not count"
        );
        let at = |values: &[f64]| -> Vec<Intermediate> {
            CHECKPOINTS
                .iter()
                .zip(values)
                .map(|(&at, &value)| Intermediate { at, value })
                .collect()
        };
        assert_eq!(pruner.behind(&bars, &at(&[13.0, 23.0])), None);
        assert_eq!(
            pruner.behind(&bars, &at(&[13.0, 21.0])).map(|b| b.at),
            Some(0.5)
        );
        let latency = PercentilePruner {
            direction: Direction::Minimize,
            ..pruner
        };
        let bars = latency.bars(&records);
        assert_eq!(
            latency.behind(&bars, &at(&[13.0])).map(|b| b.at),
            Some(0.25)
        );
        assert_eq!(latency.behind(&bars, &at(&[11.0])), None);
    }
}
