use super::*;
use crate::record::Violation;
use crate::space::objective::ObjectiveSpec;
use crate::space::StudySpec;
use std::path::Path;

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/searchbench/scenarios");

/// Answers every config with the same metrics (or start-up failure).
struct Fixed(Result<MetricMap, StartupFailure>);

impl Evaluator for Fixed {
    fn evaluate(&self, _: &Params) -> Result<MetricMap, StartupFailure> {
        self.0.clone()
    }
}

fn scenario(metric: &str, answer: Result<MetricMap, StartupFailure>) -> Scenario {
    let space = StudySpec::load(&Path::new(SCENARIOS).join("qwen2.5-7b-h100-chat.yaml")).unwrap();
    let spec = ObjectiveSpec {
        metric: metric.into(),
        ..space.objective.clone()
    };
    Scenario {
        name: space.name.clone(),
        fingerprint: String::new(),
        space: Box::new(space),
        evaluator: Box::new(Fixed(answer)),
        objective: Objective::new(&spec).unwrap(),
    }
}

fn metrics(ttft_ms: f64, completed: f64) -> MetricMap {
    [
        ("output_throughput", 900.0),
        ("p99_ttft_ms", ttft_ms),
        ("p99_tpot_ms", 20.0),
        ("completed", completed),
        ("error_rate", 0.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[test]
fn trials_are_judged_by_the_study_objective() {
    let met = scenario("output_throughput / 2", Ok(metrics(1000.0, 384.0))).trial(3, Params::new());
    assert_eq!(met.number, 3);
    assert_eq!(met.outcome, Outcome::Feasible);
    assert_eq!((met.value, met.score), (Some(450.0), Some(450.0)));
    assert!(met.violations.is_empty());

    let slow = scenario("output_throughput", Ok(metrics(9000.0, 384.0))).trial(0, Params::new());
    assert_eq!(slow.outcome, Outcome::Infeasible);
    assert_eq!(slow.value, Some(900.0));
    assert!(
        matches!(&slow.violations[..], [Violation::Slo { measured: Some(m), .. }] if *m == 9000.0)
    );

    let idle = scenario("output_throughput", Ok(metrics(1000.0, 0.0))).trial(0, Params::new());
    assert_eq!(idle.violations, vec![Violation::NothingCompleted]);
}

#[test]
fn a_start_up_failure_is_a_failed_trial_without_value() {
    let failure = StartupFailure {
        kind: FailureKind::Oom,
        message: "out of memory".into(),
    };
    let record = scenario("output_throughput", Err(failure)).trial(1, Params::new());
    assert!(matches!(
        record.outcome,
        Outcome::Failed {
            kind: FailureKind::Oom,
            ..
        }
    ));
    assert_eq!((record.value, record.score), (None, None));
    assert!(record.metrics.is_empty());
}

#[test]
fn the_shipped_scenarios_load() {
    let names: Vec<String> = sim::scenarios(Path::new(SCENARIOS))
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names.len(), 6, "{names:?}");
}
