//! Shared by the end-to-end tests that run real studies on the simulator: the study space, the
//! tuner's command line, the journal, and the processes a study leaves behind.
#![allow(dead_code)]

use infertune::record::TrialRecord;
use infertune::study::journal;
use std::path::{Path, PathBuf};

/// The space every simulator study here runs (see its header for the landscape).
pub const FIXTURE: &str = "tests/fixtures/spaces/e2e-sim.yaml";

/// Name of the study folder under `--results` (the space's `name`).
pub const STUDY: &str = "e2e-sim";

/// Copy the fixture into `dir` with its ports starting at `port`, so studies of different tests
/// never compete for a port; returns the copy's path.
pub fn space_with_port(dir: &Path, port: u16) -> PathBuf {
    let text = std::fs::read_to_string(FIXTURE).expect("the e2e fixture space must exist");
    assert!(
        text.contains("port: 18300"),
        "the fixture must state `port: 18300`"
    );
    let moved = text.replace("port: 18300", &format!("port: {port}"));
    let path = dir.join("e2e-sim.yaml");
    std::fs::write(&path, moved).expect("cannot write the space copy");
    path
}

/// `infertune tune` of `space` with results under `results`, plus `extra` arguments.
pub fn tune(space: &Path, results: &Path, extra: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("infertune"));
    command
        .args(["tune", "--space"])
        .arg(space)
        .arg("--results")
        .arg(results)
        .args(extra);
    command
}

/// A tuner started in the background with its output discarded: [`tune`] with `args`, plus
/// `--resume` from the second `attempt` on.
pub fn spawn_tune(
    space: &Path,
    results: &Path,
    args: &[&str],
    attempt: usize,
) -> std::process::Child {
    let resume: &[&str] = if attempt == 0 { &[] } else { &["--resume"] };
    tune(space, results, &[args, resume].concat())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cannot start the tuner")
}

/// Kills the tuner `child` (SIGKILL) and reaps it; true when it was still running.
pub fn kill_if_running(child: &mut std::process::Child) -> bool {
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    running
}

/// The records of the study in `study_dir` (a torn last line is tolerated).
pub fn records(study_dir: &Path) -> Vec<TrialRecord> {
    journal::read_records(study_dir).expect("the journal must parse")
}

/// The records journaled so far: none before the study's journal exists.
pub fn records_so_far(study_dir: &Path) -> Vec<TrialRecord> {
    if study_dir.join("journal.jsonl").exists() {
        records(study_dir)
    } else {
        Vec::new()
    }
}

/// Waits (up to three minutes) until `ready()` holds or the tuner `child` has exited, so a test
/// stops the tuner at the moment it means to, however fast or slow the machine is; true when
/// `ready()` held.
pub fn wait_while_running(child: &mut std::process::Child, ready: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    loop {
        if ready() {
            return true;
        }
        if child.try_wait().unwrap().is_some() || std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Live processes whose working folder lies under `dir`: servers of a study in `dir` (every
/// trial's server runs in its trial folder).
pub fn processes_under(dir: &Path) -> Vec<i32> {
    let dir = dir.canonicalize().expect("the folder must exist");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rfind(')').map(|i| s[i + 1..].trim_start().to_string()))
                .is_some_and(|rest| !rest.starts_with('Z'));
            alive
                && std::fs::read_link(format!("/proc/{pid}/cwd"))
                    .is_ok_and(|cwd| cwd.starts_with(&dir))
        })
        .collect()
}

/// Wait up to `seconds` for `processes_under(dir)` to be empty; returns what is left.
pub fn wait_no_processes_under(dir: &Path, seconds: f64) -> Vec<i32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds);
    loop {
        let left = processes_under(dir);
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Run a tune to its end; it must succeed.
pub fn finish(mut command: std::process::Command) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The journal of a study: every line a whole record.
pub fn strictly_parsed(study_dir: &Path) -> Vec<TrialRecord> {
    std::fs::read_to_string(study_dir.join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every journal line parses"))
        .collect()
}
