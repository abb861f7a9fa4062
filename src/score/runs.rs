//! A config's runs: its original trial and the re-validation repeats of it, grouped once for
//! the winner's choice, the re-validation ranking, intensification and the sampler's view.

use crate::record::{TrialRecord, Z95};

/// Relative run-to-run spread of the objective assumed before any config has run twice: a
/// probe of a few dozen requests on a shared host moves by about this much.
pub const UNMEASURED_NOISE: f64 = 0.10;

/// One config's runs: the original trial first, then its repeats in record order.
#[derive(Clone, Debug)]
pub struct ConfigRuns<'a> {
    /// The original trial (search or baseline).
    pub original: &'a TrialRecord,
    /// Every run of the config, the original first.
    pub runs: Vec<&'a TrialRecord>,
}

impl<'a> ConfigRuns<'a> {
    /// Every config of `records`, originals in record order; a repeat whose original is not
    /// among `records` belongs to none.
    pub fn group(records: &'a [TrialRecord]) -> Vec<ConfigRuns<'a>> {
        records
            .iter()
            .filter(|r| r.repeat_of().is_none())
            .map(|original| ConfigRuns::of(original, records))
            .collect()
    }

    /// The runs of `original` among `records`.
    pub fn of(original: &'a TrialRecord, records: &'a [TrialRecord]) -> ConfigRuns<'a> {
        let runs = std::iter::once(original)
            .chain(
                records
                    .iter()
                    .filter(|r| r.repeat_of() == Some(original.id.number)),
            )
            .collect();
        ConfigRuns { original, runs }
    }

    /// The original trial's number.
    pub fn number(&self) -> u32 {
        self.original.id.number
    }

    /// True when every run met the SLOs.
    pub fn all_feasible(&self) -> bool {
        self.runs.iter().all(|r| r.is_feasible())
    }

    /// The runs that met the SLOs with a finite score.
    fn feasible(&self) -> impl Iterator<Item = &&'a TrialRecord> {
        self.runs
            .iter()
            .filter(|r| r.is_feasible() && r.score.is_some_and(f64::is_finite))
    }

    /// Oriented scores of the feasible runs.
    pub fn feasible_scores(&self) -> Vec<f64> {
        self.feasible().filter_map(|r| r.score).collect()
    }

    /// Oriented scores of every run when every run met the SLOs with a score; `None` otherwise
    /// (a config one of whose runs broke an SLO is no candidate).
    pub fn scores_if_all_feasible(&self) -> Option<Vec<f64>> {
        let scores = self.feasible_scores();
        (scores.len() == self.runs.len()).then_some(scores)
    }

    /// Mean oriented score of the feasible runs; `None` without one.
    pub fn mean_score(&self) -> Option<f64> {
        mean(&self.feasible_scores())
    }

    /// The relative standard error of the mean of the feasible runs (a standard deviation of
    /// the log of the score's magnitude, so minimised objectives have one too): from two runs
    /// on, the spread between them, no smaller than the runs' own intervals say (two runs may
    /// agree by chance), over √runs; from one run, that run's own interval; `None` without
    /// either.
    pub fn relative_error(&self) -> Option<f64> {
        let runs: Vec<&&TrialRecord> = self.feasible().collect();
        let within: Vec<f64> = runs.iter().filter_map(|r| r.relative_error()).collect();
        let within = mean(&within.iter().map(|e| e * e).collect::<Vec<f64>>()).map(f64::sqrt);
        if runs.len() < 2 {
            return within;
        }
        let logs: Vec<f64> = runs
            .iter()
            .filter_map(|r| log_magnitude(r.score?))
            .collect();
        let between = log_spread(&logs).map(|(squares, freedom)| (squares / freedom).sqrt());
        let sd = match (between, within) {
            (Some(b), Some(w)) => b.max(w),
            (b, w) => b.or(w)?,
        };
        Some(sd / (runs.len() as f64).sqrt())
    }

    /// The record the sampler learns from for this config: the original with its value and
    /// score at the mean of the feasible runs and its interval that of the mean (see
    /// [`Self::relative_error`]); the original as it is when it ran once or did not meet its
    /// SLOs.
    pub fn as_observed(&self) -> TrialRecord {
        let runs: Vec<&&TrialRecord> = self.feasible().collect();
        if self.runs.len() < 2 || !self.original.is_feasible() || runs.is_empty() {
            return self.original.clone();
        }
        let values: Vec<f64> = runs.iter().filter_map(|r| r.value).collect();
        let value = mean(&values).filter(|_| values.len() == runs.len());
        let half_width = match (value, self.relative_error()) {
            (Some(v), Some(e)) => Some(Z95 * e * v.abs()),
            _ => None,
        };
        TrialRecord {
            value,
            score: self.mean_score(),
            half_width,
            ..self.original.clone()
        }
    }
}

