//! Servers left behind by a tuner that died (`kill -9`, power loss of the terminal, OOM killer).
//!
//! Every server runs in its own process group, so it outlives a tuner killed without warning.
//! Between the server's fork and its exec the launcher writes `server.pid` next to the server
//! log with the boot id, the group id, the leader's start time (clock ticks after boot) and the
//! marker the server's processes carry in their environment (see [`tree`](super::tree)); the
//! server runs only once that record is written, and never when its tuner dies first (the
//! launcher's start gate). Once the server is ready the record also lists every process of its
//! tree, those that left the group with `setsid()` included. Pid and start time together
//! still identify a process after a reboot or once the pid is reused. A clean teardown removes
//! the record. [`reclaim`] runs when a study starts or resumes: it tears down each recorded
//! server's processes (the group, only while its leader is still the recorded process; each
//! recorded descendant that is still the recorded process; whatever carries the server's
//! marker), and never touches anything else.
//!
//! Servers get no parent-death signal: it would reach only the leader (not the group's other
//! members, nor the descendants that left it), it fires when the spawning *thread* ends rather
//! than the tuner, and a leader killed that way leaves its workers orphaned, holding accelerator
//! memory, where only a record can still find them. The record and [`reclaim`] cover a killed
//! tuner instead; a study that is never resumed leaves its servers to the user, each named in
//! its trial folder's `server.pid`, or to the tuner's own command run again with `--resume`
//! (`infertune tune --space SPACE.yaml --resume`, with the same `--results` and `--study`).

use super::teardown::stop_all;
use super::tree::{Proc, Tree};
use super::{group, scratch};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The record's file name, in the folder of the server log (the trial folder).
pub const PID_FILE: &str = "server.pid";

/// A live server's process group, as recorded in [`PID_FILE`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRecord {
    /// Process group id (= the leader's pid).
    pub pgid: i32,
    /// The leader's start time in clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_ticks: u64,
    /// `/proc/sys/kernel/random/boot_id` when recorded.
    pub boot_id: String,
    /// The server's temporary folder, removed once the group is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch: Option<PathBuf>,
    /// The value of `MARKER_VAR` in the server's environment
    /// (absent from records written before servers were marked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    /// Every process of the server's tree when it became ready, those that left the process
    /// group included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub descendants: Vec<Proc>,
}

impl GroupRecord {
    /// The record of the running group led by `pgid`, or `None` when the leader is gone.
    pub(crate) fn of_running(pgid: i32) -> Option<Self> {
        Some(GroupRecord {
            pgid,
            start_ticks: group::start_ticks(pgid)?,
            boot_id: boot_id(),
            scratch: None,
            marker: None,
            descendants: Vec::new(),
        })
    }

    /// The record before the fork, naming only the marker the server will carry (group id and
    /// start time 0, filled in once the server is forked). Versions that wrote it before the
    /// spawn left records of this form; their marker still finds the server's processes.
    pub fn before_spawn(marker: String, scratch: Option<PathBuf>) -> Self {
        GroupRecord {
            pgid: 0,
            start_ticks: 0,
            boot_id: boot_id(),
            scratch,
            marker: Some(marker),
            descendants: Vec::new(),
        }
    }

    /// True while the recorded leader is alive, still leads its group, and is the very process
    /// recorded (same boot, same start time), not a later process that got the same pid.
    pub fn still_running(&self) -> bool {
        self.pgid > 0
            && self.boot_id == boot_id()
            && group::group_of(self.pgid) == Some(self.pgid)
            && group::start_ticks(self.pgid) == Some(self.start_ticks)
    }
}

/// The record's path for a server logging to `log_path`.
pub(crate) fn record_path(log_path: &Path) -> PathBuf {
    log_path
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(PID_FILE)
}

/// Write `record` to `path` (whole or not at all: a temporary file renamed over it).
pub fn write(path: &Path, record: &GroupRecord) -> std::io::Result<()> {
    let tmp = path.with_extension("pid.tmp");
    let written = std::fs::write(&tmp, serde_json::to_string(record)?)
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Tear down every server recorded under `study_dir/*/server.pid` that is still running, and
/// remove the records. Returns one line per record handled, for the user.
pub fn reclaim(study_dir: &Path, grace: Duration) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(study_dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| Some(e.ok()?.path().join(PID_FILE)))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|path| reclaim_one(path, grace))
        .collect()
}

fn reclaim_one(path: &Path, grace: Duration) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let note = match serde_json::from_str::<GroupRecord>(&text) {
        Err(e) => Some(format!(
            "ignoring the unreadable server record {}: {e}",
            path.display()
        )),
        Ok(record) => {
            let (note, gone) = stop_recorded(&record, path, grace);
            if let (true, Some(dir)) = (gone, &record.scratch) {
                scratch::remove(dir);
            }
            note
        }
    };
    let _ = std::fs::remove_file(path);
    note
}

