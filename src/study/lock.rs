//! One tuner per study folder: an exclusive lock on `<study>/study.lock`, held while the study
//! runs; `export` and `report` hold it shared while they write, so they never run beside a tuner
//! (or a tuner beside them), but beside each other. The kernel drops it when its holder exits in
//! any way, `kill -9` included, so a stale lock never blocks a resume.

use anyhow::Context as _;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

/// The lock file's name inside a study folder.
pub(crate) const LOCK_FILE: &str = "study.lock";

/// The lock on a study folder; released when dropped.
#[derive(Debug)]
pub struct StudyLock {
    _file: File,
}

/// Lock `dir` (which must exist) for this tuner, or explain that another infertune holds it.
pub fn acquire(dir: &Path) -> anyhow::Result<StudyLock> {
    let (file, path) = open(dir)?;
    match file.try_lock() {
        Ok(()) => Ok(StudyLock { _file: file }),
        Err(TryLockError::WouldBlock) => anyhow::bail!(
            "another infertune is running the study in {} (a tuner, or an export or report \
             writing its files); wait for it to finish (or stop it), or choose another --study NAME",
            dir.display()
        ),
        Err(TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

/// Lock `dir` (which must exist) shared, to write its exports, or explain that a tuner holds it.
pub(crate) fn acquire_shared(dir: &Path) -> anyhow::Result<StudyLock> {
    let (file, path) = open(dir)?;
    match file.try_lock_shared() {
        Ok(()) => Ok(StudyLock { _file: file }),
        Err(TryLockError::WouldBlock) => anyhow::bail!(
            "a tuner is running the study in {}; it rewrites best.sh, best.json and trials.csv \
             after every trial and the report at its end: wait for it to finish (or stop it)",
            dir.display()
        ),
        Err(TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

fn open(dir: &Path) -> anyhow::Result<(File, PathBuf)> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the study lock {}", path.display()))?;
    Ok((file, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_folder_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = acquire(dir.path()).unwrap();
        let err = acquire(dir.path()).unwrap_err().to_string();
        assert!(err.contains("another infertune"), "{err}");
        drop(first);
        assert!(acquire(dir.path()).is_ok());
    }

    #[test]
    fn readers_share_the_lock_and_exclude_a_tuner_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let first = acquire_shared(dir.path()).unwrap();
        let second = acquire_shared(dir.path()).unwrap();
        let err = acquire(dir.path()).unwrap_err().to_string();
        assert!(err.contains("another infertune"), "{err}");
        drop((first, second));
        let tuner = acquire(dir.path()).unwrap();
        let err = acquire_shared(dir.path()).unwrap_err().to_string();
        assert!(err.contains("a tuner is running"), "{err}");
        drop(tuner);
    }
}
