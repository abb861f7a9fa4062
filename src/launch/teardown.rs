//! Stop a server completely: SIGTERM to its process group, a grace period, SIGKILL, reap,
//! then verify that no member survives, the port is free and no accelerator memory is held.

use super::{group, port};
use anyhow::{bail, Result};
use nix::sys::signal::Signal;
use std::process::Child;
use std::time::{Duration, Instant};

/// How long members may take to vanish after SIGKILL (the kernel needs only a moment).
const AFTER_KILL: Duration = Duration::from_secs(5);
/// How long the port may stay open once the group is gone.
const PORT_RELEASE: Duration = Duration::from_secs(2);
/// How long the driver may take to release the group's accelerator memory.
const GPU_RELEASE: Duration = Duration::from_secs(30);

/// Tear down the group `pgid` led by `leader`, serving on `host:port`.
pub(crate) fn teardown(
    leader: &mut Child,
    pgid: i32,
    grace: Duration,
    host: &str,
    port: u16,
) -> Result<()> {
    let mut pids = group::members(pgid);
    pids.push(pgid);
    group::signal(pgid, Signal::SIGTERM);
    if !group::wait_empty(pgid, Some(&mut *leader), Instant::now() + grace) {
        group::signal(pgid, Signal::SIGKILL);
        if !group::wait_empty(pgid, Some(&mut *leader), Instant::now() + AFTER_KILL) {
            bail!(
                "process group {pgid} still has members {:?} after SIGKILL",
                group::members(pgid)
            );
        }
    }
    // The leader is dead by now; this only collects its status if the loop above did not.
    let _ = leader.wait();
    if !port::wait_free(host, port, Instant::now() + PORT_RELEASE) {
        bail!(
            "{}:{port} still accepts connections after the server's process group {pgid} exited; \
             another process listens there",
            port::connect_host(host)
        );
    }
    wait_gpu_release(&pids)
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
