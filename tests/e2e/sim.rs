//! End to end on the simulator: the real binary tunes real `sim serve` processes through the real
//! supervisor; the journal, CSV, best.json, best.sh and report agree; best.sh starts the winner;
//! the same seed gives the same configs. Studies run one at a time (timings are measured).

use crate::kit::e2e_sim_common;

use crate::kit::sim_server::{get, is_ok};
use crate::kit::study_fakes::search_configs;
use assert_cmd::Command;
use e2e_sim_common::{
    processes_under, records, space_with_port, tune, wait_no_processes_under, STUDY,
};
use infertune::record::{FailureKind, Outcome, TrialRecord};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One study at a time: the SLOs are real timings on a small machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run_study(results: &Path, port: u16, extra: &[&str]) -> Vec<TrialRecord> {
    let space = space_with_port(results, port);
    Command::from_std(tune(&space, results, extra))
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    records(&results.join(STUDY))
}

#[test]
fn a_study_on_the_simulator_agrees_across_every_view_and_its_winner_starts() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let space = space_with_port(tmp.path(), 18300);
    let out = Command::from_std(tune(&space, tmp.path(), &[]))
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let dir = tmp.path().join(STUDY);
    assert_eq!(
        wait_no_processes_under(tmp.path(), 5.0),
        Vec::<i32>::new(),
        "no server may outlive the tune"
    );
    let all = records(&dir);
    assert!(all.len() >= 8, "{} records", all.len());
    assert_outcomes(&all);
    let winner = assert_views_agree(&dir, &all);
    assert!(
        stdout.contains(&format!("winner: trial {winner}")),
        "{stdout}"
    );
    assert!(
        stdout.contains("gain") && stdout.contains("n = 2") && !stdout.contains("± 0.00"),
        "the gain over the re-validated baseline: {stdout}"
    );
    start_best_sh(&dir);
}

/// Rejected before launch (enqueued), OOM at start (classified from the server's log), an SLO
/// breach, and the baseline launched first.
fn assert_outcomes(all: &[TrialRecord]) {
    let rejected = &all[1];
    assert!(
        matches!(&rejected.outcome, Outcome::Rejected { rule, .. } if rule == "whole_prompt_fits_without_chunking"),
        "{:?}",
        rejected.outcome
    );
    assert!(
        rejected.ready_s.is_none(),
        "a rejected config is never launched"
    );
    let oom = &all[2];
    assert!(
        matches!(&oom.outcome, Outcome::Failed { kind: FailureKind::Oom, message } if message.contains("KV cache")),
        "{:?}",
        oom.outcome
    );
    let slow = &all[3];
    assert!(
        matches!(slow.outcome, Outcome::Infeasible | Outcome::Pruned { .. })
            && slow
                .violations
                .iter()
                .any(|v| v.to_string().contains("ttft")),
        "one sequence for sixteen clients must break the TTFT bound: {:?} {:?}",
        slow.outcome,
        slow.violations
    );
    assert!(
        all[0].is_baseline() && all[0].ready_s.is_some(),
        "{:?}",
        all[0]
    );
}

