//! The start gate: a server's process waits between fork and exec until its record is written.
//!
//! `Command::spawn` returns only once the child has exec'd, so a tuner that recorded the server
//! after `spawn` returned could be killed in between and leave a server nobody recorded. Here
//! the child, forked in its own process group, sends its pid through one pipe and then blocks
//! on another (the gate) before it execs. A thread of the tuner reads the pid, writes the
//! record, and opens the gate with one byte; the child execs only then. Should the tuner die
//! first, its end of the gate closes, the child reads end-of-file and exits without ever
//! becoming the server. Both pipes close on exec, so the server inherits neither.
//!
//! Starts are serialized: a child forked here inherits the gate of every start already in
//! flight until it execs, so were two forks to overlap, each could hold the other's gate open
//! after the tuner died. One at a time, a child only ever holds the gates of earlier starts,
//! and the last child's gate closes with the tuner, then the one before it, and so on.
//!
//! Test hook: `INFERTUNE_TEST_START_DELAY` (a humantime duration) makes the child wait that
//! long after the fork, before it sends its pid, so that a test can kill the tuner while a
//! server is forked and not yet recorded.

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::unistd::{getpid, pipe2, read, write};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::Duration;

/// The test hook's variable (see the module doc).
pub const DELAY_VAR: &str = "INFERTUNE_TEST_START_DELAY";

/// Held from the pipes' creation until the child has exec'd (see the module doc).
static STARTING: Mutex<()> = Mutex::new(());

/// The byte that opens the gate; anything else (or end-of-file) makes the child exit.
const OPEN: u8 = 1;

/// Why a gated start failed.
#[derive(Debug)]
pub(crate) enum GateError {
    /// The program could not be started (not found, not executable, ...).
    Spawn(std::io::Error),
    /// The record could not be written, so the child exited before its exec.
    Record(String),
}

/// Spawn `command` (which must start a new process group), calling `record(pid)` between the
/// fork and the exec: the program runs only once `record` has returned `Ok`.
pub(crate) fn spawn(
    command: &mut Command,
    record: impl FnOnce(i32) -> Result<(), String> + Send,
) -> Result<Child, GateError> {
    let _one_at_a_time = STARTING.lock().unwrap_or_else(|e| e.into_inner());
    let pipe = || pipe2(OFlag::O_CLOEXEC).map_err(|e| GateError::Spawn(e.into()));
    let (hello_in, hello_out) = pipe()?;
    let (gate_in, gate_out) = pipe()?;
    let child_ends = Ends {
        hello: hello_out.as_raw_fd(),
        gate: gate_in.as_raw_fd(),
        tuner_hello: hello_in.as_raw_fd(),
        tuner_gate: gate_out.as_raw_fd(),
    };
    let delay = test_delay();
    // SAFETY: the closure runs in the forked child and only sleeps, calls close, getpid, read,
    // write and builds an io::Error from an errno: all async-signal-safe, nothing allocates.
    unsafe {
        command.pre_exec(move || wait_at_gate(child_ends, delay));
    }
    std::thread::scope(|scope| {
        let keeper = scope.spawn(|| keep_gate(&hello_in, gate_out, record));
        let spawned = command.spawn();
        if spawned.is_err() {
            // The child may have failed before it sent its pid: wake the keeper with pid 0.
            let _ = write(&hello_out, &0i32.to_ne_bytes());
        }
        let kept = keeper.join().unwrap_or(Ok(()));
        match (spawned, kept) {
            (Ok(child), _) => Ok(child),
            (Err(_), Err(why)) => Err(GateError::Record(why)),
            (Err(e), Ok(())) => Err(GateError::Spawn(e)),
        }
    })
}

