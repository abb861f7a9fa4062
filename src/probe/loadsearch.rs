//! Load search: the highest request rate or concurrency at which every SLO holds, found by
//! bracketing (doubling from `low`) and then bisection, in at most `rounds` probe runs. A
//! study's trials (`objective.load_search`) and `infertune bench --sweep` both use it.

use super::{LoadSpec, WorkloadSpec};
use crate::record::{metric, MetricMap, Slo, Violation};
use anyhow::bail;
use serde::{Deserialize, Serialize};

/// Which load knob a load search turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadKnob {
    /// Mean request rate of an open-loop workload (req/s).
    Rate,
    /// Concurrency of a closed-loop workload (or the cap of an open-loop one).
    Concurrency,
}

/// A load search's bounds. In a study it runs per trial, and the highest load meeting every SLO
/// becomes the trial's value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSearchSpec {
    /// The knob searched.
    pub over: LoadKnob,
    /// Lowest load tried (the first probe).
    pub low: f64,
    /// Highest load tried.
    pub high: f64,
    /// Most probe runs (bracketing + bisection).
    #[serde(default = "default_rounds")]
    pub rounds: u32,
}

fn default_rounds() -> u32 {
    6
}

/// One probe run of a load search.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Round {
    /// The load probed.
    pub load: f64,
    /// Whether every SLO held at that load.
    pub feasible: bool,
}

/// Check `spec` against the probe workload before any trial runs.
pub(crate) fn validate(spec: &LoadSearchSpec, workload: &WorkloadSpec) -> anyhow::Result<()> {
    if !(spec.low > 0.0 && spec.high >= spec.low) {
        bail!(
            "objective.load_search: need 0 < low <= high (got low {}, high {})",
            spec.low,
            spec.high
        );
    }
    if spec.rounds == 0 {
        bail!("objective.load_search.rounds must be at least 1");
    }
    with_load(workload, spec.over, spec.low).map(|_| ())
}

/// `workload` with its load knob set to `load`.
pub(crate) fn with_load(
    workload: &WorkloadSpec,
    knob: LoadKnob,
    load: f64,
) -> anyhow::Result<WorkloadSpec> {
    let mut w = workload.clone();
    let whole = load.round().max(1.0) as u32;
    match (&mut w.load, knob) {
        (LoadSpec::Open { rate, .. }, LoadKnob::Rate) => *rate = load,
        (LoadSpec::Closed { concurrency, .. }, LoadKnob::Concurrency) => *concurrency = whole,
        (LoadSpec::Open {
            max_concurrency, ..
        }
        | LoadSpec::Trace { max_concurrency }, LoadKnob::Concurrency) => *max_concurrency = Some(whole),
        (LoadSpec::Stages { .. }, _) => bail!(
            "objective.load_search cannot search a staged load; give each stage's rate instead"
        ),
        (LoadSpec::Trace { .. }, LoadKnob::Rate) => bail!(
            "objective.load_search over `rate` cannot change a replayed trace's arrivals; use `over: concurrency` (its max_concurrency) or the trace's speed"
        ),
        (LoadSpec::Closed { .. }, LoadKnob::Rate) => bail!(
            "objective.load_search over `rate` needs an open-loop probe load (probe.load.kind: open); use `over: concurrency` for a closed loop"
        ),
    }
    Ok(w)
}

/// Run the search. `try_load(load)` probes one load and says whether every SLO held, or
/// `None` when the study was interrupted (the search then stops where it is).
pub fn search(
    spec: &LoadSearchSpec,
    mut try_load: impl FnMut(f64) -> anyhow::Result<Option<bool>>,
) -> anyhow::Result<Vec<Round>> {
    let whole = spec.over == LoadKnob::Concurrency;
    let snap = |x: f64| if whole { x.round().max(1.0) } else { x };
    let mut rounds = Vec::new();
    let mut probe = |load: f64, rounds: &mut Vec<Round>| -> anyhow::Result<Option<bool>> {
        let verdict = try_load(load)?;
        if let Some(feasible) = verdict {
            rounds.push(Round { load, feasible });
        }
        Ok(verdict)
    };
    let mut good = snap(spec.low);
    match probe(good, &mut rounds)? {
        Some(true) => {}
        _ => return Ok(rounds),
    }
    let mut bad = None;
    while bad.is_none() && good < spec.high && rounds.len() < spec.rounds as usize {
        let next = snap((good * 2.0).min(spec.high));
        match probe(next, &mut rounds)? {
            Some(true) => good = next,
            Some(false) => bad = Some(next),
            None => return Ok(rounds),
        }
    }
    while let Some(b) = bad {
        let close = if whole {
            b - good <= 1.0
        } else {
            b - good <= good * 0.02
        };
        if close || rounds.len() >= spec.rounds as usize {
            break;
        }
        let mid = snap((good + b) / 2.0);
        match probe(mid, &mut rounds)? {
            Some(true) => good = mid,
            Some(false) => bad = Some(mid),
            None => break,
        }
    }
    Ok(rounds)
}

