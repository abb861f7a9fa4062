//! Parameter importance over a whole study: for each parameter, the share of the objective's
//! variance explained by grouping the trials on that parameter alone (the between-group sum
//! of squares over the total), normalised so the shares sum to 1 as Optuna's importances do.
//! Numeric parameters with more than four distinct values are grouped into four bins of equal
//! trial counts (`bin 0` the lowest quarter); categorical ones by value. The effect of each is
//! the gap between its best and its worst group's mean.

use crate::export::{Block, Chart, Series};
use crate::record::TrialRecord;
use std::collections::{BTreeMap, BTreeSet};

/// Fewest trials with a value for importances to mean anything.
const MIN_TRIALS: usize = 5;
/// Bins of a numeric parameter.
const BINS: usize = 4;

/// Each varied parameter's share of the objective's variance, largest first; `None` with
/// fewer than `MIN_TRIALS` search trials with a value or an objective that never varied.
pub(crate) fn importances(records: &[TrialRecord]) -> Option<Vec<(String, f64)>> {
    let trials: Vec<(&TrialRecord, f64)> = records
        .iter()
        .filter(|r| r.repeat_of().is_none())
        .filter_map(|r| Some((r, r.value.filter(|v| v.is_finite())?)))
        .collect();
    if trials.len() < MIN_TRIALS {
        return None;
    }
    let values: Vec<f64> = trials.iter().map(|t| t.1).collect();
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let total: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    if total <= 0.0 {
        return None;
    }
    let names: BTreeSet<&String> = trials.iter().flat_map(|(r, _)| r.params.keys()).collect();
    let mut shares: Vec<(String, f64)> = names
        .into_iter()
        .filter_map(|name| {
            let groups = groups(&trials, name)?;
            let between: f64 = groups
                .values()
                .map(|g| {
                    let m = g.iter().sum::<f64>() / g.len() as f64;
                    g.len() as f64 * (m - mean).powi(2)
                })
                .sum();
            Some((name.clone(), between / total))
        })
        .collect();
    let sum: f64 = shares.iter().map(|s| s.1).sum();
    if sum <= 0.0 {
        return None;
    }
    shares.iter_mut().for_each(|s| s.1 /= sum);
    shares.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Some(shares)
}

/// The trials' values grouped by parameter `name` (a trial without it is its own group
/// "absent"); `None` when the parameter never varied.
fn groups(trials: &[(&TrialRecord, f64)], name: &str) -> Option<BTreeMap<String, Vec<f64>>> {
    let keyed: Vec<(Option<&crate::record::Value>, f64)> = trials
        .iter()
        .map(|(r, v)| (r.params.get(name), *v))
        .collect();
    let distinct: BTreeSet<String> = keyed
        .iter()
        .map(|(p, _)| p.map_or("absent".into(), |p| p.to_string()))
        .collect();
    if distinct.len() < 2 {
        return None;
    }
    let numbers: Option<Vec<f64>> = keyed.iter().map(|(p, _)| (*p)?.as_f64()).collect();
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    match numbers {
        Some(xs) if distinct.len() > BINS => {
            let mut sorted = xs.clone();
            sorted.sort_by(f64::total_cmp);
            let edge = |k: usize| sorted[(k * sorted.len() / BINS).min(sorted.len() - 1)];
            for (x, (_, v)) in xs.iter().zip(&keyed) {
                let bin = (1..BINS).filter(|k| *x >= edge(*k)).count();
                out.entry(format!("bin {bin}")).or_default().push(*v);
            }
        }
        _ => {
            for (p, v) in keyed {
                let key = p.map_or("absent".into(), |p| p.to_string());
                out.entry(key).or_default().push(v);
            }
        }
    }
    Some(out)
}

