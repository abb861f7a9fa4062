//! The planner driven with no process, thread or clock: records and trials in flight are
//! written by hand, as the dispatch loop would hand them over.

use super::*;
use crate::record::{FailureKind, Outcome, Value};
use crate::sampler::testkit::FnSpaceBuilder;
use crate::sampler::Sampler;
use crate::space::Feasibility;

/// Proposes `x = 1, 2, 3, …` in turn.
struct Counting(i64);

impl Sampler for Counting {
    fn ask(&mut self, _: &dyn Feasibility, _: &[TrialRecord]) -> anyhow::Result<Params> {
        self.0 += 1;
        Ok(config(self.0))
    }
}

fn config(x: i64) -> Params {
    Params::from([("x".to_string(), Value::Int(x))])
}

/// A space over `x` that refuses `x = 2`.
fn space() -> impl Feasibility {
    FnSpaceBuilder::new()
        .int("x", 0, 100, None, false)
        .constraint("no-two", |p| p["x"] != Value::Int(2))
        .build()
}

fn spec(trials: u32) -> PlanSpec {
    PlanSpec {
        trials,
        baseline: Some(config(0)),
        enqueue: vec![config(50)],
        revalidate_top: 1,
        repeats: 2,
        devices_per_trial: DevicesPerTrial::Count(1),
        intensify: false,
        verdict: None,
    }
}

/// The record of `id` at `x`, feasible with value `value`, run on slot 0.
fn done(id: TrialId, x: i64, value: f64) -> TrialRecord {
    TrialRecord {
        value: Some(value),
        score: Some(value),
        slot: Some(0),
        ..TrialRecord::of(id, config(x), Outcome::Feasible)
    }
}

fn situation<'a>(records: &'a [TrialRecord], in_flight: &'a [InFlight]) -> StudyState<'a> {
    StudyState {
        records,
        in_flight,
        free_slots: &[0, 1],
        slots: 2,
        budget_left: None,
    }
}

fn planned(decision: Decision) -> Planned {
    match decision {
        Decision::Run(planned) => planned,
        other => panic!("expected a trial to run, got {other:?}"),
    }
}

#[test]
fn the_baseline_runs_alone_then_queued_then_sampled_configs_then_refusals_are_recorded() {
    let check = space();
    let mut sampler = Counting(0);
    let mut planner = Planner::new(spec(5), &mut sampler, &check, Vec::new());
    let first = planned(planner.next(&situation(&[], &[])));
    assert_eq!(first.trial.id.kind, TrialKind::Baseline);
    assert_eq!(first.trial.params, config(0));
    let flying = [InFlight {
        id: first.trial.id,
        params: first.trial.params.clone(),
    }];
    assert_eq!(planner.next(&situation(&[], &flying)), Decision::Wait);

    let mut records = vec![done(first.trial.id, 0, 10.0)];
    let queued = planned(planner.next(&situation(&records, &[])));
    assert_eq!(
        (queued.trial.id.number, queued.trial.params),
        (1, config(50))
    );
    records.push(done(queued.trial.id, 50, 20.0));
    let sampled = planned(planner.next(&situation(&records, &[])));
    assert_eq!(
        (sampled.trial.id.number, sampled.trial.id.kind),
        (2, TrialKind::Search)
    );
    assert_eq!(sampled.trial.params, config(1));
    records.push(done(sampled.trial.id, 1, 5.0));
    match planner.next(&situation(&records, &[])) {
        Decision::Refuse { trial, rule, .. } => {
            assert_eq!((trial.id.number, rule.as_str()), (3, "no-two"));
        }
        other => panic!("x = 2 must be refused, got {other:?}"),
    }
}

#[test]
fn after_the_search_the_best_config_and_the_baseline_are_repeated_in_turn_away_from_their_slot() {
    let check = space();
    let mut sampler = Counting(0);
    let mut planner = Planner::new(spec(2), &mut sampler, &check, Vec::new());
    let baseline = TrialId {
        number: 0,
        kind: TrialKind::Baseline,
    };
    let best = TrialId {
        number: 1,
        kind: TrialKind::Search,
    };
    let records = vec![done(baseline, 0, 10.0), done(best, 50, 20.0)];
    let flying = [InFlight {
        id: TrialId {
            number: 9,
            kind: TrialKind::Search,
        },
        params: config(7),
    }];
    assert_eq!(
        planner.next(&situation(&records, &flying)),
        Decision::Wait,
        "re-validation waits for the search's last trials"
    );
    let mut repeats = Vec::new();
    for _ in 0..4 {
        let repeat = planned(planner.next(&situation(&records, &[])));
        assert_eq!(repeat.slot, Some(1), "slot 0 ran the originals");
        repeats.push(repeat.trial.id.kind.repeat_of().expect("a repeat"));
    }
    // Interleaved, so a slow spell of the machine falls on both configs alike.
    assert_eq!(repeats, [1, 0, 1, 0]);
    assert_eq!(planner.next(&situation(&records, &[])), Decision::Done);
    assert_eq!(planner.stop_reason(), StopReason::TrialsDone);
}

