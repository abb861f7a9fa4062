//! Open-file limit: every in-flight request holds a socket.

use anyhow::{bail, Context, Result};
use nix::sys::resource::{getrlimit, setrlimit, Resource};

/// File descriptors kept free for everything else (files, logs, the runtime).
const SPARE_FILES: u64 = 64;

/// Raises the soft open-file limit to the hard limit; fails when `in_flight` connections
/// cannot fit under the hard limit.
pub(crate) fn ensure_open_files(in_flight: Option<u32>) -> Result<()> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).context("reading the open-file limit")?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).context("raising the open-file limit")?;
    }
    if let Some(n) = in_flight {
        let needed = u64::from(n) + SPARE_FILES;
        if needed > hard {
            bail!(
                "{n} concurrent requests need about {needed} open files but the hard limit is \
                 {hard}; raise it (e.g. `ulimit -Hn {needed}` as root) or lower the concurrency"
            );
        }
    }
    Ok(())
}
