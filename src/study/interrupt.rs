//! Ctrl-C handling: SIGINT raises a flag the loop polls between steps (and the probe's hook polls
//! during a run), so the current teardown finishes and the journal stays consistent; the study
//! then exits resumable.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A shared "please stop" flag.
#[derive(Clone, Debug, Default)]
pub struct StopFlag {
    raised: Arc<AtomicBool>,
    follows_sigint: bool,
}

static SIGINT_SEEN: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: nix::libc::c_int) {
    SIGINT_SEEN.store(true, Ordering::SeqCst);
}

impl StopFlag {
    /// Ask everything watching the flag to stop.
    pub fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
    }

    /// True once [`StopFlag::raise`] was called, or SIGINT arrived for a flag from [`on_sigint`].
    pub(crate) fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
            || (self.follows_sigint && SIGINT_SEEN.load(Ordering::SeqCst))
    }
}

/// A flag that SIGINT (Ctrl-C) raises. The handler only stores to an atomic.
pub(crate) fn on_sigint() -> anyhow::Result<StopFlag> {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler is async-signal-safe (one atomic store).
    unsafe { sigaction(Signal::SIGINT, &action) }
        .map_err(|e| anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))?;
    Ok(StopFlag {
        raised: Arc::default(),
        follows_sigint: true,
    })
}

/// A flag that SIGINT or SIGTERM raises: for a trial run as a Slurm job, which `scancel`
/// stops with SIGTERM, so its server is torn down as after Ctrl-C.
pub(crate) fn on_sigint_or_sigterm() -> anyhow::Result<StopFlag> {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let flag = on_sigint()?;
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler is async-signal-safe (one atomic store).
    unsafe { sigaction(Signal::SIGTERM, &action) }
        .map_err(|e| anyhow::anyhow!("cannot install the SIGTERM handler: {e}"))?;
    Ok(flag)
}
