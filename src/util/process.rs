//! Running a helper program (a version query, `nvidia-smi`, `numactl --hardware`) with a time
//! limit, its pipes drained while it runs, in a process group of its own so that whatever it
//! starts is stopped with it.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a finished helper program printed.
#[derive(Clone, Debug)]
pub struct Output {
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output, lossily decoded.
    pub stdout: String,
    /// Its standard error, lossily decoded.
    pub stderr: String,
}

/// Why a helper program gave no output.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    /// It could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// It ran past its time limit and was killed with its process group.
    #[error("{program} timed out after {}", humantime::format_duration(*.timeout))]
    TimedOut {
        /// The program.
        program: String,
        /// The limit.
        timeout: Duration,
    },
    /// Waiting for it failed.
    #[error("waiting for {program}: {source}")]
    Wait {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Runs `program` with `args` (stdin closed) for at most `timeout`. The program leads a new
/// process group; on timeout the whole group is killed, so a program that starts a server
/// instead of answering leaves nothing behind.
pub(crate) fn run_with_timeout(
    program: impl AsRef<OsStr>,
    args: &[&str],
    timeout: Duration,
) -> Result<Output, RunError> {
    let name = Path::new(program.as_ref()).display().to_string();
    let mut child = Command::new(program.as_ref())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|source| RunError::Spawn {
            program: name.clone(),
            source,
        })?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let wait_error = |source| RunError::Wait {
        program: name.clone(),
        source,
    };
    let status = loop {
        if let Some(status) = child.try_wait().map_err(wait_error)? {
            break status;
        }
        if started.elapsed() > timeout {
            kill_group(child.id());
            let _ = child.wait();
            return Err(RunError::TimedOut {
                program: name,
                timeout,
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The group may hold descendants that keep the pipes open; they go with it.
    kill_group(child.id());
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// SIGKILL to the process group led by `pid` (a group this module created).
fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// The first executable file called `program` in the `PATH`-style list `path`.
pub(crate) fn find_on_path(program: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// True when an executable file named `program` is on this process's `PATH`.
pub(crate) fn on_path(program: &str) -> bool {
    find_on_path(program, std::env::var_os("PATH").as_deref()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_both_streams() {
        let out = run_with_timeout(
            "sh",
            &["-c", "echo out; echo err >&2; exit 3"],
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survivor");
        // The grandchild would write the marker after the limit if it outlived its group.
        let script = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let started = Instant::now();
        let err = run_with_timeout("sh", &["-c", &script], Duration::from_millis(300)).unwrap_err();
        assert!(matches!(err, RunError::TimedOut { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(2500));
        assert!(!marker.exists(), "a descendant outlived the timeout");
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let err = run_with_timeout("/nonexistent/tool", &[], Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, RunError::Spawn { .. }), "{err}");
    }
}
