//! The baseline (the engine's own defaults) must start: when it does not, every other config
//! fails the same way, so the study stops at once with the engine's reason and its log.

use crate::exec::TrialDir;
use crate::record::{FailureKind, Outcome, TrialRecord};

/// An error when the baseline `record` failed at start for a reason other than memory (the
/// defaults may not fit the card while smaller configs do). The error names the failure and
/// the server log of `trial`.
pub fn check_started(record: &TrialRecord, trial: &TrialDir) -> anyhow::Result<()> {
    let Outcome::Failed { kind, message } = &record.outcome else {
        return Ok(());
    };
    if record.ready_s.is_some() || *kind == FailureKind::Oom {
        return Ok(());
    }
    let log = trial.server_log();
    let log = if log.exists() {
        format!("\n  server log: {}", log.display())
    } else {
        String::new()
    };
    anyhow::bail!(
        "the baseline (the engine's defaults) failed at start, so every config would: \
         {kind}: {message}{log}\nthe engine or the space is broken (a parameter or flag name, \
         launch.command, extra_args, the model path), not the config; fix it and run the same \
         command again"
    )
}
