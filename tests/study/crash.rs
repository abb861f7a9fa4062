//! Crash safety of the real binary on the simulator: `kill -9` the tuner at points across one
//! study (defined by the journal's progress and the state of the trial in flight, never by the
//! clock, so they are reached on any machine) and resume each time. No completed trial is lost
//! or duplicated, the server a killed tuner left running is recorded and stopped by the resume,
//! the journal parses, the study ends with the trials asked, and its configs are those of an
//! uninterrupted run with the same seed.

use crate::kit::e2e_sim_common;

use crate::kit::study_fakes::search_configs;
use e2e_sim_common::{
    finish, kill_if_running, processes_under, records, records_so_far, space_with_port, spawn_tune,
    strictly_parsed, tune, wait_no_processes_under, wait_while_running, STUDY,
};
use infertune::launch::leftover::{GroupRecord, PID_FILE};
use infertune::record::TrialRecord;
use std::path::Path;
use Moment::{Journaled, Serving, Starting};

/// Search trials asked (baseline and enqueued configs included).
const TRIALS: &str = "14";

/// The moment of a trial at which a kill lands.
#[derive(Clone, Copy, Debug)]
enum Moment {
    /// As soon as the journal holds the records asked (maybe while the tuner resumes).
    Journaled,
    /// While a server starts: spawned and recorded, not ready yet.
    Starting,
    /// While a server is probed: ready, its record listing its processes.
    Serving,
}

/// Where the kills land: once the journal holds this many records, at this moment of a trial.
const KILLS: [(usize, Moment); 10] = [
    (0, Starting),
    (0, Serving),
    (1, Journaled),
    (2, Starting),
    (4, Serving),
    (5, Journaled),
    (7, Starting),
    (8, Serving),
    (10, Journaled),
    (12, Serving),
];

#[test]
fn killing_the_tuner_anywhere_loses_nothing_and_resumes_to_the_uninterrupted_configs() {
    let tmp = tempfile::tempdir().unwrap();
    let (crashed, reference) = (tmp.path().join("crashed"), tmp.path().join("reference"));
    std::fs::create_dir_all(&crashed).unwrap();
    std::fs::create_dir_all(&reference).unwrap();
    let space = space_with_port(tmp.path(), 18500);
    let dir = crashed.join(STUDY);
    let mut kept: Vec<TrialRecord> = Vec::new();
    let mut left_running = 0;
    for (attempt, (journaled, moment)) in KILLS.into_iter().enumerate() {
        // Servers earlier kills left (the resume stops them) are not the trial in flight.
        let left = server_groups(&dir);
        let mut child = spawn_tune(&space, &crashed, &["--trials", TRIALS], attempt);
        let reached = wait_while_running(&mut child, || {
            records_so_far(&dir).len() >= journaled && at(&dir, moment, &left)
        });
        assert!(
            kill_if_running(&mut child) && reached,
            "kill {attempt} never landed: the tuner ended or stalled before {moment:?} after \
             {journaled} records"
        );
        left_running += usize::from(assert_leftovers_are_recorded(&crashed));
        kept = assert_extends(&kept, &records_so_far(&dir));
    }
    finish(tune(&space, &crashed, &["--trials", TRIALS, "--resume"]));
    assert_eq!(wait_no_processes_under(&crashed, 5.0), Vec::<i32>::new());
    assert!(
        left_running > 0,
        "no kill caught a server running; the reclaim went untested"
    );

    let done = strictly_parsed(&dir);
    assert_extends(&kept, &done);
    let numbers: Vec<u32> = done.iter().map(|r| r.id.number).collect();
    assert_eq!(numbers, (0..done.len() as u32).collect::<Vec<_>>());
    assert_eq!(
        search_configs(&done).len(),
        TRIALS.parse::<usize>().unwrap()
    );
    // The finalist and the baseline (unless it is the finalist), re-validated once each.
    let mut repeated: Vec<u32> = done.iter().filter_map(|r| r.repeat_of()).collect();
    repeated.dedup();
    assert!(
        repeated.contains(&0) && (1..=2).contains(&repeated.len()),
        "{repeated:?}"
    );
    assert_eq!(
        done.iter().filter(|r| r.repeat_of().is_some()).count(),
        repeated.len()
    );

    finish(tune(&space, &reference, &["--trials", TRIALS]));
    let uninterrupted = records(&reference.join(STUDY));
    assert_eq!(search_configs(&done), search_configs(&uninterrupted));
    assert!(processes_under(tmp.path()).is_empty());
}

/// Every server still running after a kill is recorded: by its group, still matching the record, or
/// (killed between its spawn and the group's record) by the marker recorded before the spawn (the
/// resume stops it). Returns true when one was running.
fn assert_leftovers_are_recorded(results: &Path) -> bool {
    // Records first: the tuner is dead, so none can vanish after this read.
    let recorded = server_groups(&results.join(STUDY));
    let left = processes_under(results);
    for pid in &left {
        let group = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(*pid)))
            .map_or(*pid, |g| g.as_raw());
        let record = recorded.iter().find(|r| r.pgid == group);
        // Killed between the spawn and the group's record, the server carries the marker its
        // record named before the spawn: the resume finds it by that.
        let marked = recorded.iter().any(|r| carries_marker(*pid, r));
        assert!(
            record.is_some() || marked,
            "server {pid} (group {group}) outlived the tuner unrecorded: {recorded:?}"
        );
        if record.is_none() {
            continue;
        }
        // A server that exits meanwhile no longer matches; one still alive must.
        assert!(
            record.is_some_and(GroupRecord::still_running)
                || !processes_under(results).contains(pid),
            "the record of server {pid} does not match it: {record:?}"
        );
    }
    !left.is_empty()
}

/// True when process `pid` carries the marker `record` names in its environment.
fn carries_marker(pid: i32, record: &GroupRecord) -> bool {
    let Some(marker) = &record.marker else {
        return false;
    };
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    environ
        .split(|b| *b == 0)
        .any(|entry| entry.ends_with(format!("={marker}").as_bytes()))
}

/// `now` holds every record of `before`, unchanged and in order, and numbers stay unique.
fn assert_extends(before: &[TrialRecord], now: &[TrialRecord]) -> Vec<TrialRecord> {
    assert!(now.len() >= before.len(), "records were lost");
    assert_eq!(&now[..before.len()], before, "a completed trial changed");
    assert!(
        now.windows(2).all(|w| w[0].id.number < w[1].id.number),
        "trial numbers must rise without repeats"
    );
    now.to_vec()
}

/// The servers recorded in `study`'s trial folders (each record is written whole).
fn server_groups(study: &Path) -> Vec<GroupRecord> {
    std::fs::read_dir(study)
        .map(|entries| {
            entries
                .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join(PID_FILE)).ok())
                .map(|text| serde_json::from_str(&text).expect("a server record parses"))
                .collect()
        })
        .unwrap_or_default()
}

/// True when a server of `study` other than those `left` is running at `moment` (always true
/// for [`Moment::Journaled`]).
fn at(study: &Path, moment: Moment, left: &[GroupRecord]) -> bool {
    let ready = match moment {
        Journaled => return true,
        Starting => false,
        Serving => true,
    };
    server_groups(study).iter().any(|g| {
        g.still_running()
            && !left.iter().any(|l| l.pgid == g.pgid)
            && ready != g.descendants.is_empty()
    })
}
