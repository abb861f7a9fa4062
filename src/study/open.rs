//! Opening a study folder: a new study, the same study again (continued where it stopped, or
//! shown as it ended), or a refusal that says how to go on.

use super::journal::{self, Journal, StudyMeta};
use super::observer::StudyObserver;
use crate::record::TrialRecord;
use crate::space::StudySpec;
use anyhow::bail;
use std::path::Path;

/// Refuses `--resume` where `dir` holds no study, before anything is created there.
pub fn check_resumable(dir: &Path) -> anyhow::Result<()> {
    if dir.join(journal::META_FILE).exists() {
        return Ok(());
    }
    bail!(
        "there is no study to resume in {} (no {}); run the same command without --resume to \
         start it, or check --study and --results",
        dir.display(),
        journal::META_FILE
    )
}

/// The journal of the study of `space` in `dir` and the records it already holds. The same
/// study is continued with or without `resume`; another study's folder is refused unless it
/// holds no trial yet.
pub fn open(
    dir: &Path,
    space: &StudySpec,
    meta: &StudyMeta,
    resume: bool,
    observer: &dyn StudyObserver,
) -> anyhow::Result<(Journal, Vec<TrialRecord>)> {
    if dir.join(journal::META_FILE).exists() {
        let stored = journal::load_meta(dir)?;
        let held = journal::read_records(dir).unwrap_or_default().len();
        match stored.mismatch(meta) {
            Some(why) if resume => bail!("cannot resume {}: {why}", dir.display()),
            Some(why) if held > 0 => bail!(
                "{} already holds another study with {held} trial(s): {why}",
                dir.display()
            ),
            None if held > 0 && !resume => observer.note(&format!(
                "picking up the study in {} ({held} trial(s) recorded; --study NAME starts a \
                 fresh one)",
                dir.display()
            )),
            _ => {}
        }
    } else if dir.join(journal::JOURNAL_FILE).exists() && !journal::read_records(dir)?.is_empty() {
        bail!(
            "{} has a journal but no {}; it is not a study this version can resume: move it away or choose another --study NAME",
            dir.display(),
            journal::META_FILE
        );
    }
    journal::save_meta(dir, meta)?;
    Journal::open(dir, space.file_access(), observer)
}