#[test]
fn a_rerun_goes_first_and_keeps_its_number_and_the_budget_ends_the_search_early() {
    let check = space();
    let mut sampler = Counting(0);
    let rerun = TrialId {
        number: 4,
        kind: TrialKind::Baseline,
    };
    let reruns = vec![InFlight {
        id: rerun,
        params: config(0),
    }];
    let mut planner = Planner::new(spec(5), &mut sampler, &check, reruns);
    let first = planned(planner.next(&situation(&[], &[])));
    assert_eq!(first.trial.id, rerun);
    let records = vec![TrialRecord {
        ready_s: Some(1.0),
        wall_s: 100.0,
        ..done(rerun, 0, 10.0)
    }];
    let short = StudyState {
        budget_left: Some(150.0),
        ..situation(&records, &[])
    };
    assert_eq!(
        planner.next(&short),
        Decision::Ended(EarlyEnd::BudgetSpent(Phase::Search)),
        "four repeats of 100 s on two slots need 200 s"
    );
    let repeat = planned(planner.next(&short));
    assert_eq!(repeat.trial.id.kind, TrialKind::Repeat { of: 4 });
    assert_eq!(repeat.trial.id.number, 5);
    assert_eq!(planner.stop_reason(), StopReason::BudgetSpent);
}

#[test]
fn a_config_whose_device_count_cannot_be_computed_is_unplaceable() {
    let check = FnSpaceBuilder::new().int("x", 0, 100, None, false).build();
    let mut sampler = Counting(0);
    let spec = PlanSpec {
        baseline: None,
        enqueue: Vec::new(),
        devices_per_trial: DevicesPerTrial::Expr("x / 0 +".into()),
        ..spec(3)
    };
    let mut planner = Planner::new(spec, &mut sampler, &check, Vec::new());
    assert!(matches!(
        planner.next(&situation(&[], &[])),
        Decision::Unplaceable { .. }
    ));
}

/// Records the noise the planner reports before each proposal, and proposes `x = 1, 2, …`.
struct NoiseSeen(Counting, Vec<Option<f64>>);

impl Sampler for NoiseSeen {
    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params> {
        self.0.ask(space, trials)
    }

    fn observe_noise(&mut self, relative: Option<f64>) {
        self.1.push(relative);
    }
}

#[test]
fn with_intensification_the_baseline_repeats_first_and_a_close_challenger_is_measured_again() {
    let check = space();
    let mut sampler = NoiseSeen(Counting(0), Vec::new());
    let spec = PlanSpec {
        intensify: true,
        repeats: 3,
        ..spec(6)
    };
    let mut planner = Planner::new(spec, &mut sampler, &check, Vec::new());
    let baseline = TrialId {
        number: 0,
        kind: TrialKind::Baseline,
    };
    let mut records = vec![done(baseline, 0, 100.0)];
    let again = planned(planner.next(&situation(&records, &[])));
    assert_eq!(
        again.trial.id.kind,
        TrialKind::Repeat { of: 0 },
        "the noise first"
    );
    records.push(done(again.trial.id, 0, 104.0));
    let queued = planned(planner.next(&situation(&records, &[])));
    assert_eq!(
        (queued.trial.id.kind, queued.trial.params.clone()),
        (TrialKind::Search, config(50))
    );
    // 200 against 100: far beyond a noise of about 3%, crowned without a second look.
    records.push(done(queued.trial.id, 50, 200.0));
    let sampled = planned(planner.next(&situation(&records, &[])));
    assert_eq!(sampled.trial.id.kind, TrialKind::Search);
    // 202 against 200: within the noise, measured again before anything new.
    records.push(done(sampled.trial.id, 1, 202.0));
    let challenger = planned(planner.next(&situation(&records, &[])));
    assert_eq!(
        challenger.trial.id.kind,
        TrialKind::Repeat {
            of: sampled.trial.id.number
        }
    );
    assert_eq!(challenger.trial.params, config(1));
    drop(planner);
    let told: Vec<f64> = sampler.1.iter().flatten().copied().collect();
    assert!(
        !told.is_empty(),
        "the sampler is told a noise: {:?}",
        sampler.1
    );
    assert!(
        told.iter()
            .all(|n| (n - (104f64 / 100.0).ln() / 2f64.sqrt()).abs() < 1e-9),
        "the sampler is told the baseline's spread: {:?}",
        sampler.1
    );
}

/// Records the trials each proposal is asked with, and proposes `x = 1, 2, …`.
struct TrialsSeen(Counting, Vec<Vec<TrialRecord>>);

