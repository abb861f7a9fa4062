//! Stop a server completely: SIGTERM to its process group and to every process of its tree (the
//! descendants that left the group included), a grace period, SIGKILL, reap, then verify that
//! no process survives, the port is free and no accelerator memory is held.

use super::tree::Tree;
use super::{group, port};
use anyhow::{bail, Result};
use nix::sys::signal::Signal;
use std::process::Child;
use std::time::{Duration, Instant};

/// How long processes may take to vanish after SIGKILL (the kernel needs only a moment).
const AFTER_KILL: Duration = Duration::from_secs(5);
/// How long the port may stay open once the group is gone.
const PORT_RELEASE: Duration = Duration::from_secs(2);
/// How long the driver may take to release the group's accelerator memory.
const GPU_RELEASE: Duration = Duration::from_secs(30);
/// How often the processes are re-examined while waiting.
const POLL: Duration = Duration::from_millis(10);

/// Tear down the server led by `leader` (group `pgid`, processes `tree`), serving on `host:port`.
pub(crate) fn teardown(
    leader: &mut Child,
    pgid: i32,
    tree: &mut Tree,
    grace: Duration,
    host: &str,
    port: u16,
) -> Result<()> {
    let mut pids = group::members(pgid);
    pids.push(pgid);
    pids.extend(tree.refresh().iter().map(|p| p.pid));
    if let Err(left) = stop_all(Some(pgid), tree, Some(&mut *leader), grace) {
        bail!(
            "processes {left:?} of the server (process group {pgid}) are still alive after SIGKILL"
        );
    }
    // The leader is dead by now; this only collects its status if the loop above did not.
    let _ = leader.wait();
    if !port::wait_free(host, port, Instant::now() + PORT_RELEASE) {
        bail!(
            "{}:{port} is still listened on after the server's processes exited; another \
             process listens there",
            port::connect_host(host)
        );
    }
    wait_gpu_release(&pids)
}

/// Stop the group `pgid` (only when it is known to be the server's) and every process of `tree`:
/// SIGTERM, up to `grace` for them to exit, then SIGKILL; reaps `leader`, our child, when it
/// exits. On failure, the pids still alive.
pub(crate) fn stop_all(
    pgid: Option<i32>,
    tree: &mut Tree,
    mut leader: Option<&mut Child>,
    grace: Duration,
) -> Result<(), Vec<i32>> {
    send(pgid, tree, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    if wait_gone(pgid, tree, leader.as_deref_mut(), deadline, None).is_empty() {
        return Ok(());
    }
    send(pgid, tree, Signal::SIGKILL);
    let deadline = Instant::now() + AFTER_KILL;
    let left = wait_gone(pgid, tree, leader, deadline, Some(Signal::SIGKILL));
    if left.is_empty() {
        Ok(())
    } else {
        Err(left)
    }
}

fn send(pgid: Option<i32>, tree: &mut Tree, signal: Signal) {
    if let Some(pgid) = pgid {
        group::signal(pgid, signal);
    }
    tree.signal(signal);
}

/// Wait until the group and the tree have no live process or `deadline`, sending `resend` to
/// any that turns up meanwhile; returns the pids still alive.
fn wait_gone(
    pgid: Option<i32>,
    tree: &mut Tree,
    mut leader: Option<&mut Child>,
    deadline: Instant,
    resend: Option<Signal>,
) -> Vec<i32> {
    loop {
        if let Some(child) = leader.as_deref_mut() {
            let _ = child.try_wait();
        }
        let mut left = pgid.map(group::members).unwrap_or_default();
        left.extend(tree.refresh().iter().map(|p| p.pid));
        if left.is_empty() || Instant::now() >= deadline {
            left.sort_unstable();
            left.dedup();
            return left;
        }
        if let Some(signal) = resend {
            send(pgid, tree, signal);
        }
        std::thread::sleep(POLL);
    }
}

/// Where `nvidia-smi` exists, wait until none of `pids` holds accelerator memory.
fn wait_gpu_release(pids: &[i32]) -> Result<()> {
    let deadline = Instant::now() + GPU_RELEASE;
    loop {
        let Some(holders) = group::gpu_pids() else {
            return Ok(());
        };
        let still: Vec<i32> = holders.into_iter().filter(|p| pids.contains(p)).collect();
        if still.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("processes {still:?} of the stopped server still hold GPU memory per nvidia-smi");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
