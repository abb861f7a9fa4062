//! Resume: after a crash (torn last journal line, interrupted trial) or Ctrl-C, nothing completed
//! is lost or rerun, numbering continues, and the configs are those of an uninterrupted study.

use crate::kit::study_fakes;

use infertune::exec::StopFlag;
use infertune::study::journal;
use infertune::study::plan::StopReason;
use std::collections::BTreeSet;
use std::io::Write as _;
use study_fakes::*;

const SEED: u64 = 11;

fn assert_numbers_unique(records: &[infertune::record::TrialRecord]) {
    let numbers: BTreeSet<u32> = records.iter().map(|r| r.id.number).collect();
    assert_eq!(numbers.len(), records.len(), "duplicated trial numbers");
    assert_eq!(
        numbers.iter().copied().collect::<Vec<_>>(),
        (0..records.len() as u32).collect::<Vec<_>>()
    );
}

#[test]
fn a_crash_with_a_torn_last_line_loses_and_duplicates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = run_study(&space(SEED, 10), &tmp.path().join("ref"), false, true).unwrap();

    let dir = tmp.path().join("crashed");
    let mut short = space(SEED, 6);
    short.search.revalidate_top = 0;
    run_study(&short, &dir, false, true).unwrap();
    let before = journal::read_records(&dir).unwrap();
    assert_eq!(before.len(), 6);
    // The tuner died while appending trial 6 after its server had started.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("journal.jsonl"))
        .unwrap();
    f.write_all(br#"{"number":6,"params":{"max_num_seqs":"#)
        .unwrap();
    std::fs::create_dir_all(dir.join("trial-6")).unwrap();
    std::fs::write(dir.join("trial-6").join("server.log"), "half a log").unwrap();

    // --trials may grow on resume: trials and budget are not part of the space's identity.
    let resumed = run_study(&space(SEED, 10), &dir, true, true).unwrap();
    let after = journal::read_records(&dir).unwrap();
    assert_eq!(after, resumed.records);
    assert_eq!(&after[..6], &before[..], "completed trials changed");
    assert_numbers_unique(&after);
    assert_eq!(search_configs(&after), search_configs(&reference.records));
    let text = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    assert!(
        text.ends_with('\n')
            && text
                .lines()
                .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
    );
    let log = std::fs::read_to_string(dir.join("trial-6").join("server.log")).unwrap();
    assert!(
        log.starts_with("fake-serve"),
        "trial 6 was not rerun: {log}"
    );
}

/// A study of `space` in `dir` whose fakes `arm` sets up to raise its stop flag, and the fakes.
fn run_stopped(
    space: &infertune::space::StudySpec,
    dir: &std::path::Path,
    arm: impl FnOnce(&mut Rig, StopFlag),
) -> (infertune::study::StudyResult, Rig) {
    let stop = StopFlag::default();
    let mut rig = Rig::new(space);
    arm(&mut rig, stop.clone());
    let mut sampler = FakeSampler { seed: SEED };
    let mut opts = options(dir.to_path_buf(), false, true);
    opts.stop = stop;
    let first = infertune::study::run(space, &mut sampler, rig.backends(), &opts).unwrap();
    (first, rig)
}

#[test]
fn ctrl_c_stops_after_teardown_and_a_resume_finishes_the_study() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let space = space(SEED, 10);
    let reference = run_study(&space, &tmp.path().join("ref"), false, true).unwrap();

    let (first, rig) = run_stopped(&space, &dir, |rig, stop| {
        rig.launcher.stop_on_start = Some((4, stop));
    });
    assert_eq!(first.stopped, StopReason::Interrupted);
    assert_eq!(
        rig.launcher.registry.live(),
        0,
        "the interrupted trial's server is still up"
    );
    let started_before_stop = rig.launcher.registry.started();
    assert_eq!(started_before_stop, 4);
    let recorded = journal::read_records(&dir).unwrap();
    assert_eq!(recorded, first.records);
    // Nothing started after Ctrl-C: the records are of the trials started before it (the
    // baseline's early second run among them), the search unfinished.
    assert!(recorded.len() <= started_before_stop, "{recorded:#?}");
    assert!(
        search_configs(&recorded).len() < space.search.trials as usize,
        "the search finished after Ctrl-C"
    );

    let done = run_study(&space, &dir, true, true).unwrap();
    assert_ne!(done.stopped, StopReason::Interrupted);
    assert_eq!(&done.records[..recorded.len()], &recorded[..]);
    assert_numbers_unique(&done.records);
    assert_eq!(
        search_configs(&done.records),
        search_configs(&reference.records)
    );
    assert_eq!(
        done.winner.unwrap().summary.number,
        reference.winner.unwrap().summary.number
    );
}

#[test]
fn ctrl_c_during_a_start_records_nothing_of_that_trial_and_the_resume_runs_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let space = space(SEED, 10);
    let reference = run_study(&space, &tmp.path().join("ref"), false, true).unwrap();

    let (first, _) = run_stopped(&space, &dir, |rig, stop| {
        rig.launcher.cancel_start_on = Some((4, stop));
    });
    assert_eq!(first.stopped, StopReason::Interrupted);
    let recorded = journal::read_records(&dir).unwrap();
    assert_eq!(
        recorded.len(),
        3,
        "the cancelled start was recorded: {recorded:#?}"
    );

    let done = run_study(&space, &dir, true, true).unwrap();
    assert_eq!(&done.records[..3], &recorded[..]);
    assert_numbers_unique(&done.records);
    assert_eq!(
        search_configs(&done.records),
        search_configs(&reference.records)
    );
}

#[test]
fn a_resume_with_a_changed_space_or_seed_is_refused_with_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    run_study(&space(SEED, 3), &dir, false, true).unwrap();

    let mut changed = space(SEED, 3);
    changed.objective.subject_to.pop();
    let e = run_study(&changed, &dir, true, true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("search space changed") && e.contains("--study NAME"),
        "{e}"
    );

    let e = run_study(&space(SEED + 1, 3), &dir, true, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("resume with --seed {SEED}")), "{e}");

    let untouched = journal::read_records(&dir).unwrap();
    let resumed = run_study(&space(SEED, 3), &dir, true, true).unwrap();
    assert_eq!(
        resumed.records, untouched,
        "a finished study ran more trials on resume"
    );
}

#[test]
fn a_damaged_line_in_the_middle_is_an_error_naming_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    run_study(&space(SEED, 3), &dir, false, true).unwrap();
    let path = dir.join("journal.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1] = "{not json";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let e = format!(
        "{:#}",
        run_study(&space(SEED, 3), &dir, true, true).unwrap_err()
    );
    assert!(
        e.contains("journal.jsonl:2:") && e.contains("remove or repair that line"),
        "{e}"
    );
}