/// The tuner's side: read the child's pid, record it, and open the gate when that worked (a
/// closed gate makes the child exit). `Err` only when the record failed.
fn keep_gate(
    hello: &OwnedFd,
    gate: OwnedFd,
    record: impl FnOnce(i32) -> Result<(), String>,
) -> Result<(), String> {
    let mut pid = [0u8; 4];
    if read_exact(hello.as_raw_fd(), &mut pid).is_err() {
        return Ok(());
    }
    let pid = i32::from_ne_bytes(pid);
    if pid <= 0 {
        return Ok(());
    }
    let recorded = record(pid);
    let byte = if recorded.is_ok() { OPEN } else { 0 };
    // The child may already be gone (EPIPE): nothing waits for the byte then.
    let _ = write(&gate, &[byte]);
    recorded
}

/// The pipes' descriptors as the forked child inherits them.
#[derive(Clone, Copy)]
struct Ends {
    /// The child's end of the pid pipe.
    hello: RawFd,
    /// The child's end of the gate.
    gate: RawFd,
    /// The tuner's ends, closed first in the child: a child holding the gate's write end
    /// itself would never see it close with the tuner.
    tuner_hello: RawFd,
    tuner_gate: RawFd,
}

/// The child's side, between fork and exec: say its pid, then wait for the gate to open.
/// Async-signal-safe (see [`spawn`]).
fn wait_at_gate(ends: Ends, delay: Option<Duration>) -> std::io::Result<()> {
    let _ = nix::unistd::close(ends.tuner_hello);
    let _ = nix::unistd::close(ends.tuner_gate);
    if let Some(delay) = delay {
        std::thread::sleep(delay);
    }
    let (hello, gate) = (ends.hello, ends.gate);
    let pid = getpid().as_raw().to_ne_bytes();
    // SAFETY: both descriptors stay open in the child until its exec (they close on exec).
    let hello = unsafe { BorrowedFd::borrow_raw(hello) };
    let mut sent = 0;
    while sent < pid.len() {
        match write(hello, &pid[sent..]) {
            Ok(n) => sent += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut byte = [0u8];
    match read_exact(gate, &mut byte) {
        Ok(()) if byte[0] == OPEN => Ok(()),
        Ok(()) => Err(Errno::ECANCELED.into()),
        Err(e) => Err(e.into()),
    }
}

/// Fill `buf` from `fd`, retrying on EINTR; end-of-file first is `EPIPE`. Async-signal-safe.
fn read_exact(fd: RawFd, buf: &mut [u8]) -> Result<(), Errno> {
    // SAFETY: the caller owns `fd` for the duration of the call.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut got = 0;
    while got < buf.len() {
        match read(fd, &mut buf[got..]) {
            Ok(0) => return Err(Errno::EPIPE),
            Ok(n) => got += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The test hook's delay, when set and valid.
fn test_delay() -> Option<Duration> {
    let text = std::env::var(DELAY_VAR).ok()?;
    humantime::parse_duration(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    fn sleeper() -> Command {
        let mut command = Command::new("sleep");
        command.arg("30").stdin(Stdio::null()).process_group(0);
        command
    }

    #[test]
    fn the_program_runs_once_recorded_with_its_own_pid() {
        let mut seen = None;
        let mut child = spawn(&mut sleeper(), |pid| {
            seen = Some(pid);
            Ok(())
        })
        .expect("sleep must start");
        let pid = child.id() as i32;
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(seen, Some(pid));
    }

    #[test]
    fn a_failed_record_keeps_the_program_from_running() {
        let dir = tempfile::tempdir().unwrap();
        let ran = dir.path().join("ran");
        let mut command = Command::new("touch");
        command.arg(&ran).process_group(0);
        let result = spawn(&mut command, |_| Err("disk full".into()));
        assert!(
            matches!(&result, Err(GateError::Record(why)) if why == "disk full"),
            "{result:?}"
        );
        assert!(!ran.exists(), "the program ran although its record failed");
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_and_records_nothing_that_runs() {
        let mut command = Command::new("/nonexistent/program");
        let result = spawn(command.process_group(0), |_| Ok(()));
        assert!(
            matches!(&result, Err(GateError::Spawn(e)) if e.kind() == std::io::ErrorKind::NotFound),
            "{result:?}"
        );
    }
}
