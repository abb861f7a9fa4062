//! Choosing the winner: rank feasible trials, summarise each config's runs (grouped by
//! [`ConfigRuns`]: mean ± 95% CI), pick the config with the best lower confidence bound among
//! those whose every run met the SLOs, and state its gain over the baseline with the gain's own
//! 95% CI.

use super::runs::{measured_noise, ConfigRuns, UNMEASURED_NOISE};
use crate::record::{Outcome, Params, TrialRecord, Z95};
use crate::space::objective::Direction;

/// A config's runs (the original trial and its repeats), summarised.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigSummary {
    /// Number of the original trial.
    pub number: u32,
    /// The config.
    pub params: Params,
    /// Objective values of every probed run.
    pub values: Vec<f64>,
    /// Mean objective value.
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean; `None` from fewer than two runs.
    pub ci95: Option<f64>,
    /// Cautious score: the lower bound of the 95% interval of the oriented objective's mean:
    /// from the spread of the runs when there are two or more, else from the run's own
    /// interval, else from the study's measured noise (see [`measured_noise`]), so that no
    /// config wins on one run's figure alone.
    pub lcb_score: f64,
    /// True when every run was feasible.
    pub all_feasible: bool,
    /// Runs in total (original + repeats).
    pub runs: usize,
    /// True for the baseline config.
    pub baseline: bool,
}

/// The chosen config and how it compares with the baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct Winner {
    /// Its summary.
    pub summary: ConfigSummary,
    /// The baseline's summary, when the baseline ran and met every SLO.
    pub baseline: Option<ConfigSummary>,
    /// Gain over the baseline in percent, in the objective's favourable direction.
    pub gain_pct: Option<f64>,
    /// Half-width of the gain's 95% confidence interval, in percentage points; `None` unless the
    /// winner and the baseline both ran at least twice.
    pub gain_ci95: Option<f64>,
    /// The other re-validated configs (the baseline aside) that the runs cannot tell from the
    /// winner: the 95% interval of the difference of their means includes zero, or there are
    /// too few runs for one.
    pub tied: Vec<u32>,
}

/// Records that are search trials (not re-validation repeats).
pub fn originals(records: &[TrialRecord]) -> Vec<TrialRecord> {
    records
        .iter()
        .filter(|r| r.repeat_of().is_none())
        .cloned()
        .collect()
}

/// True for a trial that `search.trials` counts: a search trial, not a re-validation repeat.
pub(crate) fn counts_as_config(record: &TrialRecord) -> bool {
    record.repeat_of().is_none()
}

/// Feasible search trials that ran the full probe, best score first (ties: lower number
/// first).
pub fn ranked(records: &[TrialRecord]) -> Vec<&TrialRecord> {
    let mut v: Vec<&TrialRecord> = records
        .iter()
        .filter(|r| r.repeat_of().is_none())
        .filter(|r| r.is_feasible() && r.score.is_some())
        .collect();
    v.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.id.number.cmp(&b.id.number))
    });
    v
}

/// Summary of the original trial `original` and its repeats among `records`.
pub(crate) fn summarize(
    original: &TrialRecord,
    records: &[TrialRecord],
    direction: Direction,
) -> ConfigSummary {
    let config = ConfigRuns::of(original, records);
    let values: Vec<f64> = config.runs.iter().filter_map(|r| r.value).collect();
    let (mean, ci95) = mean_ci95(&values);
    let oriented_mean = direction.orient(mean);
    let interval = ci95
        .or(original.half_width)
        .unwrap_or_else(|| Z95 * measured_noise(records).unwrap_or(UNMEASURED_NOISE) * mean.abs());
    ConfigSummary {
        number: original.id.number,
        params: original.params.clone(),
        mean,
        ci95,
        lcb_score: oriented_mean - interval,
        all_feasible: config
            .runs
            .iter()
            .all(|r| matches!(r.outcome, Outcome::Feasible)),
        runs: config.runs.len(),
        values,
        baseline: original.is_baseline(),
    }
}

