//! Keeping a space's secrets out of what a study writes: a launch as `launch.json`, `best.json`
//! and the report show it, a trial's record before it is journaled (a failing server's
//! root-cause line may echo its argv), and a server's log.

use super::secrets::Secrets;
use crate::launch::LaunchSpec;
use crate::record::{Outcome, TrialRecord, Violation};
use crate::util::atomic::{write_atomic, Access};
use anyhow::Context as _;
use std::path::Path;

/// `spec` with every secret of `secrets` masked in its program, arguments, environment values
/// and files.
pub fn launch(spec: &LaunchSpec, secrets: &Secrets) -> LaunchSpec {
    let mut out = spec.clone();
    out.program = secrets.scrub(&spec.program);
    for arg in &mut out.args {
        *arg = secrets.scrub(arg);
    }
    for value in out.env.values_mut() {
        *value = secrets.scrub(value);
    }
    for file in &mut out.files {
        file.contents = secrets.scrub(&file.contents);
    }
    out
}

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

/// Rewrite the server log at `path` (when there is one) with every secret masked, readable by
/// its owner only.
pub fn server_log(path: &Path, secrets: &Secrets) -> anyhow::Result<()> {
    if secrets.is_empty() || !path.exists() {
        return Ok(());
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = secrets.scrub(&String::from_utf8_lossy(&bytes));
    write_atomic(path, &text, Access::Owner)
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
        let log = dir.path().join("server.log");
        std::fs::write(&log, "key sk-secret-1\n").unwrap();
        server_log(&log, &secrets).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "key ***\n");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
