//! The verdict on one probe run: the one place a trial's outcome, value, score, interval and
//! violations are derived from what it measured.

use super::{nothing_completed, Objective};
use crate::record::{metric, MetricMap, Outcome, TrialRecord, Violation};

/// What one probe run comes to.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Feasible, infeasible, or pruned (with why).
    pub outcome: Outcome,
    /// Objective value as the user states it; `None` for a pruned run or an unmeasured metric.
    pub value: Option<f64>,
    /// The value oriented so that higher is better.
    pub score: Option<f64>,
    /// Half-width of the value's 95% interval within the run, when the probe measured one.
    pub half_width: Option<f64>,
    /// Broken SLOs with what was measured, a pruning reason, or no completed request.
    pub violations: Vec<Violation>,
}

impl Verdict {
    /// The verdict on `metrics` (the objective's stage's when it names one: see
    /// `judged_metrics`); `pruned` says why the probe stopped early, if it did.
    pub fn of(objective: &Objective, metrics: &MetricMap, pruned: Option<String>) -> Verdict {
        let judgement = objective.judge(metrics);
        let mut violations = judgement.violations;
        violations.extend(nothing_completed(metrics));
        let half_width = objective
            .metric_name()
            .and_then(|name| metrics.get(&metric::half_width_of(name)).copied());
        Verdict::decided(judgement.value, objective, half_width, violations, pruned)
    }

    /// The verdict on a value found some other way (a load search's best load), with the
    /// violations of the run it stands for.
    pub fn decided(
        value: Option<f64>,
        objective: &Objective,
        half_width: Option<f64>,
        mut violations: Vec<Violation>,
        pruned: Option<String>,
    ) -> Verdict {
        violations.extend(pruned.clone().map(|reason| Violation::Pruned { reason }));
        let outcome = match pruned {
            Some(reason) => Outcome::Pruned { reason },
            None if violations.is_empty() => Outcome::Feasible,
            None => Outcome::Infeasible,
        };
        let probed = matches!(outcome, Outcome::Feasible | Outcome::Infeasible);
        let value = value.filter(|_| probed);
        Verdict {
            outcome,
            value,
            score: value.map(|v| objective.direction().orient(v)),
            half_width: half_width.filter(|_| value.is_some()),
            violations,
        }
    }

    /// True for a run that met every SLO.
    pub fn is_feasible(&self) -> bool {
        self.outcome == Outcome::Feasible
    }

    /// `record` with this verdict's outcome, value, score, interval and violations.
    pub fn apply(self, record: TrialRecord) -> TrialRecord {
        TrialRecord {
            outcome: self.outcome,
            value: self.value,
            score: self.score,
            half_width: self.half_width,
            violations: self.violations,
            ..record
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{parse_slos, Params, TrialId, TrialKind};
    use crate::space::objective::{Direction, ObjectiveSpec};

    fn objective(metric: &str, direction: Direction) -> Objective {
        Objective::new(&ObjectiveSpec {
            direction,
            metric: metric.into(),
            subject_to: parse_slos("ttft:p99<=2s").unwrap(),
            secondary: None,
            load_search: None,
            stage: None,
        })
        .unwrap()
    }

    fn metrics(pairs: &[(&str, f64)]) -> MetricMap {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn a_run_carries_the_interval_of_its_objective_metric_only() {
        let measured = metrics(&[
            ("output_throughput", 50.0),
            ("output_throughput_hw95", 2.5),
            ("p99_ttft_ms", 900.0),
            ("error_rate", 0.0),
        ]);
        let plain = Verdict::of(
            &objective("output_throughput", Direction::Maximize),
            &measured,
            None,
        );
        assert_eq!(plain.outcome, Outcome::Feasible);
        assert_eq!((plain.value, plain.half_width), (Some(50.0), Some(2.5)));
        let expression = Verdict::of(
            &objective("output_throughput / 2", Direction::Maximize),
            &measured,
            None,
        );
        assert_eq!(expression.value, Some(25.0));
        assert_eq!(expression.half_width, None, "no interval for an expression");
        let record = plain.apply(TrialRecord::of(
            TrialId {
                number: 3,
                kind: TrialKind::Search,
            },
            Params::new(),
            Outcome::Feasible,
        ));
        assert!((record.relative_error().unwrap() - 2.5 / 1.96 / 50.0).abs() < 1e-12);
    }

    #[test]
    fn broken_slos_pruning_and_empty_runs_decide_the_outcome() {
        let o = objective("p99_ttft_ms", Direction::Minimize);
        let slow = metrics(&[("p99_ttft_ms", 3000.0), ("error_rate", 0.0)]);
        let v = Verdict::of(&o, &slow, None);
        assert_eq!(v.outcome, Outcome::Infeasible);
        assert_eq!(v.score, Some(-3000.0));
        let pruned = Verdict::of(&o, &slow, Some("too slow".into()));
        assert!(matches!(pruned.outcome, Outcome::Pruned { .. }));
        assert_eq!((pruned.value, pruned.score), (None, None));
        let empty = metrics(&[
            ("p99_ttft_ms", 10.0),
            ("error_rate", 0.0),
            ("completed", 0.0),
        ]);
        let v = Verdict::of(&o, &empty, None);
        assert_eq!(v.violations, vec![Violation::NothingCompleted]);
    }
}
