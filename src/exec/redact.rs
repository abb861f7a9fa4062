//! Keeping a space's secrets out of what a study keeps: a trial's record before it is journaled
//! (a failing server's root-cause line may echo its argv), and the server log in its folder.

use super::trial_dir::TrialDir;
use crate::export::{write_atomic, Access};
use crate::record::{Outcome, TrialRecord, Violation};
use crate::space::secrets::Secrets;
use anyhow::Context as _;

/// `record` with every secret masked in its messages.
pub fn record(mut record: TrialRecord, secrets: &Secrets) -> TrialRecord {
    if secrets.is_empty() {
        return record;
    }
    match &mut record.outcome {
        Outcome::Rejected { message, .. }
        | Outcome::Failed { message, .. }
        | Outcome::Crashed { message, .. } => {
            *message = secrets.scrub(message);
        }
        Outcome::Pruned { reason } => *reason = secrets.scrub(reason),
        Outcome::Feasible | Outcome::Infeasible => {}
    }
    for violation in &mut record.violations {
        match violation {
            Violation::Objective { message } => *message = secrets.scrub(message),
            Violation::Pruned { reason } => *reason = secrets.scrub(reason),
            _ => {}
        }
    }
    record
}

/// Rewrite the server log of `trial` (when there is one) with every secret masked, readable
/// by its owner only.
pub fn server_log(trial: &TrialDir, secrets: &Secrets) -> anyhow::Result<()> {
    let path = trial.server_log();
    if secrets.is_empty() || !path.exists() {
        return Ok(());
    }
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = secrets.scrub(&String::from_utf8_lossy(&bytes));
    write_atomic(&path, &text, Access::Owner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::FailureKind;

    #[test]
    fn messages_and_logs_lose_their_secrets() {
        let mut secrets = Secrets::default();
        secrets.add("sk-secret-1", "KEY");
        let failed = TrialRecord::new(
            0,
            Default::default(),
            Outcome::Failed {
                kind: FailureKind::Unknown,
                message: "error: argv --api-key sk-secret-1".into(),
            },
        );
        let scrubbed = record(failed, &secrets);
        assert!(
            matches!(&scrubbed.outcome, Outcome::Failed { message, .. } if message == "error: argv --api-key ***")
        );
        let dir = tempfile::tempdir().unwrap();
        let trial = TrialDir::of(dir.path(), 0);
        trial.create_fresh().unwrap();
        let log = trial.server_log();
        std::fs::write(&log, "key sk-secret-1\n").unwrap();
        server_log(&trial, &secrets).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "key ***\n");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
