//! Server supervision: spawn in its own process group, wait until it really serves, classify
//! failures, and tear everything down.

pub mod classify;
mod command_line;
mod gate;

pub mod group;
mod image;
pub mod leftover;

pub mod port;
mod process;
mod readiness;
mod scratch;
mod sockets;
pub mod spec;
mod teardown;
pub mod this_exe;
pub mod tree;

pub use command_line::{command_line, quote};

pub(crate) use command_line::command_line_with;

pub use image::{v_tag, ContainerImage};
pub use process::ProcessLauncher;
pub use spec::{FileToWrite, LaunchSpec, Readiness, ReadyRequest};

use crate::record::FailureKind;
use std::path::Path;
use std::time::Duration;

/// Why a server did not come up.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct StartFailure {
    /// Failure class.
    pub kind: FailureKind,
    /// Root-cause line (innermost error), not the wrapper.
    pub message: String,
}

/// How a server that had been serving ended on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exit {
    /// How the process ended: `killed by SIGSEGV (11)`, `exited with status 1`.
    pub ending: String,
    /// Root-cause line of its log (the first, innermost error), when the log names one.
    pub cause: Option<String>,
}

/// Starts servers. The real one spawns processes; tests may use fakes.
pub trait Launcher: Sync {
    /// Spawn `spec`, log to `log_path`, and wait until it serves or fails.
    fn start(
        &self,
        spec: &LaunchSpec,
        log_path: &Path,
        ready_timeout: Duration,
        stop_grace: Duration,
    ) -> Result<Box<dyn Server>, StartFailure>;
}

/// A server that is up and serving.
pub trait Server: Send {
    /// Base URL, e.g. `http://127.0.0.1:8000`.
    fn base_url(&self) -> String;
    /// Seconds from spawn to ready.
    fn ready_after(&self) -> Duration;
    /// How the server ended, once its process has exited on its own since it was ready (it
    /// crashed); `None` while it runs.
    fn exited(&mut self) -> Option<Exit>;
    /// Stop it completely (process group gone, port free).
    fn stop(self: Box<Self>) -> anyhow::Result<()>;
}
