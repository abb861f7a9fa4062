//! Intensification: a challenger that beats the incumbent by less than the noise measured so
//! far is measured again before it is crowned, as SMAC races a challenger against its
//! incumbent. The noise is the spread of the objective between runs of one config (the
//! baseline is run twice early to measure it, see [`measured_noise`]); before any config has
//! run twice it is taken to be [`UNMEASURED_NOISE`]. Configs are ranked on the mean of their
//! runs (ties: the lower trial number first). A challenger is crowned unmeasured when, even at
//! the worst its noise allows, it trails the runner-up by less than [`MIN_GAIN`]: an
//! indifference zone, as in ranking-and-selection procedures, so a quiet machine spends no runs
//! telling apart configs whose difference would not matter to a deployment.

use crate::record::{InFlight, TrialRecord, MIN_GAIN};
use crate::score::runs::{measured_noise, ConfigRuns, UNMEASURED_NOISE};

/// Least relative spread a challenger's lead is held to, however steady the repeats so far.
pub const MIN_NOISE: f64 = 0.02;
/// One-sided 95% quantile of the normal: a lead below `Z` standard errors is not yet a lead.
const Z: f64 = 1.645;

/// A candidate config: the original trial's number and the oriented scores of its runs.
struct Runs {
    number: u32,
    baseline: bool,
    scores: Vec<f64>,
}

impl Runs {
    fn mean(&self) -> f64 {
        self.scores.iter().sum::<f64>() / self.scores.len() as f64
    }
}

/// Every config whose runs all met the SLOs, with the scores of those runs.
fn configs(records: &[TrialRecord]) -> Vec<Runs> {
    ConfigRuns::group(records)
        .into_iter()
        .filter_map(|c| {
            Some(Runs {
                number: c.number(),
                baseline: c.original.is_baseline(),
                scores: c.scores_if_all_feasible().filter(|s| !s.is_empty())?,
            })
        })
        .collect()
}

/// The original trial whose config should run again now, if any: the baseline once, early,
/// to measure the noise; then, while the two best configs are closer than the noise allows to
/// tell apart and the best may trail the other by [`MIN_GAIN`] or more, the one of them with
/// fewer runs (the better on a tie), up to `max_runs` runs. Configs with a run in flight wait
/// for it.
pub(super) fn next(records: &[TrialRecord], in_flight: &[InFlight], max_runs: u32) -> Option<u32> {
    let flying = |n: u32| in_flight.iter().any(|f| f.id.kind.repeat_of() == Some(n));
    let mut ranked = configs(records);
    let noise = measured_noise(records);
    if noise.is_none() {
        let baseline = ranked.iter().find(|c| c.baseline && c.scores.len() == 1);
        if let Some(b) = baseline.filter(|b| !flying(b.number)) {
            return Some(b.number);
        }
    }
    ranked.sort_by(|a, b| b.mean().total_cmp(&a.mean()).then(a.number.cmp(&b.number)));
    let [best, runner, ..] = ranked.as_slice() else {
        return None;
    };
    if flying(best.number) || flying(runner.number) {
        return None;
    }
    let noise = noise.unwrap_or(UNMEASURED_NOISE).max(MIN_NOISE);
    let (nb, nr) = (best.scores.len() as f64, runner.scores.len() as f64);
    let lead = (best.mean() - runner.mean()) / runner.mean().abs().max(f64::MIN_POSITIVE);
    let margin = Z * noise * (1.0 / nb + 1.0 / nr).sqrt();
    if lead >= margin || margin - lead < MIN_GAIN {
        return None;
    }
    let (fewer, more) = if runner.scores.len() < best.scores.len() {
        (runner, best)
    } else {
        (best, runner)
    };
    let room = |c: &Runs| (c.scores.len() as u32) < max_runs;
    if room(fewer) {
        return Some(fewer.number);
    }
    room(more).then_some(more.number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, Params, TrialId, TrialKind};

    fn run(number: u32, kind: TrialKind, score: f64) -> TrialRecord {
        TrialRecord {
            value: Some(score),
            score: Some(score),
            ..TrialRecord::of(TrialId { number, kind }, Params::new(), Outcome::Feasible)
        }
    }

    fn search(number: u32, score: f64) -> TrialRecord {
        run(number, TrialKind::Search, score)
    }

    fn repeat(number: u32, of: u32, score: f64) -> TrialRecord {
        run(number, TrialKind::Repeat { of }, score)
    }

    #[test]
    fn the_baseline_runs_twice_first_so_the_noise_is_measured() {
        let records = vec![run(0, TrialKind::Baseline, 100.0)];
        assert_eq!(next(&records, &[], 3), Some(0));
        let flying = [InFlight {
            id: TrialId {
                number: 1,
                kind: TrialKind::Repeat { of: 0 },
            },
            params: Params::new(),
        }];
        assert_eq!(next(&records, &flying, 3), None, "its repeat is in flight");
        let measured = vec![run(0, TrialKind::Baseline, 100.0), repeat(1, 0, 110.0)];
        let noise = measured_noise(&measured).unwrap();
        assert!((noise - (110f64.ln() - 100f64.ln()) / 2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn a_close_challenger_is_measured_again_and_a_clear_one_is_not() {
        let steady = vec![
            run(0, TrialKind::Baseline, 100.0),
            repeat(1, 0, 101.0),
            search(2, 200.0),
        ];
        // Noise under 2%: a lead of 98% is clear.
        assert_eq!(next(&steady, &[], 3), None);
        let close = [steady.clone(), vec![search(3, 203.0)]].concat();
        assert_eq!(
            next(&close, &[], 3),
            None,
            "1.5% ahead on one run each at 2% noise: at worst 3.2% behind, within the 5% that \
             does not matter"
        );
        let noisy = vec![
            run(0, TrialKind::Baseline, 100.0),
            repeat(1, 0, 108.0),
            search(2, 200.0),
        ];
        let close = [noisy.clone(), vec![search(3, 203.0)]].concat();
        assert_eq!(next(&close, &[], 3), Some(3), "1.5% ahead at 5% noise");
        let remeasured = [close.clone(), vec![repeat(4, 3, 199.0)]].concat();
        assert_eq!(
            next(&remeasured, &[], 3),
            Some(2),
            "still close: the runner-up, with fewer runs, goes next"
        );
        assert_eq!(next(&remeasured, &[], 1), None, "both at the most runs");
    }

    #[test]
    fn a_challenger_that_broke_an_slo_on_its_repeat_drops_out() {
        let mut broken = repeat(4, 3, 250.0);
        broken.outcome = Outcome::Infeasible;
        let records = vec![
            run(0, TrialKind::Baseline, 100.0),
            repeat(1, 0, 108.0),
            search(2, 200.0),
            search(3, 203.0),
            broken,
        ];
        assert_eq!(next(&records, &[], 3), None);
    }
}
