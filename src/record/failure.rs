//! Why a server failed to start or serve.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Failure classes, from exit status and a scan of the server log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// The engine refused its arguments (ValueError, pydantic ValidationError, ...).
    InvalidConfig,
    /// Out of accelerator memory, or no room for the KV cache.
    Oom,
    /// Something already listens on the port.
    PortBusy,
    /// Not ready within the start timeout.
    Timeout,
    /// Killed by a signal.
    Crash,
    /// Exited for a reason we could not classify.
    Unknown,
}

impl FailureKind {
    /// The kebab-case name used in records and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::InvalidConfig => "invalid-config",
            FailureKind::Oom => "oom",
            FailureKind::PortBusy => "port-busy",
            FailureKind::Timeout => "timeout",
            FailureKind::Crash => "crash",
            FailureKind::Unknown => "unknown",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
