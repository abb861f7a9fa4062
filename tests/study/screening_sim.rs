//! Screening with the real binary on the simulator: `tune --screening` screens every config
//! but the baseline with a short probe while screening pays, probes fewer requests than its
//! configs would take in full, crowns a full-probe run, and a tuner killed (`kill -9`) around a
//! screening run that passed resumes to exactly one full-probe run of it; promoted in place, a
//! config that passes goes on on its screening run's server.

use crate::kit::e2e_sim_common;

use e2e_sim_common::{
    kill_if_running, records, records_so_far, space_with_port, spawn_tune, tune,
    wait_no_processes_under, wait_while_running, STUDY,
};
use infertune::record::{Outcome, Slo, TrialRecord};
use infertune::space::{ScreeningSettings, StudySpec};
use infertune::study::screening::{awaiting_promotion, screening_pays};
use std::path::Path;

/// Search trials asked (baseline and the fixture's three enqueued configs included).
const TRIALS: &str = "9";

/// The fixture with a probe of four waves (64 requests of 16 at once), so that a screening
/// run's quarter is one wave, on port `port` and up.
fn four_wave_space(dir: &std::path::Path, port: u16) -> std::path::PathBuf {
    let path = space_with_port(dir, port);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("concurrency: 16, requests: 40"));
    let text = text.replace(
        "concurrency: 16, requests: 40",
        "concurrency: 16, requests: 64",
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Requests of the full probe of [`four_wave_space`].
const FULL_PROBE_REQUESTS: f64 = 64.0;

/// Requests the probes of `records` completed: what a probe's length is made of (its seconds
/// depend on the machine's load as well, so the benchmark, not this test, compares those).
fn probe_requests(records: &[TrialRecord]) -> f64 {
    records
        .iter()
        .filter_map(|r| r.metrics.get("completed"))
        .sum()
}

/// Requests the same configs would have completed without screening: each screening run's
/// config probed in full (or as far as a run pruned on an SLO got; one cut short as it could
/// no longer go on would have run in full), and no promotion on top; the baseline and the
/// re-validation runs as they were.
fn unscreened_requests(records: &[TrialRecord]) -> f64 {
    records
        .iter()
        .filter(|r| r.promoted_from.is_none())
        .filter_map(|r| {
            let completed = *r.metrics.get("completed")?;
            let slo_pruned = matches!(r.outcome, Outcome::Pruned { .. }) && !r.was_outranked();
            Some(if r.is_full_probe() || slo_pruned {
                completed
            } else {
                FULL_PROBE_REQUESTS
            })
        })
        .sum()
}

/// The SLOs a study of the space file `space` judges trials by.
fn slos_of(space: &Path) -> Vec<Slo> {
    StudySpec::load(space, infertune::engine::rule_pack)
        .unwrap()
        .objective
        .slos()
}

/// Run a tune to its end; it must succeed.
fn finish(mut command: std::process::Command) -> String {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every promotion runs the config of a screening run, at full fidelity, once per screening
/// run, and no screening run that passed (judged by the SLOs of the space file `space`) is
/// left without one.
fn assert_promotions_hold(space: &Path, all: &[TrialRecord]) {
    let mut numbers: Vec<u32> = all.iter().map(|r| r.number).collect();
    // Trials in flight at once land (and are journaled) in any order.
    numbers.sort_unstable();
    assert_eq!(numbers, (0..all.len() as u32).collect::<Vec<_>>());
    for p in all.iter().filter(|r| r.promoted_from.is_some()) {
        let from = all
            .iter()
            .find(|r| Some(r.number) == p.promoted_from)
            .unwrap();
        assert_eq!((from.fidelity, p.fidelity), (Some(0.25), None), "{p:?}");
        assert_eq!(from.params, p.params);
        let times = all.iter().filter(|r| r.promoted_from == p.promoted_from);
        assert_eq!(times.count(), 1, "trial {} promoted twice", from.number);
    }
    let left = awaiting_promotion(&ScreeningSettings::default(), &slos_of(space), all);
    assert!(left.is_empty(), "passed but never promoted: {left:?}");
}

#[test]
fn tune_with_screening_probes_fewer_requests_and_crowns_a_full_probe_run() {
    let tmp = tempfile::tempdir().unwrap();
    let space = four_wave_space(tmp.path(), 19_100);
    let screened_dir = tmp.path().join("screened");
    let out = finish(tune(
        &space,
        &screened_dir,
        &["--trials", "14", "--screening"],
    ));
    let screened = records(&screened_dir.join(STUDY));

    assert_promotions_hold(&space, &screened);
    let configs: Vec<&TrialRecord> = screened
        .iter()
        .filter(|r| r.repeat_of.is_none() && r.promoted_from.is_none())
        .collect();
    assert_eq!(configs.len(), 14);
    assert!(configs[0].baseline && configs[0].fidelity.is_none());
    let launched = configs
        .iter()
        .filter(|r| !r.baseline && r.ready_s.is_some());
    assert!(launched.clone().count() >= 5);
    let (settings, slos) = (ScreeningSettings::default(), slos_of(&space));
    for r in launched {
        // Screened while screening pays, as judged on the trials journaled before it.
        let pays = screening_pays(&settings, &slos, &screened[..r.number as usize]);
        let fidelity = pays.then_some(0.25);
        assert_eq!(r.fidelity, fidelity, "trial {}", r.number);
    }
    let winner = out
        .lines()
        .find_map(|l| l.strip_prefix("winner: trial "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or_else(|| panic!("no winner line in {out}"));
    let crowned = screened.iter().find(|r| r.number == winner).unwrap();
    assert!(crowned.is_full_probe(), "{crowned:?}");

    // A quarter of the probe for most configs; the baseline, the promotions and the
    // re-validation run it in full. Compared on the study's own configs: another study's
    // configs, SLO verdicts and prunings follow the machine's load.
    let (short, long) = (probe_requests(&screened), unscreened_requests(&screened));
    assert!(
        short < long,
        "probed requests: {short} screened vs {long} for the same configs without screening"
    );
    let report = std::fs::read_to_string(screened_dir.join(STUDY).join("report.md")).unwrap();
    assert!(report.contains("## Screening"), "{report}");
}

#[test]
fn a_screening_run_that_must_send_a_whole_wave_says_the_share_it_sent() {
    let tmp = tempfile::tempdir().unwrap();
    // 40 requests of 16 at once: a quarter would be 10, but a run sends one wave (16, 40%).
    let space = space_with_port(tmp.path(), 19_700);
    let out = tune(&space, tmp.path(), &["--trials", "4", "--screening"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("(screening, 40% of the probe)"), "{stderr}");
    assert!(
        !stderr.contains("(screening, 25% of the probe)"),
        "{stderr}"
    );
}

#[test]
fn a_tuner_killed_around_a_screening_run_that_passed_promotes_it_once_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let space = space_with_port(tmp.path(), 19_300);
    let results = tmp.path().join("results");
    let dir = results.join(STUDY);
    let settings = ScreeningSettings::default();
    let slos = slos_of(&space);
    let mut kills = 0;
    for attempt in 0..8 {
        let args = ["--trials", TRIALS, "--screening"];
        let mut child = spawn_tune(&space, &results, &args, attempt);
        // The moment a screening run that passed is journaled: its promotion starts next.
        let seen = records_so_far(&dir).len();
        wait_while_running(&mut child, || {
            let now = records_so_far(&dir);
            now.len() > seen && !awaiting_promotion(&settings, &slos, &now).is_empty()
        });
        if !kill_if_running(&mut child) {
            break;
        }
        kills += 1;
        if kills == 3 {
            break;
        }
    }
    assert!(kills >= 1, "the study ended before a screening run passed");
    finish(tune(
        &space,
        &results,
        &["--trials", TRIALS, "--screening", "--resume"],
    ));
    assert!(wait_no_processes_under(&results, 5.0).is_empty());
    let all = records(&dir);
    assert_promotions_hold(&space, &all);
    assert!(all.iter().any(|r| r.promoted_from.is_some()));
}

#[test]
fn with_slots_in_parallel_a_promotion_runs_beside_the_trials_in_flight() {
    let tmp = tempfile::tempdir().unwrap();
    let space = space_with_port(tmp.path(), 19_500);
    let args = ["--trials", "10", "--screening", "--parallel", "3"];
    finish(tune(&space, tmp.path(), &args));
    let all = records(&tmp.path().join(STUDY));
    assert_promotions_hold(&space, &all);
    let configs = all
        .iter()
        .filter(|r| r.repeat_of.is_none() && r.promoted_from.is_none());
    assert_eq!(configs.count(), 10);
    let overlaps = |a: &TrialRecord, b: &TrialRecord| {
        a.started_unix < b.started_unix + b.wall_s && b.started_unix < a.started_unix + a.wall_s
    };
    let beside = all.iter().filter(|p| p.promoted_from.is_some()).any(|p| {
        all.iter()
            .any(|r| r.number != p.number && r.slot != p.slot && overlaps(p, r))
    });
    assert!(
        beside,
        "no promotion ran while another slot was busy: {all:#?}"
    );
}

#[test]
fn a_screening_fraction_outside_0_to_1_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let space = space_with_port(tmp.path(), 19_700);
    for bad in ["1.5", "0", "quarter"] {
        let out = tune(&space, tmp.path(), &["--screening", bad])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("`{bad}` is not a share of the probe"))
                && stderr.contains("between 0 and 1"),
            "{stderr}"
        );
    }
    assert!(!tmp.path().join(STUDY).exists(), "a study was started");
}

#[test]
fn promoted_in_place_a_config_goes_on_on_its_screening_server_and_the_report_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let space = four_wave_space(tmp.path(), 19_700);
    let text = std::fs::read_to_string(&space).unwrap();
    let text = format!(
        "{}\n  screening: {{promote_in_place: true}}\n",
        text.trim_end()
    );
    std::fs::write(&space, text).unwrap();
    let dir = tmp.path().join("in-place");
    finish(tune(&space, &dir, &["--trials", "12"]));
    let study = dir.join(STUDY);
    let all = records(&study);

    assert_promotions_hold(&space, &all);
    let promotions = all.iter().filter(|r| r.promoted_from.is_some());
    let mut in_place = 0;
    for full in promotions {
        let from = full.promoted_from.unwrap();
        if !full.continued {
            // ASHA's rule: a run the gate held back may pass once worse runs joined the rung.
            assert!(
                full.number > from + 1,
                "trial {} started a server again",
                full.number
            );
            continue;
        }
        in_place += 1;
        assert_eq!(full.folder_number(), from);
        let screened = all.iter().find(|r| r.number == from).unwrap();
        assert_eq!(screened.metrics["completed"], FULL_PROBE_REQUESTS / 4.0);
        assert_eq!(full.metrics["completed"], FULL_PROBE_REQUESTS);
        let folder = study.join(format!("trial-{from}"));
        assert!(folder.join("probe-checkpoint.json").is_file());
        assert!(!study.join(format!("trial-{}", full.number)).exists());
    }
    assert!(in_place > 0, "no screening run went on in place: {all:#?}");
    let report = std::fs::read_to_string(study.join("report.md")).unwrap();
    assert!(
        report.contains(" in place, going on from the screening run"),
        "{report}"
    );
}
