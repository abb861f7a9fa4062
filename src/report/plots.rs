//! The report's plots: best-so-far, each parameter against the objective, latency against
//! throughput, and the Pareto front of two objectives.

use crate::export::{Chart, Series};
use crate::record::{Outcome, TrialRecord};
use crate::space::objective::ObjectiveSpec;
use std::collections::{BTreeMap, BTreeSet};

const GOOD: &str = "#1f77b4";
const BAD: &str = "#d62728";
const BEST: &str = "#2ca02c";

fn probed(r: &TrialRecord) -> bool {
    r.repeat_of.is_none() && matches!(r.outcome, Outcome::Feasible | Outcome::Infeasible)
}

/// Every feasible trial's value, and the best value so far, by trial number.
pub fn best_so_far(records: &[TrialRecord], spec: &ObjectiveSpec) -> Chart {
    let mut best: Option<f64> = None;
    let mut line = Vec::new();
    let mut feasible = Vec::new();
    let mut infeasible = Vec::new();
    for r in records.iter().filter(|r| r.repeat_of.is_none()) {
        let x = f64::from(r.number);
        match (&r.outcome, r.value) {
            (Outcome::Feasible, Some(v)) => {
                feasible.push((x, v));
                let better =
                    best.is_none_or(|b| spec.direction.orient(v) > spec.direction.orient(b));
                if better {
                    best = Some(v);
                }
            }
            (Outcome::Infeasible, Some(v)) => infeasible.push((x, v)),
            _ => {}
        }
        if let Some(b) = best {
            line.push((x, b));
        }
    }
    Chart {
        title: format!("Best {} so far", spec.metric),
        x_label: "trial".into(),
        y_label: spec.metric.clone(),
        series: vec![
            series("best so far", BEST, line, true),
            series("feasible", GOOD, feasible, false),
            series("SLO broken", BAD, infeasible, false),
        ],
        x_categories: vec![],
    }
}

/// One chart per parameter: its value against the objective, for probed trials.
pub fn params_vs_objective(records: &[TrialRecord], spec: &ObjectiveSpec) -> Vec<(String, Chart)> {
    let names: BTreeSet<&String> = records
        .iter()
        .filter(|r| probed(r))
        .flat_map(|r| r.params.keys())
        .collect();
    names
        .into_iter()
        .map(|name| {
            let values: Vec<(&TrialRecord, &crate::record::Value)> = records
                .iter()
                .filter(|r| probed(r) && r.value.is_some())
                .filter_map(|r| r.params.get(name).map(|v| (r, v)))
                .collect();
            let numeric = values.iter().all(|(_, v)| v.as_f64().is_some());
            let categories: Vec<String> = if numeric {
                Vec::new()
            } else {
                let set: BTreeSet<String> = values.iter().map(|(_, v)| v.to_string()).collect();
                set.into_iter().collect()
            };
            let x_of = |v: &crate::record::Value| match v.as_f64() {
                Some(x) if numeric => x,
                _ => categories
                    .iter()
                    .position(|c| *c == v.to_string())
                    .unwrap_or(0) as f64,
            };
            let (mut good, mut bad) = (Vec::new(), Vec::new());
            for (r, v) in &values {
                let point = (x_of(v), r.value.unwrap_or(f64::NAN));
                if r.is_feasible() {
                    good.push(point)
                } else {
                    bad.push(point)
                }
            }
            let chart = Chart {
                title: format!("{name} vs {}", spec.metric),
                x_label: name.clone(),
                y_label: spec.metric.clone(),
                series: vec![
                    series("feasible", GOOD, good, false),
                    series("SLO broken", BAD, bad, false),
                ],
                x_categories: categories,
            };
            (name.clone(), chart)
        })
        .collect()
}

/// Latency (the first latency SLO's metric, else p99 TTFT) against output throughput per trial.
pub fn latency_throughput(records: &[TrialRecord], spec: &ObjectiveSpec) -> Chart {
    let latency = spec
        .subject_to
        .iter()
        .find(|s| s.is_latency())
        .map(|s| s.metric_key())
        .unwrap_or_else(|| "p99_ttft_ms".into());
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    for r in records.iter().filter(|r| probed(r)) {
        if let (Some(x), Some(y)) = (r.metrics.get("output_throughput"), r.metrics.get(&latency)) {
            if r.is_feasible() {
                good.push((*x, *y))
            } else {
                bad.push((*x, *y))
            }
        }
    }
    Chart {
        title: format!("{latency} vs output throughput"),
        x_label: "output_throughput (tok/s)".into(),
        y_label: latency,
        series: vec![
            series("feasible", GOOD, good, false),
            series("SLO broken", BAD, bad, false),
        ],
        x_categories: vec![],
    }
}

/// Feasible trials on the two objectives (`secondary`: the second one's value by trial number),
/// with the Pareto front joined; `None` without a second objective.
pub fn pareto(
    records: &[TrialRecord],
    spec: &ObjectiveSpec,
    secondary: &BTreeMap<u32, f64>,
) -> Option<Chart> {
    let second = spec.secondary.as_ref()?;
    let points: Vec<(f64, f64)> = records
        .iter()
        .filter(|r| r.repeat_of.is_none() && r.is_feasible())
        .filter_map(|r| Some((r.value?, *secondary.get(&r.number)?)))
        .collect();
    let oriented: Vec<(f64, f64)> = points
        .iter()
        .map(|&(a, b)| (spec.direction.orient(a), second.direction.orient(b)))
        .collect();
    let mut front: Vec<(f64, f64)> = pareto_front(&oriented)
        .into_iter()
        .map(|i| points[i])
        .collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    Some(Chart {
        title: format!("Pareto front: {} vs {}", spec.metric, second.metric),
        x_label: spec.metric.clone(),
        y_label: second.metric.clone(),
        series: vec![
            series("feasible", GOOD, points, false),
            series("Pareto front", BEST, front, true),
        ],
        x_categories: vec![],
    })
}

/// Indices of the points on the Pareto front of `points` (both coordinates: higher is better).
fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            let (x, y) = points[i];
            !points
                .iter()
                .any(|&(a, b)| a >= x && b >= y && (a > x || b > y))
        })
        .collect()
}

fn series(name: &str, color: &'static str, points: Vec<(f64, f64)>, line: bool) -> Series {
    Series {
        name: name.into(),
        color,
        points,
        line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_front_keeps_non_dominated_points() {
        let pts = [(1.0, 5.0), (2.0, 4.0), (1.5, 3.0), (3.0, 1.0), (2.0, 4.0)];
        assert_eq!(pareto_front(&pts), vec![0, 1, 3, 4]);
    }
}
