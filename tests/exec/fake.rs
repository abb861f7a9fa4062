//! The fake executor behind the real dispatch loop: trials of a made-up landscape in virtual
//! time, several at once, finishing in the order their virtual ends fall, the same on every run.

use infertune::exec::{FakeExecutor, Landscape, StopFlag};
use infertune::record::{FailureKind, InFlight, Outcome, Params, TrialRecord, Value};
use infertune::space::{DevicesPerTrial, StudySpec};
use infertune::study::dispatch::{dispatch, KeptRecords};
use infertune::study::plan::{PlanSpec, Planner, StopReason};
use std::path::Path;

/// The demo's space: seven knobs, one constraint.
fn space() -> StudySpec {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("search-spaces/demo-sim.yaml");
    StudySpec::load(&path, infertune::engine::rule_pack).unwrap()
}

/// Throughput grows with `max_num_seqs`; below 0.8 of the card's memory the server does not
/// start, and every config fails at start when `crash_all` is set.
struct Made {
    crash_all: bool,
}

impl Landscape for Made {
    fn answer(&self, trial: &InFlight) -> TrialRecord {
        let number = |name: &str| trial.params.get(name).and_then(Value::as_f64).unwrap();
        let fails = self.crash_all || number("gpu_memory_utilization") < 0.8;
        if fails {
            let outcome = Outcome::Failed {
                kind: FailureKind::Crash,
                message: "no room".into(),
            };
            return TrialRecord::of(trial.id, trial.params.clone(), outcome);
        }
        let value = number("max_num_seqs");
        TrialRecord {
            value: Some(value),
            score: Some(value),
            ..TrialRecord::of(trial.id, trial.params.clone(), Outcome::Feasible)
        }
    }
}

fn plan(trials: u32) -> PlanSpec {
    PlanSpec {
        trials,
        baseline: None,
        enqueue: Vec::new(),
        revalidate_top: 0,
        repeats: 0,
        devices_per_trial: DevicesPerTrial::Count(0),
        intensify: false,
        verdict: None,
    }
}

/// The records of `trials` random trials on `executor`, and the virtual time at the end.
fn run(executor: &FakeExecutor<'_>, spec: PlanSpec) -> anyhow::Result<Vec<TrialRecord>> {
    let space = space();
    let mut sampler = infertune::sampler::from_name("random", 3).unwrap();
    let mut planner = Planner::new(spec, sampler.as_mut(), &space, Vec::new());
    let mut kept = KeptRecords::default();
    let stopped = dispatch(&mut planner, executor, &StopFlag::default(), &mut kept)?;
    assert_eq!(stopped, StopReason::TrialsDone);
    Ok(kept.records)
}

#[test]
fn four_slots_run_four_trials_at_once_in_virtual_time() {
    let landscape = Made { crash_all: false };
    let executor = FakeExecutor::new(&landscape, 4)
        .startup_s(60.0)
        .probe_s(120.0)
        .jitter(0.0);
    let records = run(&executor, plan(8)).unwrap();
    assert_eq!(records.len(), 8);
    for record in &records {
        let cost = if record.is_feasible() { 180.0 } else { 60.0 };
        assert_eq!(record.wall_s, cost, "trial {}", record.id.number);
    }
    let at_zero = records.iter().filter(|r| r.started_unix == 0.0).count();
    assert_eq!(at_zero, 4, "four trials start at once: {records:?}");
    let end = records
        .iter()
        .map(|r| r.started_unix + r.wall_s)
        .fold(0.0, f64::max);
    assert_eq!(executor.now(), end);
    assert!(
        end < 8.0 * 180.0 / 2.0,
        "eight trials on four slots overlap: {end}"
    );
    let slots: std::collections::BTreeSet<u32> = records.iter().filter_map(|r| r.slot).collect();
    assert_eq!(slots.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
}

#[test]
fn trials_finish_in_the_order_of_their_virtual_ends_the_same_every_run() {
    let landscape = Made { crash_all: false };
    let order = |_: ()| {
        let executor = FakeExecutor::new(&landscape, 3);
        let records = run(&executor, plan(12)).unwrap();
        records
            .iter()
            .map(|r| (r.id.number, r.params.clone(), r.started_unix, r.wall_s))
            .collect::<Vec<(u32, Params, f64, f64)>>()
    };
    let first = order(());
    let ends: Vec<f64> = first.iter().map(|t| t.2 + t.3).collect();
    assert!(
        ends.windows(2).all(|w| w[0] <= w[1]),
        "ends out of order: {ends:?}"
    );
    let numbers: Vec<u32> = first.iter().map(|t| t.0).collect();
    assert!(
        numbers.windows(2).any(|w| w[0] > w[1]),
        "some trial overtakes an earlier one: {numbers:?}"
    );
    assert_eq!(first, order(()), "a second run differs");
}

#[test]
fn a_run_stopped_on_a_trial_ends_the_trials_in_flight() {
    let landscape = Made { crash_all: true };
    let executor = FakeExecutor::new(&landscape, 4);
    let space = space();
    let spec = PlanSpec {
        trials: 8,
        ..PlanSpec::of(&space, Vec::new())
    };
    let err = run(&executor, spec).expect_err("the baseline cannot start");
    assert!(err.to_string().contains("baseline"), "{err:#}");
}
