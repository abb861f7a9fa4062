//! The start window: a tuner killed after a server's fork, before the server is recorded (the
//! window widened by the launcher's test hook), leaves no server running, not even before a
//! resume; the resumed study runs the trial again and ends with nothing left behind.

use crate::kit::e2e_sim_common::{
    finish, kill_if_running, processes_under, records, space_with_port, tune, wait_while_running,
    STUDY,
};
use infertune::record::Outcome;
use std::time::{Duration, Instant};

/// The launcher's test hook: how long a forked server waits before it asks to be recorded.
const DELAY_VAR: &str = "INFERTUNE_TEST_START_DELAY";

/// How long the fork waits: the tuner is killed well inside it.
const DELAY: Duration = Duration::from_secs(2);

#[test]
fn a_tuner_killed_between_fork_and_record_leaves_no_server() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let space = space_with_port(tmp.path(), 18640);
    let mut tuner = tune(&space, &results, &["--trials", "1"])
        .env(DELAY_VAR, humantime::format_duration(DELAY).to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let killed = tuner.id() as i32;
    let fork = std::cell::RefCell::new(None);
    let reached = wait_while_running(&mut tuner, || {
        *fork.borrow_mut() = forked_unexeced(killed);
        fork.borrow().is_some()
    });
    assert!(
        kill_if_running(&mut tuner) && reached,
        "the tuner never forked a server"
    );
    let (fork, cmdline) = fork.take().unwrap();
    // The fork ends, or turns into the server, once its delay is over.
    let deadline = Instant::now() + DELAY + Duration::from_secs(60);
    while is_unexeced_fork(fork, &cmdline) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Time for a server that did start to show its marker.
    std::thread::sleep(Duration::from_millis(500));
    let marked = marked_by(killed);
    let left = processes_under(&results);
    let seen: Vec<String> = marked
        .iter()
        .chain(&left)
        .map(|pid| {
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!(
                "{pid}: {}",
                String::from_utf8_lossy(&line).replace('\0', " ")
            )
        })
        .collect();
    for pid in marked.iter().chain(&left) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_eq!(
        marked,
        Vec::<i32>::new(),
        "a server of the killed tuner started after its death: {seen:?}"
    );
    assert_eq!(
        left,
        Vec::<i32>::new(),
        "processes left in the study folder: {seen:?}"
    );

    finish(tune(&space, &results, &["--trials", "1", "--resume"]));
    assert_eq!(processes_under(&results), Vec::<i32>::new());
    let done = records(&results.join(STUDY));
    assert!(
        done.iter().any(|r| r.id.number == 0
            && !matches!(r.outcome, Outcome::Failed { .. } | Outcome::Crashed { .. })),
        "the trial in flight was not run again: {done:?}"
    );
}

/// A child of `tuner` in a process group of its own that has not exec'd yet (its command line
/// is still the tuner's): a server between its fork and its exec, and that command line.
fn forked_unexeced(tuner: i32) -> Option<(i32, Vec<u8>)> {
    let cmdline = std::fs::read(format!("/proc/{tuner}/cmdline")).ok()?;
    let fork = children(tuner)
        .into_iter()
        .find(|pid| is_unexeced_fork(*pid, &cmdline))?;
    Some((fork, cmdline))
}

/// True while `pid` is alive, leads its own group and still runs the command line `cmdline`.
fn is_unexeced_fork(pid: i32, cmdline: &[u8]) -> bool {
    let own_group = stat(pid).is_some_and(|(state, _, pgrp)| state != 'Z' && pgrp == pid);
    own_group && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == cmdline)
}

/// Live children of `parent`.
fn children(parent: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|pid| stat(*pid).is_some_and(|(_, ppid, _)| ppid == parent))
        .collect()
}

/// Live processes whose environment carries a server marker of the tuner `tuner` (its pid
/// starts each marker it hands out).
fn marked_by(tuner: i32) -> Vec<i32> {
    let prefix = format!("INFERTUNE_SERVER={tuner}-");
    all_pids()
        .into_iter()
        .filter(|pid| stat(*pid).is_some_and(|(state, _, _)| state != 'Z'))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|entry| entry.starts_with(prefix.as_bytes()))
            })
        })
        .collect()
}

fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `(state, parent, process group)` of `pid`.
fn stat(pid: i32) -> Option<(char, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = text[text.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}