/// What moved the objective: for each varied parameter, largest share first, its share, the
/// value (or quarter of its range) with the highest mean objective and the one with the lowest,
/// and how far below the first the second lies; `None` as for [`importances`].
pub(crate) fn effects(records: &[TrialRecord], metric: &str) -> Option<Block> {
    let shares = importances(records)?;
    let trials: Vec<(&TrialRecord, f64)> = records
        .iter()
        .filter(|r| r.repeat_of().is_none())
        .filter_map(|r| Some((r, r.value.filter(|v| v.is_finite())?)))
        .collect();
    let rows = shares
        .iter()
        .filter_map(|(name, share)| {
            let groups = groups(&trials, name)?;
            let means: Vec<(String, f64, usize)> = groups
                .into_iter()
                .map(|(k, g)| (k, g.iter().sum::<f64>() / g.len() as f64, g.len()))
                .collect();
            let high = means.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
            let low = means.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
            let change = if high.1 != 0.0 {
                format!("{:+.0}%", (low.1 - high.1) / high.1.abs() * 100.0)
            } else {
                "–".into()
            };
            let cell = |g: &(String, f64, usize)| {
                let trials = if g.2 == 1 { "trial" } else { "trials" };
                format!("{} ({:.1}, {} {trials})", g.0, g.1, g.2)
            };
            Some(vec![
                name.clone(),
                format!("{:.0}%", share * 100.0),
                cell(high),
                cell(low),
                change,
            ])
        })
        .collect();
    Some(Block::Table {
        header: vec![
            "parameter".into(),
            "share of the variance".into(),
            format!("best value (mean {metric})"),
            format!("worst value (mean {metric})"),
            "worst against best".into(),
        ],
        rows,
    })
}

/// The importances as a bar chart; `None` when there are none.
pub(crate) fn chart(records: &[TrialRecord], metric: &str) -> Option<Chart> {
    let shares = importances(records)?;
    Some(Chart {
        title: format!("Parameter importance for {metric}"),
        x_label: "parameter".into(),
        y_label: "share of the objective's variance".into(),
        series: vec![Series {
            name: "between-group variance share".into(),
            color: "#1f77b4",
            points: shares
                .iter()
                .enumerate()
                .map(|(i, s)| (i as f64, s.1))
                .collect(),
            line: false,
            hollow: false,
        }],
        x_categories: shares.into_iter().map(|s| s.0).collect(),
        thresholds: vec![],
        bars: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{params_of, Outcome, Value};

    fn trial(n: u32, seqs: i64, noise: bool, value: f64) -> TrialRecord {
        TrialRecord {
            value: Some(value),
            ..TrialRecord::new(
                n,
                params_of(&[
                    ("max_num_seqs", Value::Int(seqs)),
                    ("noise", Value::Bool(noise)),
                ]),
                Outcome::Feasible,
            )
        }
    }

    #[test]
    fn the_parameter_that_drives_the_objective_gets_most_of_the_share() {
        // The value follows max_num_seqs; `noise` is true for the first eight trials, which
        // cover every max_num_seqs once, as do the last eight.
        let records: Vec<TrialRecord> = (0..16)
            .map(|i| {
                let seqs = 16 * (1 + i64::from(i % 8));
                trial(i, seqs, i < 8, seqs as f64 * 10.0 + f64::from(i % 3))
            })
            .collect();
        let shares = importances(&records).unwrap();
        assert_eq!(shares[0].0, "max_num_seqs");
        assert!(shares[0].1 > 0.9, "{shares:?}");
        let total: f64 = shares.iter().map(|s| s.1).sum();
        assert!((total - 1.0).abs() < 1e-9);
        let svg = chart(&records, "output_throughput").unwrap().render();
        assert_eq!(svg.matches("<rect x=").count(), 2);
    }

    #[test]
    fn too_few_trials_or_a_flat_objective_give_nothing() {
        let few: Vec<TrialRecord> = (0..4)
            .map(|i| trial(i, 16 * i64::from(i + 1), true, f64::from(i)))
            .collect();
        assert!(importances(&few).is_none());
        let flat: Vec<TrialRecord> = (0..8)
            .map(|i| trial(i, 16 * i64::from(i + 1), true, 5.0))
            .collect();
        assert!(importances(&flat).is_none());
    }
}