/// The winner of a study: among configs that were re-validated (or, when none was, among all
/// feasible trials), those whose every run met the SLOs, best lower confidence bound first.
pub(crate) fn choose_winner(records: &[TrialRecord], direction: Direction) -> Option<Winner> {
    let ranked = ranked(records);
    let summaries: Vec<ConfigSummary> = ranked
        .iter()
        .map(|r| summarize(r, records, direction))
        .collect();
    let revalidated: Vec<&ConfigSummary> = summaries.iter().filter(|s| s.runs > 1).collect();
    let pool: Vec<&ConfigSummary> = if revalidated.is_empty() {
        summaries.iter().collect()
    } else {
        revalidated
    };
    let best = pool
        .into_iter()
        .filter(|s| s.all_feasible)
        .max_by(|a, b| {
            a.lcb_score
                .partial_cmp(&b.lcb_score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(b.number.cmp(&a.number))
        })?
        .clone();
    let baseline = records
        .iter()
        .find(|r| r.is_baseline() && r.repeat_of().is_none() && r.is_feasible())
        .map(|r| summarize(r, records, direction));
    let compared = baseline.as_ref().filter(|b| b.mean != 0.0);
    let gain_pct = compared.map(|b| direction.orient(best.mean - b.mean) / b.mean.abs() * 100.0);
    let gain_ci95 = compared.and_then(|b| gain_ci95(&best, b));
    let tied = summaries
        .iter()
        .filter(|s| s.runs > 1 && s.all_feasible && !s.baseline && s.number != best.number)
        .filter(|s| !told_apart(&best, s))
        .map(|s| s.number)
        .collect();
    Some(Winner {
        summary: best,
        baseline,
        gain_pct,
        gain_ci95,
        tied,
    })
}

/// Config numbers to re-validate: the best `top` search trials by the mean score of their
/// feasible runs so far (a config measured again during the search is judged on all its runs;
/// its interval is not used here, as re-validation is what narrows it; equal means: the lower
/// trial number first), then the baseline when it met every SLO, so that the gain compares
/// means over the same number of runs.
pub(crate) fn to_revalidate(records: &[TrialRecord], top: usize) -> Vec<u32> {
    let mut pooled: Vec<(f64, u32)> = ranked(records)
        .iter()
        .map(|r| {
            let mean = ConfigRuns::of(r, records).mean_score();
            (mean.unwrap_or(f64::NEG_INFINITY), r.id.number)
        })
        .collect();
    pooled.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut numbers: Vec<u32> = pooled.iter().take(top).map(|(_, n)| *n).collect();
    let baseline = records
        .iter()
        .find(|r| r.is_baseline() && r.repeat_of().is_none() && r.is_feasible());
    if let Some(b) = baseline.filter(|b| !numbers.contains(&b.id.number)) {
        numbers.push(b.id.number);
    }
    numbers
}

/// Mean and half-width of the two-sided 95% confidence interval (Student t); no interval from
/// fewer than two values.
pub(crate) fn mean_ci95(values: &[f64]) -> (f64, Option<f64>) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, None);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let ci95 = variance_of_mean(values).map(|v| t975(n - 1) * v.sqrt());
    (mean, ci95)
}

/// The squared standard error of the mean of `values`; `None` from fewer than two values.
fn variance_of_mean(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some(var / n as f64)
}

/// Half-width of the 95% CI of the gain of `best` over `baseline`, in percentage points of the
/// baseline's mean: Welch's interval of the difference of the two means.
fn gain_ci95(best: &ConfigSummary, baseline: &ConfigSummary) -> Option<f64> {
    let (a, b) = (
        variance_of_mean(&best.values)?,
        variance_of_mean(&baseline.values)?,
    );
    let se = (a + b).sqrt();
    if se == 0.0 {
        return Some(0.0);
    }
    let df = (a + b).powi(2)
        / (a.powi(2) / (best.values.len() - 1) as f64
            + b.powi(2) / (baseline.values.len() - 1) as f64);
    Some(t975((df.floor() as usize).max(1)) * se / baseline.mean.abs() * 100.0)
}

