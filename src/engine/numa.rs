//! The `numactl …` prefix that binds a real engine to NUMA nodes.

use anyhow::{bail, Result};
use std::ffi::OsStr;
use std::path::Path;

/// Prefix `program args` with `numactl <binding>`; `path` is the `PATH` searched for numactl.
pub(crate) fn wrap(
    program: String,
    args: Vec<String>,
    binding: &str,
    path: Option<&OsStr>,
) -> Result<(String, Vec<String>)> {
    let Some(mut wrapped) = shlex::split(binding) else {
        bail!("the NUMA binding `{binding}` has unbalanced quotes; write numactl arguments such as \"-N 0 -m 0\"");
    };
    if !on_path("numactl", path) {
        bail!(
            "the config binds NUMA nodes (`numactl {binding}`) but numactl is not on PATH; \
             install it (Debian/Ubuntu: `apt-get install numactl`, RHEL/Fedora: `dnf install numactl`) \
             or set the NUMA parameter to \"none\""
        );
    }
    wrapped.push(program);
    wrapped.extend(args);
    Ok(("numactl".to_string(), wrapped))
}

/// True when an executable file named `name` is in one of the `path` directories.
pub(crate) fn on_path(name: &str, path: Option<&OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = path else { return false };
    std::env::split_paths(path).any(|dir| {
        let candidate = Path::new(&dir).join(name);
        candidate
            .metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn prefixes_when_numactl_is_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("numactl");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (program, args) = wrap(
            "vllm".into(),
            vec!["serve".into(), "m".into()],
            "-N 1 -m 1",
            Some(dir.path().as_os_str()),
        )
        .unwrap();
        assert_eq!(program, "numactl");
        assert_eq!(args, ["-N", "1", "-m", "1", "vllm", "serve", "m"]);
    }

    #[test]
    fn missing_numactl_explains_how_to_install_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = wrap("vllm".into(), vec![], "-N 0", Some(dir.path().as_os_str()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("numactl is not on PATH"), "{err}");
        assert!(err.contains("apt-get install numactl"), "{err}");
    }

    #[test]
    fn non_executable_file_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("numactl"), "").unwrap();
        assert!(!on_path("numactl", Some(dir.path().as_os_str())));
    }
}
