//! This executable, as a server program (the simulator's `sim serve`).
//!
//! A study may run all night while the binary it was started from is rebuilt or upgraded: once
//! the file is replaced or deleted, its path names another program (or none, and
//! `current_exe()` reads `… (deleted)`). On Linux a server that is this executable is therefore
//! started through `/proc/self/exe`, which in the forked child still names the running binary's
//! own file whatever happened to its path; its `argv[0]` stays the path, as shown and exported.
//! Elsewhere it is started by its path.

use std::path::PathBuf;
use std::sync::OnceLock;

/// What the kernel appends to the path of an executable whose file was deleted.
const DELETED: &str = " (deleted)";

/// The path this executable was started from, read once and kept, so that later launches name
/// it the same way after the file is replaced.
pub fn path() -> std::io::Result<PathBuf> {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    if let Some(path) = PATH.get() {
        return Ok(path.clone());
    }
    let found = std::env::current_exe()?;
    let text = found.to_string_lossy();
    let path = match text.strip_suffix(DELETED) {
        Some(kept) => PathBuf::from(kept),
        None => found,
    };
    Ok(PATH.get_or_init(|| path).clone())
}

/// The file to execute for `program`: this executable's own file when `program` is
/// [`path`] (Linux), else `program` itself.
pub(crate) fn file_to_run(program: &str) -> PathBuf {
    let own = path().is_ok_and(|own| own.as_os_str() == program);
    if cfg!(target_os = "linux") && own {
        PathBuf::from("/proc/self/exe")
    } else {
        PathBuf::from(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_executable_runs_through_its_own_file_and_others_by_name() {
        let own = path().unwrap();
        let ran = file_to_run(&own.to_string_lossy());
        if cfg!(target_os = "linux") {
            assert_eq!(ran, PathBuf::from("/proc/self/exe"));
        } else {
            assert_eq!(ran, own);
        }
        assert_eq!(file_to_run("vllm"), PathBuf::from("vllm"));
        assert!(!own.to_string_lossy().ends_with(DELETED));
    }
}
