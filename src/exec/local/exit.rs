//! Whether a trial's server exited during the trial. A crash fails the requests in flight a
//! moment before its process is gone, so a probe that saw a failed request gives the server a
//! short while to finish exiting before it counts as alive.

use crate::launch::{Exit, Server};
use std::time::{Duration, Instant};

/// How long a server whose probe saw a failure is watched for its exit.
const SETTLE: Duration = Duration::from_secs(2);

/// How often it is checked meanwhile.
const POLL: Duration = Duration::from_millis(20);

/// How `server` ended, if its process exited; watched for [`SETTLE`] when `failures` (the probe
/// saw a failed request or failed itself), else checked once.
pub(crate) fn exit_of(server: &mut dyn Server, failures: bool) -> Option<Exit> {
    let deadline = Instant::now() + if failures { SETTLE } else { Duration::ZERO };
    loop {
        if let Some(exit) = server.exited() {
            return Some(exit);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(POLL);
    }
}
