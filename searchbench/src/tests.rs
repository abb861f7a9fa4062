use super::*;
use infertune::record::{Outcome, Violation};
use infertune::space::objective::ObjectiveSpec;
use infertune::space::StudySpec;
use std::path::Path;

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");

/// Answers every config with the same metrics (or start-up failure).
struct Fixed(Result<MetricMap, StartupFailure>);

impl Evaluator for Fixed {
    fn evaluate(&self, _: &Params) -> Result<MetricMap, StartupFailure> {
        self.0.clone()
    }
}

fn scenario(metric: &str, answer: Result<MetricMap, StartupFailure>) -> Scenario {
    scenario_of(metric, Box::new(Fixed(answer)))
}

/// The 7B chat scenario's space and SLOs, maximising `metric` as `evaluator` measures it.
pub(super) fn scenario_of(metric: &str, evaluator: Box<dyn Evaluator>) -> Scenario {
    let space = StudySpec::load(
        &Path::new(SCENARIOS).join("qwen2.5-7b-h100-chat.yaml"),
        infertune::engine::rule_pack,
    )
    .unwrap();
    let spec = ObjectiveSpec {
        metric: metric.into(),
        ..space.objective.clone()
    };
    Scenario {
        name: space.name.clone(),
        fingerprint: String::new(),
        expert: None,
        twin: None,
        space: Box::new(space),
        evaluator,
        objective: Objective::new(&spec).unwrap(),
    }
}

/// Metrics of a probe that meets the scenario's SLOs unless `ttft_ms` breaks them.
pub(super) fn metrics(ttft_ms: f64, completed: f64) -> MetricMap {
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
    assert_eq!(met.id.number, 3);
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
    let names: Vec<String> = sim::scenarios(Path::new(SCENARIOS), false)
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names.len(), 6, "{names:?}");
}

/// An Optuna config whose "driver" is `script`: Python (no Optuna needed) that reads the
/// parameter line and may then ask for configs.
fn fake_driver(dir: &Path, script: &str) -> optuna::OptunaConfig {
    let driver = dir.join("driver.py");
    std::fs::write(&driver, script).unwrap();
    optuna::OptunaConfig {
        python: "python3".into(),
        driver,
        samplers: vec!["tpe".into()],
    }
}

#[test]
fn optuna_configs_are_resolved_and_judged_and_refused_ones_are_not_counted() {
    let scenario = scenario("output_throughput", Ok(metrics(1000.0, 384.0)));
    let good = infertune::sampler::from_name("random", 0)
        .unwrap()
        .ask(&*scenario.space, &[])
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let verdicts = dir.path().join("verdicts.json");
    let script = format!(
        "import json, sys\n\
         assert json.loads(sys.stdin.readline())['parameters']\n\
         good = json.loads({good:?})\n\
         replies = []\n\
         for seed, params in [(0, {{}}), (0, good), (1, good)]:\n\
         \x20   print(json.dumps({{'seed': seed, 'params': params}}), flush=True)\n\
         \x20   replies.append(json.loads(sys.stdin.readline()))\n\
         json.dump(replies, open({out:?}, 'w'))\n",
        good = serde_json::to_string(&good).unwrap(),
        out = verdicts.display().to_string(),
    );
    let config = fake_driver(dir.path(), &script);
    let runs = optuna::search(&scenario, &config, "tpe", 2, 1).unwrap();
    let bests: Vec<_> = runs
        .iter()
        .map(|r| (r.sampler.as_str(), r.seed, r.best.clone()))
        .collect();
    assert_eq!(
        bests,
        vec![
            ("optuna-tpe", 0, vec![Some(900.0)]),
            ("optuna-tpe", 1, vec![Some(900.0)])
        ]
    );
    let replies: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(verdicts).unwrap()).unwrap();
    assert_eq!(replies[0]["refused"], true);
    assert_eq!(replies[1]["refused"], false);
    assert_eq!(
        (replies[1]["feasible"].clone(), replies[1]["value"].clone()),
        (true.into(), 900.0.into())
    );
}

#[test]
fn an_optuna_driver_that_stops_short_is_an_error() {
    let scenario = scenario("output_throughput", Ok(metrics(1000.0, 384.0)));
    let dir = tempfile::tempdir().unwrap();
    let config = fake_driver(dir.path(), "import sys\nsys.stdin.readline()\n");
    let err = optuna::search(&scenario, &config, "tpe", 1, 5).unwrap_err();
    assert!(err.to_string().contains("ran 0 trials, not 5"), "{err}");
}

#[test]
fn the_optuna_comparison_line_bounds_censored_medians() {
    let row = |sampler: &str, median_trials: f64, censored: bool| report::Summary {
        scenario: "all".into(),
        sampler: sampler.into(),
        median_trials,
        censored,
        vs_random: None,
        random_censored: false,
        median_regret_at: 0.0,
        reached: (0, 0),
    };
    let line = |bo, tpe| report::versus(&[bo, tpe], "bo", "optuna-tpe", "Optuna TPE").unwrap();
    assert!(line(row("bo", 10.0, false), row("optuna-tpe", 40.0, false)).contains(": 0.25×"));
    assert!(line(row("bo", 10.0, false), row("optuna-tpe", 81.0, true)).contains(": ≤0.12×"));
    assert!(line(row("bo", 81.0, true), row("optuna-tpe", 81.0, true)).contains(": –"));
    assert_eq!(
        report::versus(&[row("bo", 1.0, false)], "bo", "optuna-tpe", "x"),
        None
    );
}

#[test]
fn a_search_runs_the_trials_its_planner_numbers() {
    let scenario = scenario("output_throughput", Ok(metrics(100.0, 384.0)));
    let mut sampler = from_name("random", 4).unwrap();
    let searched = drive::search(&scenario, &mut *sampler, 5, Vec::new(), 1).unwrap();
    let numbers: Vec<u32> = searched.records.iter().map(|r| r.id.number).collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4]);
    assert_eq!(searched.best.last(), Some(&Some(900.0)));
}

#[test]
fn sampler_names_carry_the_prior_and_the_trials_in_flight() {
    assert_eq!(super::variant("bo").unwrap(), ("bo", Start::Expert, 1));
    assert_eq!(super::variant("bo:none").unwrap(), ("bo", Start::Blind, 1));
    assert_eq!(
        super::variant("bo:none@4").unwrap(),
        ("bo", Start::Blind, 4)
    );
    assert_eq!(super::variant("bo:twin@4").unwrap(), ("bo", Start::Twin, 4));
    assert!(super::variant("bo@0").is_err());
}