/// True when the 95% interval of the difference of the means of `a` and `b` (Welch) excludes
/// zero; false when either ran fewer than twice.
fn told_apart(a: &ConfigSummary, b: &ConfigSummary) -> bool {
    let (Some(va), Some(vb)) = (variance_of_mean(&a.values), variance_of_mean(&b.values)) else {
        return false;
    };
    let gap = (a.mean - b.mean).abs();
    let se = (va + vb).sqrt();
    if se == 0.0 {
        return gap > 0.0;
    }
    let df = (va + vb).powi(2)
        / (va.powi(2) / (a.values.len() - 1) as f64 + vb.powi(2) / (b.values.len() - 1) as f64);
    gap > t975((df.floor() as usize).max(1)) * se
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom.
fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    TABLE.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{TrialId, TrialKind};

    fn rec(number: u32, value: f64, outcome: Outcome, repeat_of: Option<u32>) -> TrialRecord {
        TrialRecord {
            value: Some(value),
            score: Some(value),
            id: TrialId {
                number,
                kind: match repeat_of {
                    Some(of) => TrialKind::Repeat { of },
                    None if number == 0 => TrialKind::Baseline,
                    None => TrialKind::Search,
                },
            },
            wall_s: 1.0,
            ..TrialRecord::new(number, Params::new(), outcome)
        }
    }

    #[test]
    fn the_cautious_bound_prefers_a_steady_config_and_drops_one_that_broke_an_slo() {
        let f = || Outcome::Feasible;
        let records = vec![
            rec(0, 100.0, f(), None),
            rec(1, 130.0, f(), None),
            rec(2, 125.0, f(), None),
            rec(3, 140.0, f(), None),
            rec(4, 90.0, f(), Some(1)),
            rec(5, 160.0, f(), Some(1)),
            rec(6, 124.0, f(), Some(2)),
            rec(7, 126.0, f(), Some(2)),
            rec(8, 141.0, Outcome::Infeasible, Some(3)),
        ];
        let w = choose_winner(&records, Direction::Maximize).unwrap();
        assert_eq!(w.summary.number, 2);
        assert_eq!(w.summary.runs, 3);
        assert!((w.summary.mean - 125.0).abs() < 1e-9);
        assert!((w.gain_pct.unwrap() - 25.0).abs() < 1e-9);
        assert_eq!(w.baseline.unwrap().ci95, None, "one baseline run, no CI");
        assert_eq!(w.gain_ci95, None);
        assert_eq!(
            w.tied,
            [1],
            "90 and 160 against 124-126: no telling them apart"
        );
    }

    #[test]
    fn a_finalist_clearly_behind_the_winner_is_told_apart() {
        let f = || Outcome::Feasible;
        let records = vec![
            rec(0, 100.0, f(), None),
            rec(1, 130.0, f(), None),
            rec(2, 110.0, f(), None),
            rec(3, 131.0, f(), Some(1)),
            rec(4, 129.0, f(), Some(1)),
            rec(5, 111.0, f(), Some(2)),
            rec(6, 109.0, f(), Some(2)),
        ];
        let w = choose_winner(&records, Direction::Maximize).unwrap();
        assert_eq!((w.summary.number, w.tied.as_slice()), (1, &[][..]));
    }

    #[test]
    fn a_single_run_is_judged_on_its_own_interval_not_its_figure_alone() {
        let f = || Outcome::Feasible;
        let wide = TrialRecord {
            half_width: Some(40.0),
            ..rec(1, 130.0, f(), None)
        };
        let steady = TrialRecord {
            half_width: Some(2.0),
            ..rec(2, 125.0, f(), None)
        };
        let records = vec![rec(0, 100.0, f(), None), wide, steady];
        let w = choose_winner(&records, Direction::Maximize).unwrap();
        assert_eq!(w.summary.number, 2, "125 ± 2 over 130 ± 40");
        assert_eq!(w.summary.lcb_score, 123.0);
        let unmeasured = summarize(&records[0], &records, Direction::Maximize);
        let expected = 100.0 * (1.0 - Z95 * UNMEASURED_NOISE);
        assert!(
            (unmeasured.lcb_score - expected).abs() < 1e-9,
            "{unmeasured:?}"
        );
    }

    #[test]
    fn the_gain_has_its_own_interval_once_the_baseline_is_re_validated() {
        let f = || Outcome::Feasible;
        let records = vec![
            rec(0, 100.0, f(), None),
            rec(1, 125.0, f(), None),
            rec(2, 124.0, f(), Some(1)),
            rec(3, 126.0, f(), Some(1)),
            rec(4, 102.0, f(), Some(0)),
            rec(5, 98.0, f(), Some(0)),
        ];
        let w = choose_winner(&records, Direction::Maximize).unwrap();
        let b = w.baseline.clone().unwrap();
        assert_eq!((w.summary.number, b.runs), (1, 3));
        assert!((b.ci95.unwrap() - 4.303 * (4.0f64 / 3.0).sqrt()).abs() < 1e-9);
        // Welch: se² = 1/3 + 4/3, df = 2.94 → t(2) = 4.303, over the baseline's mean of 100.
        let expected = 4.303 * (5.0f64 / 3.0).sqrt();
        assert!((w.gain_ci95.unwrap() - expected).abs() < 1e-9, "{w:?}");
    }

    #[test]
    fn the_feasible_baseline_is_re_validated_with_the_finalists() {
        let f = || Outcome::Feasible;
        let records = vec![
            rec(0, 100.0, f(), None),
            rec(1, 130.0, f(), None),
            rec(2, 125.0, f(), None),
        ];
        assert_eq!(to_revalidate(&records, 2), [1, 2, 0]);
        assert_eq!(to_revalidate(&records, 3), [1, 2, 0]);
        let broken = vec![rec(0, 100.0, Outcome::Infeasible, None), records[1].clone()];
        assert_eq!(to_revalidate(&broken, 2), [1]);
    }

    #[test]
    fn ci_uses_student_t() {
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((h.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(mean_ci95(&[5.0]), (5.0, None));
    }
}
