//! The report's plots: best-so-far, each parameter that varied against the objective, latency
//! against throughput, and the Pareto front of two objectives. Every trial that measured the
//! objective is drawn; pruned ones with the partial value their probe reached, as rings.

use crate::export::{Chart, Series};
use crate::record::{metric, Latency, Outcome, TrialRecord};
use crate::space::objective::ObjectiveSpec;
use std::collections::{BTreeMap, BTreeSet};

const GOOD: &str = "#1f77b4";
const BAD: &str = "#d62728";
const BEST: &str = "#2ca02c";

/// How a drawn search trial ended.
#[derive(Clone, Copy, PartialEq)]
enum Ending {
    Feasible,
    Broken,
    Pruned,
}

/// How `r` ended, when it is a search trial that measured something.
fn ending(r: &TrialRecord) -> Option<Ending> {
    if r.repeat_of().is_some() {
        return None;
    }
    match r.outcome {
        Outcome::Feasible => Some(Ending::Feasible),
        Outcome::Infeasible => Some(Ending::Broken),
        Outcome::Pruned { .. } => Some(Ending::Pruned),
        Outcome::Rejected { .. } | Outcome::Failed { .. } | Outcome::Crashed { .. } => None,
    }
}

/// Search trials with an objective value, how each ended, and the value (a pruned trial's is
/// the partial one in `partial`).
fn measured<'r>(
    records: &'r [TrialRecord],
    partial: &BTreeMap<u32, f64>,
) -> Vec<(&'r TrialRecord, Ending, f64)> {
    records
        .iter()
        .filter_map(|r| {
            let ending = ending(r)?;
            let value = match ending {
                Ending::Pruned => partial.get(&r.id.number).copied(),
                Ending::Feasible | Ending::Broken => r.value,
            }?;
            Some((r, ending, value))
        })
        .collect()
}

/// One scatter series per ending, pruned trials as rings; the chart leaves empty ones out.
fn scatter(points: &[(Ending, (f64, f64))]) -> Vec<Series> {
    [
        (Ending::Feasible, "feasible", GOOD, false),
        (Ending::Broken, "SLO broken", BAD, false),
        (Ending::Pruned, "pruned (partial value)", BAD, true),
    ]
    .into_iter()
    .map(|(ending, name, color, hollow)| Series {
        name: name.into(),
        color,
        points: points
            .iter()
            .filter(|(e, _)| *e == ending)
            .map(|(_, p)| *p)
            .collect(),
        line: false,
        hollow,
    })
    .collect()
}

/// Every measured trial's value, and the best feasible value so far, by trial number.
pub(crate) fn best_so_far(
    records: &[TrialRecord],
    spec: &ObjectiveSpec,
    partial: &BTreeMap<u32, f64>,
) -> Chart {
    let mut best: Option<f64> = None;
    let mut line = Vec::new();
    let measured = measured(records, partial);
    let mut next = measured.iter().peekable();
    for r in records.iter().filter(|r| r.repeat_of().is_none()) {
        if let Some((_, Ending::Feasible, v)) = next.next_if(|(m, ..)| m.id.number == r.id.number) {
            if best.is_none_or(|b| spec.direction.orient(*v) > spec.direction.orient(b)) {
                best = Some(*v);
            }
        }
        if let Some(b) = best {
            line.push((f64::from(r.id.number), b));
        }
    }
    let points: Vec<(Ending, (f64, f64))> = measured
        .iter()
        .map(|(r, e, v)| (*e, (f64::from(r.id.number), *v)))
        .collect();
    let mut series = vec![series("best so far", BEST, line, true)];
    series.extend(scatter(&points));
    Chart {
        title: format!("Best {} so far", spec.metric),
        x_label: "trial".into(),
        y_label: spec.metric.clone(),
        series,
        x_categories: vec![],
        thresholds: vec![],
        bars: false,
    }
}

/// One chart per parameter that varied: its value against the objective, for measured trials.
pub(crate) fn params_vs_objective(
    records: &[TrialRecord],
    spec: &ObjectiveSpec,
    partial: &BTreeMap<u32, f64>,
) -> Vec<(String, Chart)> {
    let measured = measured(records, partial);
    let names: BTreeSet<&String> = measured
        .iter()
        .flat_map(|(r, ..)| r.params.keys())
        .collect();
    names
        .into_iter()
        .filter_map(|name| {
            let values: Vec<(Ending, &crate::record::Value, f64)> = measured
                .iter()
                .filter_map(|(r, e, y)| r.params.get(name).map(|v| (*e, v, *y)))
                .collect();
            let distinct: BTreeSet<String> = values.iter().map(|(_, v, _)| v.to_string()).collect();
            if distinct.len() < 2 {
                return None;
            }
            let numeric = values.iter().all(|(_, v, _)| v.as_f64().is_some());
            let categories: Vec<String> = if numeric {
                Vec::new()
            } else {
                distinct.into_iter().collect()
            };
            let x_of = |v: &crate::record::Value| match v.as_f64() {
                Some(x) if numeric => x,
                _ => categories
                    .iter()
                    .position(|c| *c == v.to_string())
                    .unwrap_or(0) as f64,
            };
            let points: Vec<(Ending, (f64, f64))> =
                values.iter().map(|(e, v, y)| (*e, (x_of(v), *y))).collect();
            let chart = Chart {
                title: format!("{name} vs {}", spec.metric),
                x_label: name.clone(),
                y_label: spec.metric.clone(),
                series: scatter(&points),
                x_categories: categories,
                thresholds: vec![],
                bars: false,
            };
            Some((name.clone(), chart))
        })
        .collect()
}

