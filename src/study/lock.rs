//! One tuner per study folder: an exclusive lock on `<study>/study.lock`, held while the study
//! runs. The kernel drops it when the tuner exits in any way, `kill -9` included, so a stale
//! lock never blocks a resume.

use anyhow::Context as _;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

/// The lock file's name inside a study folder.
pub const LOCK_FILE: &str = "study.lock";

/// The lock on a study folder; released when dropped.
#[derive(Debug)]
pub struct StudyLock {
    _file: File,
}

/// Lock `dir` (which must exist) for this tuner, or explain that another tuner holds it.
pub fn acquire(dir: &Path) -> anyhow::Result<StudyLock> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the study lock {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(StudyLock { _file: file }),
        Err(TryLockError::WouldBlock) => anyhow::bail!(
            "another infertune is running the study in {}; wait for it to finish (or stop it), \
             or choose another --study NAME",
            dir.display()
        ),
        Err(TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
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
}