/// Stops what is left of the recorded server: a note for the user, and whether it is gone. The
/// leader may be gone, or its pid may now belong to another process; so may each recorded
/// descendant: those are left alone.
fn stop_recorded(record: &GroupRecord, path: &Path, grace: Duration) -> (Option<String>, bool) {
    if record.boot_id != boot_id() {
        return (None, true);
    }
    let leads = record.still_running();
    let mut roots: Vec<Proc> = record
        .descendants
        .iter()
        .filter(|p| group::start_ticks(p.pid) == Some(p.start_ticks))
        .copied()
        .collect();
    if leads {
        roots.push(Proc {
            pid: record.pgid,
            start_ticks: record.start_ticks,
        });
    }
    let mut tree = Tree::new(record.marker.clone(), roots);
    if !leads && tree.refresh().is_empty() {
        return (None, true);
    }
    let pgid = record.pgid;
    let server = if pgid > 0 {
        format!("server process group {pgid}")
    } else {
        "the processes of a server".to_string()
    };
    match stop_all(leads.then_some(pgid), &mut tree, None, grace) {
        Ok(()) => {
            let note = format!(
                "stopped {server} left running by an earlier run ({})",
                path.display()
            );
            (Some(note), true)
        }
        Err(left) => {
            let note = format!(
                "processes {left:?} of {server} left by an earlier run ({}) are still alive \
                 after SIGKILL",
                path.display()
            );
            (Some(note), false)
        }
    }
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// A `sleep` in its own process group, recorded in `trial` of a study in `dir` (with its
    /// record changed by `alter` first); returns the trial folder, the child and its group.
    fn recorded_sleeper(
        dir: &Path,
        trial: &str,
        alter: impl FnOnce(&mut GroupRecord),
    ) -> (PathBuf, std::process::Child, i32) {
        let trial = dir.join(trial);
        std::fs::create_dir_all(&trial).unwrap();
        let child = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("sleep must be available");
        let pgid = child.id() as i32;
        let mut record = GroupRecord::of_running(pgid).unwrap();
        alter(&mut record);
        write(&trial.join(PID_FILE), &record).unwrap();
        (trial, child, pgid)
    }

    #[test]
    fn reclaims_a_recorded_group_that_is_still_running() {
        let dir = tempfile::tempdir().unwrap();
        let (trial, mut child, pgid) = recorded_sleeper(dir.path(), "trial-3", |_| {});
        let notes = reclaim(dir.path(), Duration::from_secs(2));
        let _ = child.wait();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains(&pgid.to_string()), "{notes:?}");
        assert!(group::members(pgid).is_empty());
        assert!(!trial.join(PID_FILE).exists());
    }

    #[test]
    fn the_temporary_folder_of_a_reclaimed_group_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().join("infertune-1-0");
        std::fs::create_dir(&scratch).unwrap();
        std::fs::write(scratch.join("0123-ipc"), "").unwrap();
        let recorded = scratch.clone();
        let (_, mut child, pgid) = recorded_sleeper(dir.path(), "trial-1", |record| {
            record.scratch = Some(recorded);
        });
        let notes = reclaim(dir.path(), Duration::from_secs(2));
        let _ = child.wait();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(group::members(pgid).is_empty());
        assert!(!scratch.exists());
    }

    /// A tuner killed between the spawn and the record of the group leaves only the record
    /// written before the spawn: the server's marker finds its processes.
    #[test]
    fn reclaims_a_server_recorded_only_before_its_spawn() {
        let dir = tempfile::tempdir().unwrap();
        let trial = dir.path().join("trial-2");
        std::fs::create_dir_all(&trial).unwrap();
        let marker = Tree::new_marker();
        write(
            &trial.join(PID_FILE),
            &GroupRecord::before_spawn(marker.clone(), None),
        )
        .unwrap();
        let mut child = Command::new("sleep")
            .arg("30")
            .env(super::super::tree::MARKER_VAR, &marker)
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("sleep must be available");
        let pgid = child.id() as i32;
        let notes = reclaim(dir.path(), Duration::from_secs(2));
        let alive = group::members(pgid);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(alive.is_empty(), "{alive:?} survived the reclaim");
        assert!(!trial.join(PID_FILE).exists());
    }

    #[test]
    fn leaves_a_process_alone_when_the_start_time_differs() {
        let dir = tempfile::tempdir().unwrap();
        let (trial, mut child, pgid) =
            recorded_sleeper(dir.path(), "trial-0", |record| record.start_ticks += 1);
        let notes = reclaim(dir.path(), Duration::from_secs(2));
        let alive = group::members(pgid);
        let _ = child.kill();
        let _ = child.wait();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(alive, vec![pgid]);
        assert!(!trial.join(PID_FILE).exists(), "a stale record is removed");
    }
}