/// The relative run-to-run spread of the objective: the pooled standard deviation of the log
/// of the scores' magnitudes of every config that ran more than once, every run within the
/// SLOs; `None` before one has.
pub fn measured_noise(records: &[TrialRecord]) -> Option<f64> {
    let (mut squares, mut freedom) = (0.0, 0.0);
    for config in ConfigRuns::group(records) {
        let Some(scores) = config.scores_if_all_feasible() else {
            continue;
        };
        let logs: Vec<f64> = scores.into_iter().filter_map(log_magnitude).collect();
        if let Some((s, f)) = log_spread(&logs) {
            squares += s;
            freedom += f;
        }
    }
    (freedom > 0.0).then(|| (squares / freedom).sqrt())
}

/// The log of `score`'s magnitude; `None` at zero.
fn log_magnitude(score: f64) -> Option<f64> {
    (score != 0.0 && score.is_finite()).then(|| score.abs().ln())
}

/// The sum of squared deviations of `logs` from their mean and its degrees of freedom; `None`
/// from fewer than two.
fn log_spread(logs: &[f64]) -> Option<(f64, f64)> {
    let m = mean(logs).filter(|_| logs.len() >= 2)?;
    let squares = logs.iter().map(|l| (l - m).powi(2)).sum();
    Some((squares, (logs.len() - 1) as f64))
}

/// The mean of `values`; `None` when empty.
fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, Params, TrialId, TrialKind};

    fn run(number: u32, kind: TrialKind, value: f64, half_width: Option<f64>) -> TrialRecord {
        TrialRecord {
            value: Some(value),
            score: Some(value),
            half_width,
            ..TrialRecord::of(TrialId { number, kind }, Params::new(), Outcome::Feasible)
        }
    }

    fn repeat(number: u32, of: u32, value: f64) -> TrialRecord {
        run(number, TrialKind::Repeat { of }, value, None)
    }

    #[test]
    fn repeats_join_their_original_and_move_its_observed_mean() {
        let records = vec![
            run(0, TrialKind::Baseline, 100.0, None),
            run(1, TrialKind::Search, 200.0, None),
            repeat(2, 1, 180.0),
            repeat(3, 0, 110.0),
        ];
        let groups = ConfigRuns::group(&records);
        let numbers: Vec<(u32, usize)> =
            groups.iter().map(|g| (g.number(), g.runs.len())).collect();
        assert_eq!(numbers, [(0, 2), (1, 2)]);
        let seen = groups[1].as_observed();
        assert_eq!((seen.value, seen.score), (Some(190.0), Some(190.0)));
        let sd = (200f64.ln() - 180f64.ln()).abs() / 2f64.sqrt();
        let error = seen.relative_error().unwrap();
        assert!((error - sd / 2f64.sqrt()).abs() < 1e-12, "{error}");
    }

    #[test]
    fn a_single_run_keeps_its_own_interval_and_an_slo_breach_keeps_the_original() {
        let records = vec![run(0, TrialKind::Search, 100.0, Some(3.92))];
        let groups = ConfigRuns::group(&records);
        assert!((groups[0].relative_error().unwrap() - 0.02).abs() < 1e-12);
        assert_eq!(groups[0].as_observed(), records[0]);
        let mut broken = repeat(1, 0, 50.0);
        broken.outcome = Outcome::Infeasible;
        let records = vec![records[0].clone(), broken];
        let groups = ConfigRuns::group(&records);
        assert_eq!(groups[0].scores_if_all_feasible(), None);
        assert_eq!(
            groups[0].as_observed().score,
            Some(100.0),
            "the feasible run"
        );
    }

    #[test]
    fn a_minimised_objective_has_a_measured_noise() {
        let latency = |number, kind, seconds: f64| TrialRecord {
            value: Some(seconds),
            score: Some(-seconds),
            ..TrialRecord::of(TrialId { number, kind }, Params::new(), Outcome::Feasible)
        };
        let records = vec![
            latency(0, TrialKind::Baseline, 0.50),
            latency(1, TrialKind::Repeat { of: 0 }, 0.55),
        ];
        let noise = measured_noise(&records).expect("negative scores measure a noise");
        assert!((noise - (0.55f64 / 0.50).ln() / 2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn two_runs_that_agree_by_chance_are_held_to_their_own_intervals() {
        let records = vec![
            run(0, TrialKind::Search, 100.0, Some(9.8)),
            TrialRecord {
                half_width: Some(9.8),
                ..repeat(1, 0, 100.0)
            },
        ];
        let error = ConfigRuns::group(&records)[0].relative_error().unwrap();
        assert!((error - 0.05 / 2f64.sqrt()).abs() < 1e-12, "{error}");
    }
}
