//! Ctrl-C handling: SIGINT or SIGTERM raises a flag the loop polls between steps (and the probe's
//! hook polls during a run), so the current teardown finishes and the journal stays consistent;
//! the study then exits resumable. A second signal changes nothing: the teardown still finishes.

use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A shared "please stop" flag.
#[derive(Clone, Debug, Default)]
pub struct StopFlag {
    raised: Arc<AtomicBool>,
}

impl StopFlag {
    /// Ask everything watching the flag to stop.
    pub fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
    }

    /// True once [`StopFlag::raise`] was called, or a signal the flag follows arrived.
    pub(crate) fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }
}

/// A flag that SIGINT (Ctrl-C) or SIGTERM (`kill`, systemd, `scancel` of a Slurm job) raises, so
/// a server in flight is torn down either way.
pub(crate) fn on_stop_signal() -> anyhow::Result<StopFlag> {
    raised_by(&[(SIGINT, "Ctrl-C"), (SIGTERM, "SIGTERM")])
}

/// A flag each of `signals` (number, name) raises instead of its default action; the handler
/// (signal-hook's) only stores to the flag.
fn raised_by(signals: &[(i32, &str)]) -> anyhow::Result<StopFlag> {
    let flag = StopFlag::default();
    for (signal, name) in signals {
        signal_hook::flag::register(*signal, flag.raised.clone())
            .map_err(|e| anyhow::anyhow!("cannot install the {name} handler: {e}"))?;
    }
    Ok(flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_signal_raises_the_flag_and_a_second_changes_nothing() {
        use signal_hook::consts::SIGUSR2;
        let flag = raised_by(&[(SIGUSR2, "SIGUSR2")]).unwrap();
        assert!(!flag.is_raised());
        signal_hook::low_level::raise(SIGUSR2).unwrap();
        assert!(flag.is_raised(), "the process goes on with its flag raised");
        signal_hook::low_level::raise(SIGUSR2).unwrap();
        assert!(flag.is_raised());
    }
}
