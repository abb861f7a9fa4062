//! Every process a server started, including those that left its process group.
//!
//! A server's child that calls `setsid()` (a daemon, a Ray worker, a double-forking launch
//! wrapper) is out of reach of a signal to the group, and once its parent exits it is a child of
//! init, so the parent links no longer lead to it either. Each server therefore gets a marker in
//! its environment, `MARKER_VAR` set to a value no other server has, which every descendant
//! inherits across forks, `setsid()` and `exec`. A server's tree is the processes that carry
//! its marker, plus every descendant (by parent link) of those and of the processes recorded
//! earlier, which also covers a child started with a cleared environment while its parent
//! lives. Processes are named by pid and start time, so a reused pid is never mistaken for one
//! of ours, and nothing is ever chosen by its name.

use super::group;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// The environment variable that marks a server's processes.
pub(crate) const MARKER_VAR: &str = "INFERTUNE_SERVER";

/// One process, named so that a later process given the same pid is not taken for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Proc {
    /// Process id.
    pub pid: i32,
    /// Start time in clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_ticks: u64,
}

impl Proc {
    /// The running process `pid`, or `None` when it is gone.
    pub(crate) fn of_running(pid: i32) -> Option<Proc> {
        Some(Proc {
            pid,
            start_ticks: group::start_ticks(pid)?,
        })
    }

    /// Send `signal` when the process is still the one named (same start time).
    pub fn signal(&self, signal: Signal) {
        if group::start_ticks(self.pid) == Some(self.start_ticks) {
            let _ = kill(Pid::from_raw(self.pid), signal);
        }
    }
}

/// The processes of one server, refreshed from `/proc` on demand.
#[derive(Clone, Debug)]
pub(crate) struct Tree {
    marker: Option<String>,
    known: Vec<Proc>,
}

impl Tree {
    /// The tree rooted at `roots` whose processes carry `marker` (`None` for a record written
    /// before servers were marked).
    pub fn new(marker: Option<String>, roots: Vec<Proc>) -> Tree {
        Tree {
            marker,
            known: roots,
        }
    }

    /// A fresh marker value: this process's id and 64 random bits.
    pub(crate) fn new_marker() -> String {
        format!("{}-{:016x}", std::process::id(), rand::random::<u64>())
    }

    /// The live (non-zombie) processes of the tree now; those found are remembered, so their
    /// children are found through them later.
    pub(crate) fn refresh(&mut self) -> Vec<Proc> {
        let table = snapshot();
        let mut inside: HashSet<Proc> = self.known.iter().copied().collect();
        if let Some(marker) = &self.marker {
            let entry = format!("{MARKER_VAR}={marker}");
            inside.extend(
                table
                    .iter()
                    .filter(|p| !p.zombie && carries(p.proc.pid, &entry))
                    .map(|p| p.proc),
            );
        }
        // Children of members are members, until no new one turns up.
        loop {
            let pids: HashSet<i32> = table
                .iter()
                .filter(|p| inside.contains(&p.proc))
                .map(|p| p.proc.pid)
                .collect();
            let before = inside.len();
            inside.extend(
                table
                    .iter()
                    .filter(|p| pids.contains(&p.parent))
                    .map(|p| p.proc),
            );
            if inside.len() == before {
                break;
            }
        }
        let live: Vec<Proc> = table
            .iter()
            .filter(|p| !p.zombie && inside.contains(&p.proc))
            .map(|p| p.proc)
            .collect();
        // Zombies stay known until reaped: their children still name them as parent.
        self.known = table
            .iter()
            .filter(|p| inside.contains(&p.proc))
            .map(|p| p.proc)
            .collect();
        live
    }

    /// Send `signal` to every live process of the tree.
    pub fn signal(&mut self, signal: Signal) {
        for proc in self.refresh() {
            proc.signal(signal);
        }
    }
}

/// One row of the process table.
struct Row {
    proc: Proc,
    parent: i32,
    zombie: bool,
}

fn snapshot() -> Vec<Row> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let fields = group::stat_fields(pid)?;
            Some(Row {
                proc: Proc {
                    pid,
                    start_ticks: fields.get(19)?.parse().ok()?,
                },
                parent: fields.get(1)?.parse().ok()?,
                zombie: fields.first()?.starts_with('Z'),
            })
        })
        .collect()
}

/// True when process `pid`'s environment holds the entry `entry` (`NAME=value`).
fn carries(pid: i32, entry: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|b| *b == 0).any(|e| e == entry.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    #[test]
    fn finds_a_marked_process_that_left_the_tree_and_its_unmarked_children() {
        let marker = Tree::new_marker();
        // A marked shell starting an unmarked child, both in a group of their own.
        let mut child = Command::new("sh")
            .args(["-c", "env -u INFERTUNE_SERVER sleep 30 & wait"])
            .env(MARKER_VAR, &marker)
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let shell = child.id() as i32;
        let mut tree = Tree::new(Some(marker), Vec::new());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let found = loop {
            let found = tree.refresh();
            if found.len() >= 2 || std::time::Instant::now() > deadline {
                break found;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let _ = nix::sys::signal::killpg(Pid::from_raw(shell), Signal::SIGKILL);
        let _ = child.wait();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().any(|p| p.pid == shell));
        assert!(Tree::new(Some(Tree::new_marker()), Vec::new())
            .refresh()
            .is_empty());
    }
}