impl Sampler for TrialsSeen {
    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params> {
        self.1.push(trials.to_vec());
        self.0.ask(space, trials)
    }
}

#[test]
fn a_repeat_moves_the_mean_the_sampler_sees_and_narrows_its_noise() {
    let check = space();
    let mut sampler = TrialsSeen(Counting(0), Vec::new());
    let spec = PlanSpec {
        baseline: None,
        enqueue: Vec::new(),
        revalidate_top: 0,
        ..spec(4)
    };
    let mut planner = Planner::new(spec, &mut sampler, &check, Vec::new());
    let first = planned(planner.next(&situation(&[], &[]))).trial.id;
    let mut records = vec![done(first, 1, 100.0)];
    // Each call asks the sampler once (its second proposal, `x = 2`, is refused).
    planner.next(&situation(&records, &[]));
    let again = TrialId {
        number: 1,
        kind: TrialKind::Repeat { of: first.number },
    };
    records.push(done(again, 1, 120.0));
    planner.next(&situation(&records, &[]));
    drop(planner);
    let [first, before, after] = sampler.1.as_slice() else {
        panic!("three proposals, saw {}", sampler.1.len());
    };
    assert!(first.is_empty());
    assert_eq!(before.len(), 1);
    assert_eq!((before[0].score, before[0].half_width), (Some(100.0), None));
    assert_eq!(after.len(), 1, "one row per config, not one per run");
    assert_eq!(after[0].score, Some(110.0), "the mean of its runs");
    let spread = (120f64 / 100.0).ln() / 2f64.sqrt();
    let error = after[0].relative_error().expect("its own noise");
    assert!((error - spread / 2f64.sqrt()).abs() < 1e-12, "{error}");
}

/// The record of `id` at `x` that failed at start with `kind`.
fn failed_at_start(id: TrialId, x: i64, kind: FailureKind) -> TrialRecord {
    let outcome = Outcome::Failed {
        kind,
        message: "no such flag --x".into(),
    };
    TrialRecord::of(id, config(x), outcome)
}

#[test]
fn a_baseline_that_cannot_start_stops_the_study_and_one_out_of_memory_does_not() {
    let check = space();
    let mut sampler = Counting(0);
    let mut planner = Planner::new(spec(5), &mut sampler, &check, Vec::new());
    let baseline = planned(planner.next(&situation(&[], &[]))).trial.id;
    let oom = failed_at_start(baseline, 0, FailureKind::Oom);
    assert_eq!(planner.recorded(&oom), Ok(()), "smaller configs may fit");
    let search = TrialId {
        number: 1,
        kind: TrialKind::Search,
    };
    let broken_search = failed_at_start(search, 50, FailureKind::InvalidConfig);
    assert_eq!(
        planner.recorded(&broken_search),
        Ok(()),
        "the config's fault"
    );
    let broken = failed_at_start(baseline, 0, FailureKind::InvalidConfig);
    let stop = planner.recorded(&broken).unwrap_err();
    assert!(
        matches!(&stop, StopReason::BaselineCannotStart { kind: FailureKind::InvalidConfig, message } if message == "no such flag --x"),
        "{stop:?}"
    );
    assert!(stop.is_failure());
    assert_eq!(planner.next(&situation(&[], &[])), Decision::Done);
    assert_eq!(planner.stop_reason(), stop);
}

#[test]
fn jobs_lost_in_a_row_stop_the_study_and_a_record_between_them_resets_the_count() {
    let check = space();
    let mut sampler = Counting(0);
    let mut planner = Planner::new(spec(20), &mut sampler, &check, Vec::new());
    let first = planned(planner.next(&situation(&[], &[])));
    for _ in 1..stop::MOST_LOST_IN_A_ROW {
        assert_eq!(planner.lost("node failure"), Ok(()));
    }
    assert_eq!(planner.recorded(&done(first.trial.id, 0, 10.0)), Ok(()));
    for _ in 1..stop::MOST_LOST_IN_A_ROW {
        assert_eq!(planner.lost("node failure"), Ok(()));
    }
    let stop = planner.lost("time limit").unwrap_err();
    assert_eq!(
        stop,
        StopReason::JobsLost {
            lost: stop::MOST_LOST_IN_A_ROW,
            last: "time limit".into()
        }
    );
    assert!(stop.to_string().contains("6 Slurm jobs in a row"), "{stop}");
    assert_eq!(planner.next(&situation(&[], &[])), Decision::Done);
}

#[test]
fn an_interrupt_ends_the_plan_at_once_and_the_study_stops_interrupted() {
    let check = space();
    let mut sampler = Counting(0);
    let mut planner = Planner::new(spec(5), &mut sampler, &check, Vec::new());
    planned(planner.next(&situation(&[], &[])));
    planner.interrupt();
    assert_eq!(planner.next(&situation(&[], &[])), Decision::Done);
    assert_eq!(planner.stop_reason(), StopReason::Interrupted);
    assert!(!StopReason::Interrupted.is_failure());
}

