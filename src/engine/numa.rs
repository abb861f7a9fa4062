//! The `numactl …` prefix that binds a real engine to NUMA nodes.

use crate::topo::numactl_prefix;
use crate::util::process::find_on_path;
use anyhow::{bail, Result};
use std::ffi::OsStr;

/// Prefix `program args` with `numactl <binding>` (as [`numactl_prefix`] renders it); `path`
/// is the `PATH` searched for numactl.
pub(crate) fn wrap(
    program: String,
    args: Vec<String>,
    binding: &str,
    path: Option<&OsStr>,
) -> Result<(String, Vec<String>)> {
    let prefix = numactl_prefix(binding)?;
    let Some((numactl, options)) = prefix.split_first() else {
        return Ok((program, args));
    };
    if find_on_path(numactl, path).is_none() {
        bail!(
            "the config binds NUMA nodes (`numactl {binding}`) but numactl is not on PATH; \
             install it (Debian/Ubuntu: `apt-get install numactl`, RHEL/Fedora: `dnf install numactl`) \
             or set the NUMA parameter to \"none\""
        );
    }
    let mut wrapped = options.to_vec();
    wrapped.push(program);
    wrapped.extend(args);
    Ok((numactl.clone(), wrapped))
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
    fn unbalanced_quotes_are_refused_with_an_example() {
        let err = wrap("vllm".into(), vec![], "-N '0", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("-N 0 -m 0"), "{err}");
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
        assert!(find_on_path("numactl", Some(dir.path().as_os_str())).is_none());
    }
}
