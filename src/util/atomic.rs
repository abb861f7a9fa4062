//! Replacing files whole, each through a temporary file of its own, readable by whom the
//! caller says (a space that holds a secret keeps its study's files to their owner).

use anyhow::Context as _;
use std::fs::{OpenOptions, Permissions};
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Who may read the files written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// As the umask allows (created 0666 before it).
    Shared,
    /// The owner only: files 0600, the study folder 0700. For spaces that hold a secret.
    Owner,
}

impl Access {
    /// The mode files are created with (the umask still applies).
    pub(crate) fn file_mode(self) -> u32 {
        match self {
            Access::Shared => 0o666,
            Access::Owner => 0o600,
        }
    }

    /// Create the folder `dir` (and its parents); for [`Access::Owner`], make it 0700.
    pub fn create_dir(self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        if self == Access::Owner {
            std::fs::set_permissions(dir, Permissions::from_mode(0o700))
                .with_context(|| format!("cannot make {} private", dir.display()))?;
        }
        Ok(())
    }
}

/// Replace `path` with `contents` through a temporary file and a rename, so readers never see
/// half a file. The temporary file's name is unique to this write (process id and a counter),
/// so concurrent writers of files in one folder never share one.
pub(crate) fn write_atomic(path: &Path, contents: &str, access: Access) -> anyhow::Result<()> {
    write_with_mode(path, contents, access.file_mode())
}

/// Like [`write_atomic`], for a script its reader runs: executable by whoever may read it.
pub(crate) fn write_executable(path: &Path, contents: &str, access: Access) -> anyhow::Result<()> {
    let mode = access.file_mode();
    write_with_mode(path, contents, mode | (mode & 0o444) >> 2)
}

fn write_with_mode(path: &Path, contents: &str, mode: u32) -> anyhow::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let unique = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.{}.{unique}.tmp", std::process::id()));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .and_then(|mut file| file.write_all(contents.as_bytes()));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", tmp.display()));
    }
    std::fs::rename(&tmp, path).with_context(|| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}", path.display())
    })
}