/// Latency (the first latency SLO's metric, else p99 TTFT) against output throughput per trial,
/// with the SLO's bound drawn across.
pub(crate) fn latency_throughput(records: &[TrialRecord], spec: &ObjectiveSpec) -> Chart {
    let slo = spec.subject_to.iter().find(|s| s.is_latency());
    let latency = slo
        .map(|s| s.metric_key())
        .unwrap_or_else(|| Latency::Ttft.key("p99"));
    let points: Vec<(Ending, (f64, f64))> = records
        .iter()
        .filter_map(|r| {
            let (x, y) = (
                r.metrics.get(metric::OUTPUT_THROUGHPUT)?,
                r.metrics.get(&latency)?,
            );
            Some((ending(r)?, (*x, *y)))
        })
        .collect();
    Chart {
        title: format!("{latency} vs output throughput"),
        x_label: "output_throughput (tok/s)".into(),
        y_label: latency,
        series: scatter(&points),
        x_categories: vec![],
        thresholds: slo
            .map(|s| (s.threshold, format!("SLO {s}")))
            .into_iter()
            .collect(),
        bars: false,
    }
}

/// Feasible trials on the two objectives (`secondary`: the second one's value by trial number),
/// with the Pareto front joined; `None` without a second objective.
pub(crate) fn pareto(
    records: &[TrialRecord],
    spec: &ObjectiveSpec,
    secondary: &BTreeMap<u32, f64>,
) -> Option<Chart> {
    let second = spec.secondary.as_ref()?;
    let points: Vec<(f64, f64)> = records
        .iter()
        .filter(|r| r.repeat_of().is_none() && r.is_feasible())
        .filter_map(|r| Some((r.value?, *secondary.get(&r.id.number)?)))
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
        thresholds: vec![],
        bars: false,
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
        hollow: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{params_of, Value};

    fn spec() -> ObjectiveSpec {
        serde_json::from_value(serde_json::json!({"metric": "output_throughput"})).unwrap()
    }

    /// Baseline feasible, trial 1 pruned (partial value 40 kept aside), trial 2 SLO broken;
    /// `max_model_len` is the same everywhere.
    fn records() -> Vec<TrialRecord> {
        let rec = |number: u32, seqs: i64, outcome: Outcome, value: Option<f64>| {
            let params = params_of(&[
                ("max_num_seqs", Value::Int(seqs)),
                ("max_model_len", Value::Int(8192)),
            ]);
            TrialRecord {
                value,
                ..TrialRecord::new(number, params, outcome)
            }
        };
        let pruned = Outcome::Pruned {
            reason: "ttft certainly broken".into(),
        };
        vec![
            rec(0, 64, Outcome::Feasible, Some(100.0)),
            rec(1, 16, pruned, None),
            rec(2, 256, Outcome::Infeasible, Some(150.0)),
        ]
    }

    fn drawn(chart: &Chart) -> Vec<(&str, Vec<(f64, f64)>)> {
        chart
            .series
            .iter()
            .filter(|s| !s.points.is_empty())
            .map(|s| (s.name.as_str(), s.points.clone()))
            .collect()
    }

    #[test]
    fn pruned_trials_are_drawn_with_their_partial_value_as_rings() {
        let partial = BTreeMap::from([(1, 40.0)]);
        let chart = best_so_far(&records(), &spec(), &partial);
        assert_eq!(
            drawn(&chart),
            [
                (
                    "best so far",
                    vec![(0.0, 100.0), (1.0, 100.0), (2.0, 100.0)]
                ),
                ("feasible", vec![(0.0, 100.0)]),
                ("SLO broken", vec![(2.0, 150.0)]),
                ("pruned (partial value)", vec![(1.0, 40.0)]),
            ]
        );
        assert!(chart
            .series
            .iter()
            .any(|s| s.hollow && s.points == [(1.0, 40.0)]));
        let svg = chart.render();
        assert!(svg.contains("pruned (partial value)") && svg.contains("SLO broken"));
    }

    #[test]
    fn only_parameters_that_varied_get_a_plot_and_it_shows_every_measured_trial() {
        let partial = BTreeMap::from([(1, 40.0)]);
        let charts = params_vs_objective(&records(), &spec(), &partial);
        let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["max_num_seqs"]);
        let points: usize = charts[0].1.series.iter().map(|s| s.points.len()).sum();
        assert_eq!(points, 3);
    }

    #[test]
    fn a_chart_without_a_broken_trial_has_no_broken_legend() {
        let feasible: Vec<TrialRecord> = records().into_iter().take(1).collect();
        let svg = best_so_far(&feasible, &spec(), &BTreeMap::new()).render();
        assert!(
            !svg.contains("SLO broken") && !svg.contains("pruned"),
            "{svg}"
        );
    }

    #[test]
    fn pareto_front_keeps_non_dominated_points() {
        let pts = [(1.0, 5.0), (2.0, 4.0), (1.5, 3.0), (3.0, 1.0), (2.0, 4.0)];
        assert_eq!(pareto_front(&pts), vec![0, 1, 3, 4]);
    }
}