#[test]
fn without_revalidation_no_budget_is_kept_back_for_it() {
    let check = space();
    let mut sampler = Counting(0);
    let mut planner = Planner::new(
        PlanSpec {
            revalidate_top: 0,
            ..spec(5)
        },
        &mut sampler,
        &check,
        Vec::new(),
    );
    let baseline = planned(planner.next(&situation(&[], &[])));
    let records = vec![TrialRecord {
        ready_s: Some(1.0),
        wall_s: 100.0,
        ..done(baseline.trial.id, 0, 10.0)
    }];
    // Less than the baseline's two repeats of 100 s on two slots would need.
    let short = StudyState {
        budget_left: Some(90.0),
        ..situation(&records, &[])
    };
    let next = planned(planner.next(&short));
    assert_eq!(next.trial.id.kind, TrialKind::Search, "{next:?}");
}

/// A baseline (trial 0, at `base`) and a winner (trial 1, at `best`), each with its runs in
/// turn: the original, then the repeats taken alternately.
fn finalists(base: &[f64], best: &[f64]) -> Vec<TrialRecord> {
    let id = |number, kind| TrialId { number, kind };
    let mut records = vec![
        done(id(0, TrialKind::Baseline), 0, base[0]),
        done(id(1, TrialKind::Search), 7, best[0]),
    ];
    for (b, w) in base[1..].iter().zip(&best[1..]) {
        let n = records.len() as u32;
        records.push(done(id(n, TrialKind::Repeat { of: 1 }), 7, *w));
        records.push(done(id(n + 1, TrialKind::Repeat { of: 0 }), 0, *b));
    }
    records
}

fn judged(max_repeats: u32) -> PlanSpec {
    PlanSpec {
        enqueue: Vec::new(),
        verdict: Some(Verdict {
            target: VerdictTarget {
                half_width_pct: 10.0,
                max_repeats,
            },
            direction: Direction::Maximize,
        }),
        ..spec(2)
    }
}

#[test]
fn the_winner_and_the_baseline_run_again_in_turn_while_the_gain_is_not_known_to_the_target() {
    let check = space();
    let mut sampler = Counting(0);
    let mut planner = Planner::new(judged(3), &mut sampler, &check, Vec::new());
    // +100% with the winner's runs 160 to 240: an interval of about ±60 points.
    let mut records = finalists(&[100.0, 90.0, 110.0], &[200.0, 160.0, 240.0]);
    let winner = planned(planner.next(&situation(&records, &[])));
    assert_eq!(winner.trial.id.kind, TrialKind::Repeat { of: 1 });
    let in_flight = [winner.trial.clone()];
    assert_eq!(
        planner.next(&StudyState {
            free_slots: &[0],
            ..situation(&records, &in_flight)
        }),
        Decision::Wait,
        "the baseline's run waits for a slot away from its original's"
    );
    let baseline = planned(planner.next(&StudyState {
        free_slots: &[1],
        ..situation(&records, &in_flight)
    }));
    assert_eq!(baseline.trial.id.kind, TrialKind::Repeat { of: 0 });
    records.push(done(winner.trial.id, 7, 200.0));
    assert_eq!(
        planner.next(&situation(&records, std::slice::from_ref(&baseline.trial))),
        Decision::Wait,
        "the round is judged once both of its runs ended"
    );
    records.push(done(baseline.trial.id, 0, 100.0));
    // Still wide, but both ran their most repeats (three).
    assert_eq!(planner.next(&situation(&records, &[])), Decision::Done);
}

#[test]
fn a_gain_known_to_the_target_or_a_budget_too_short_for_a_round_ends_the_study() {
    let check = space();
    let mut sampler = Counting(0);
    let mut planner = Planner::new(judged(6), &mut sampler, &check, Vec::new());
    let known = finalists(&[100.0, 101.0, 99.0], &[200.0, 201.0, 199.0]);
    assert_eq!(planner.next(&situation(&known, &[])), Decision::Done);

    let mut sampler = Counting(0);
    let mut planner = Planner::new(judged(6), &mut sampler, &check, Vec::new());
    let wide: Vec<TrialRecord> = finalists(&[100.0, 90.0, 110.0], &[200.0, 160.0, 240.0])
        .into_iter()
        .map(|r| TrialRecord {
            ready_s: Some(1.0),
            wall_s: 100.0,
            ..r
        })
        .collect();
    // A round is two runs of 100 s on two slots: 100 s.
    let short = StudyState {
        budget_left: Some(90.0),
        ..situation(&wide, &[])
    };
    assert_eq!(planner.next(&short), Decision::Done);
}