/// What keeps a run with `metrics` from holding every SLO of `slos`: each SLO broken or not
/// measured, and a run in which no request completed.
pub fn violations(slos: &[Slo], metrics: &MetricMap) -> Vec<Violation> {
    let mut out: Vec<Violation> = slos
        .iter()
        .filter_map(|slo| slo.violation(metrics))
        .collect();
    if metrics.get(metric::COMPLETED).is_none_or(|n| *n == 0.0) {
        out.push(Violation::NothingCompleted);
    }
    out
}

/// The highest feasible load of `rounds`, if any.
pub fn best(rounds: &[Round]) -> Option<f64> {
    rounds
        .iter()
        .filter(|r| r.feasible)
        .map(|r| r.load)
        .fold(None, |acc: Option<f64>, x| {
            Some(acc.map_or(x, |a| a.max(x)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(over: LoadKnob, low: f64, high: f64, rounds: u32) -> LoadSearchSpec {
        LoadSearchSpec {
            over,
            low,
            high,
            rounds,
        }
    }

    #[test]
    fn finds_the_capacity_of_a_concurrency_knob_within_the_round_limit() {
        let s = spec(LoadKnob::Concurrency, 1.0, 256.0, 12);
        let rounds = search(&s, |c| Ok(Some(c <= 37.0))).unwrap();
        assert_eq!(best(&rounds), Some(37.0));
        assert!(rounds.len() <= 12);
        // 1,2,4,...,64 bracket, then bisection between 32 and 64.
        assert_eq!(
            rounds[..7].iter().map(|r| r.load).collect::<Vec<_>>(),
            [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
        );
    }

    #[test]
    fn stops_at_the_round_limit_and_at_high() {
        let s = spec(LoadKnob::Rate, 0.5, 100.0, 4);
        let rounds = search(&s, |r| Ok(Some(r <= 3.3))).unwrap();
        assert_eq!(rounds.len(), 4);
        assert_eq!(best(&rounds), Some(2.0));
        let all_good = search(&spec(LoadKnob::Rate, 1.0, 5.0, 10), |_| Ok(Some(true))).unwrap();
        assert_eq!(best(&all_good), Some(5.0));
        assert_eq!(all_good.len(), 4); // 1, 2, 4, 5
    }

    #[test]
    fn an_infeasible_low_ends_the_search_without_a_value() {
        let rounds = search(&spec(LoadKnob::Rate, 1.0, 8.0, 6), |_| Ok(Some(false))).unwrap();
        assert_eq!(rounds.len(), 1);
        assert_eq!(best(&rounds), None);
    }

    #[test]
    fn a_run_holds_its_slos_only_when_each_is_measured_within_bounds() {
        let slos = crate::record::parse_slos("ttft:p99<=2s,error_rate<=1%").unwrap();
        let metrics = |pairs: &[(&str, f64)]| -> MetricMap {
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        let good = metrics(&[
            ("completed", 5.0),
            ("p99_ttft_ms", 1500.0),
            ("error_rate", 0.0),
        ]);
        assert!(violations(&slos, &good).is_empty());
        let slow = metrics(&[("completed", 5.0), ("p99_ttft_ms", 2500.0)]);
        let texts: Vec<String> = violations(&slos, &slow)
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(
            texts,
            [
                "ttft:p99<=2000ms (was 2500ms)",
                "error_rate<=1% (not measured)"
            ]
        );
        let none = metrics(&[
            ("completed", 0.0),
            ("p99_ttft_ms", 1.0),
            ("error_rate", 0.0),
        ]);
        assert_eq!(violations(&slos, &none), [Violation::NothingCompleted]);
    }

    #[test]
    fn a_rate_search_over_a_closed_loop_is_refused() {
        let w: WorkloadSpec = serde_json::from_value(serde_json::json!({
            "dataset": {"kind": "random", "input_len": 8, "output_len": 8},
            "load": {"kind": "closed", "concurrency": 4, "requests": 10}
        }))
        .unwrap();
        let e = validate(&spec(LoadKnob::Rate, 1.0, 8.0, 6), &w)
            .unwrap_err()
            .to_string();
        assert!(e.contains("open-loop"), "{e}");
        let c = with_load(&w, LoadKnob::Concurrency, 12.4).unwrap();
        assert!(matches!(
            c.load,
            LoadSpec::Closed {
                concurrency: 12,
                ..
            }
        ));
    }
}
