//! Process groups: who is still in one and signalling it; what `/proc/<pid>/stat` says of a
//! process; who holds accelerator memory.

use crate::util::process::{on_path, run_with_timeout};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::time::Duration;

/// Live members of process group `pgid` (zombies excluded: they hold no resources), found by
/// scanning `/proc`.
pub fn members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| stat_of(*pid).is_some_and(|(state, group)| group == pgid && state != 'Z'))
        .collect()
}

/// `(state, pgrp)` of a process from `/proc/<pid>/stat`.
fn stat_of(pid: i32) -> Option<(char, i32)> {
    let fields = stat_fields(pid)?;
    let state = fields.first()?.chars().next()?;
    let pgrp = fields.get(2)?.parse().ok()?;
    Some((state, pgrp))
}

/// When process `pid` started, in clock ticks after boot (`/proc/<pid>/stat` field 22); with
/// the pid it identifies a process even after the pid is reused.
pub fn start_ticks(pid: i32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// The fields of `/proc/<pid>/stat` after the command name, from the state (field 3) on.
pub(crate) fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; fields resume after the last ')'.
    Some(
        text[text.rfind(')')? + 1..]
            .split_whitespace()
            .map(String::from)
            .collect(),
    )
}

/// The process group of `pid`, when it is alive (not a zombie).
pub fn group_of(pid: i32) -> Option<i32> {
    stat_of(pid).and_then(|(state, group)| (state != 'Z').then_some(group))
}

/// Send `signal` to every member of group `pgid`; a group that is already gone is fine.
pub fn signal(pgid: i32, signal: Signal) {
    // ESRCH (no such group) is the only error possible for our own group, and means done.
    let _ = killpg(Pid::from_raw(pgid), signal);
}

/// How long `nvidia-smi` may take (a wedged driver can hang it).
const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(15);

/// PIDs holding accelerator memory per `nvidia-smi`, or `None` where it is not installed.
pub(crate) fn gpu_pids() -> Option<Vec<i32>> {
    if !on_path("nvidia-smi") {
        return None;
    }
    let out = run_with_timeout(
        "nvidia-smi",
        &["--query-compute-apps=pid", "--format=csv,noheader,nounits"],
        NVIDIA_SMI_TIMEOUT,
    )
    .ok()?;
    Some(
        out.stdout
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect(),
    )
}