/// The winner of best.json is the same trial, config and value in the journal, trials.csv,
/// best.sh and report.md; returns its number.
fn assert_views_agree(dir: &Path, all: &[TrialRecord]) -> u32 {
    let best = read_best(dir);
    let number = best["trial"].as_u64().expect("best.json names its trial") as u32;
    let mean = best["objective"]["mean"].as_f64().unwrap();
    let record = all.iter().find(|r| r.id.number == number).unwrap();
    assert!(record.is_feasible(), "{record:?}");
    assert_eq!(
        best["params"],
        serde_json::to_value(&record.params).unwrap()
    );
    let runs: Vec<f64> = all
        .iter()
        .filter(|r| r.id.number == number || r.repeat_of() == Some(number))
        .map(|r| r.value.unwrap())
        .collect();
    let journal_mean = runs.iter().sum::<f64>() / runs.len() as f64;
    assert!(
        (journal_mean - mean).abs() <= 1e-6 * mean,
        "{journal_mean} vs {mean}"
    );

    let mut csv = csv::Reader::from_path(dir.join("trials.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let row = csv
        .records()
        .map(|r| r.unwrap())
        .find(|r| r[column("number")] == number.to_string())
        .expect("the winner has a CSV row");
    assert_eq!(&row[column("status")], "feasible");
    let csv_value: f64 = row[column("value")].parse().unwrap();
    assert!((csv_value - record.value.unwrap()).abs() <= 1e-9 * csv_value);
    for (name, value) in &record.params {
        assert_eq!(row[column(&format!("param_{name}"))], value.to_string());
    }

    let script = std::fs::read_to_string(dir.join("best.sh")).unwrap();
    let exec: Vec<&str> = script.lines().last().unwrap().split_whitespace().collect();
    let command = command_of(&best);
    assert_eq!(exec[0], "exec");
    assert_eq!(exec[1..], command[..], "{script}");
    assert!(script.contains(&format!("(trial {number})")), "{script}");

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("Trial {number}: output_throughput = {mean:.2}")),
        "{report}"
    );
    for (name, value) in &record.params {
        assert!(report.contains(&format!("| {name} | {value} |")), "{name}");
    }
    number
}

/// The study's best.json.
fn read_best(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("best.json")).unwrap()).unwrap()
}

/// The launch command recorded in best.json, word by word.
fn command_of(best: &serde_json::Value) -> Vec<&str> {
    best["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

/// Run best.sh in its own process group: the winner serves its model; then stop the group and
/// check that nothing of it remains.
fn start_best_sh(dir: &Path) {
    let best = read_best(dir);
    let command = command_of(&best);
    let port = command[command.iter().position(|a| *a == "--port").unwrap() + 1];
    let authority = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new(dir.join("best.sh"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut health = None;
    while health.is_none() && Instant::now() < deadline {
        health = get(&authority, "/health").filter(|r| is_ok(r));
        std::thread::sleep(Duration::from_millis(50));
    }
    let models = get(&authority, "/v1/models");
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM);
    let _ = child.wait();
    assert!(
        health.is_some(),
        "best.sh never served /health on {authority}"
    );
    let models = models.unwrap_or_default();
    assert!(models.contains("qwen2.5-32b"), "{models}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while nix::sys::signal::killpg(pgid, None).is_ok() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        nix::sys::signal::killpg(pgid, None).is_err(),
        "best.sh's process group {pgid} must be gone"
    );
    assert!(processes_under(dir).is_empty());
}

#[test]
fn the_same_seed_gives_the_same_configs_and_another_seed_does_not() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let first = search_configs(&run_study(a.path(), 18400, &[]));
    let second = search_configs(&run_study(b.path(), 18400, &[]));
    let other = search_configs(&run_study(c.path(), 18400, &["--seed", "12"]));
    assert_eq!(first.len(), 9);
    assert_eq!(first, second, "same seed, same configs");
    // Baseline and enqueued configs come first whatever the seed; the sampled ones differ.
    assert_eq!(first[..4], other[..4]);
    assert_ne!(first[4..], other[4..], "another seed samples other configs");
}

#[test]
fn the_same_command_again_shows_a_finished_study_and_continues_an_unfinished_one() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let first = run_study(tmp.path(), 18700, &["--trials", "2"]);
    let space = space_with_port(tmp.path(), 18700);
    let again = Command::from_std(tune(&space, tmp.path(), &["--trials", "2"]))
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&again.get_output().stdout).into_owned();
    assert!(stdout.contains("winner: trial"), "{stdout}");
    assert!(
        stdout.contains("already complete") && stdout.contains("--study NEW-NAME"),
        "{stdout}"
    );
    assert_eq!(records(&tmp.path().join(STUDY)), first, "nothing reran");

    let more = Command::from_std(tune(&space, tmp.path(), &["--trials", "3"]))
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&more.get_output().stderr).into_owned();
    assert!(stderr.contains("picking up the study in"), "{stderr}");
    let grown = records(&tmp.path().join(STUDY));
    assert_eq!(search_configs(&grown).len(), 3);
    assert_eq!(
        grown[..first.len()],
        first[..],
        "the earlier trials are kept"
    );
}
