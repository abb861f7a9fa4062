//! A private temporary folder for each server, removed with it.
//!
//! vLLM leaves files in the temporary folder on every start (ZeroMQ `ipc://` sockets named by
//! UUID, `vllm_dist_*` files), so a night of trials would leave hundreds in `/tmp`. Each server
//! gets `TMPDIR` pointing to a folder of its own instead, and the folder goes once the server's
//! process group is gone. Caches that live in the temporary folder by default stay where the
//! server would have put them (torch's compile cache, `TORCHINDUCTOR_CACHE_DIR`), so trials
//! still share them. A space that sets `TMPDIR` in `launch.env` chooses the folder itself, and
//! it is left alone.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Prefix of every scratch folder's name; only such folders are ever removed.
const PREFIX: &str = "infertune-";

/// Variables Python's `getpass.getuser()` reads, in its order.
const USER_VARIABLES: [&str; 4] = ["LOGNAME", "USER", "LNAME", "USERNAME"];

/// One server's temporary folder.
#[derive(Debug)]
pub(crate) struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// A new folder for a server started with the variables `env` adds to this process's
    /// environment; `None` when `env` sets `TMPDIR` itself.
    pub(crate) fn for_server(env: &BTreeMap<String, String>) -> io::Result<Option<Scratch>> {
        if env.contains_key("TMPDIR") {
            return Ok(None);
        }
        Scratch::create_in(&std::env::temp_dir()).map(Some)
    }

    /// Creates a folder (owner-only) in `base`.
    fn create_in(base: &Path) -> io::Result<Scratch> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("{PREFIX}{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Scratch { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "cannot create a temporary folder in {}: {e}",
                            base.display()
                        ),
                    ))
                }
            }
        }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Variables for the server: `TMPDIR` set to the folder, and torch's compile cache kept
    /// where it would have been unless `env` or this process already places it.
    pub fn env(&self, env: &BTreeMap<String, String>) -> Vec<(String, String)> {
        let mut vars = vec![("TMPDIR".to_string(), self.path.display().to_string())];
        let cache = "TORCHINDUCTOR_CACHE_DIR";
        if !env.contains_key(cache) && std::env::var_os(cache).is_none() {
            let user = user_name(env).replace(['\\', '/', ':', '*', '?', '"', '<', '>', '|'], "_");
            let base = self.path.parent().unwrap_or(Path::new("/"));
            let dir = base.join(format!("torchinductor_{user}"));
            vars.push((cache.to_string(), dir.display().to_string()));
        }
        vars
    }

    /// Removes the folder and what the server left in it.
    pub fn remove(self) {
        remove(&self.path);
    }
}

/// Removes a scratch folder recorded earlier; anything not named like one is left alone.
pub fn remove(path: &Path) {
    let named_like_scratch = path
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with(PREFIX));
    if named_like_scratch {
        let _ = std::fs::remove_dir_all(path);
    }
}

/// The user name as Python's `getpass.getuser()` finds it.
fn user_name(env: &BTreeMap<String, String>) -> String {
    let from_env = USER_VARIABLES.iter().find_map(|name| {
        let value = env.get(*name).cloned().or_else(|| std::env::var(name).ok());
        value.filter(|v| !v.is_empty())
    });
    from_env.unwrap_or_else(|| {
        let uid = nix::unistd::getuid();
        match nix::unistd::User::from_uid(uid) {
            Ok(Some(user)) => user.name,
            _ => format!("uid_{uid}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_private_folder_is_removed_with_its_contents() {
        let base = tempfile::tempdir().unwrap();
        let scratch = Scratch::create_in(base.path()).unwrap();
        let path = scratch.path().to_path_buf();
        assert_eq!(path.parent(), Some(base.path()));
        let mode = std::fs::metadata(&path).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o700
        );
        std::fs::write(path.join("left-behind"), "x").unwrap();
        let other = Scratch::create_in(base.path()).unwrap();
        assert_ne!(other.path(), path);
        scratch.remove();
        assert!(!path.exists());
        assert!(other.path().exists());
    }

    #[test]
    fn the_server_gets_its_folder_and_keeps_torchs_cache_where_it_was() {
        let base = tempfile::tempdir().unwrap();
        let tmp = base.path().to_str().unwrap();
        let env = env_of(&[("LOGNAME", "a/b")]);
        let scratch = Scratch::create_in(base.path()).unwrap();
        let vars: BTreeMap<String, String> = scratch.env(&env).into_iter().collect();
        assert_eq!(vars["TMPDIR"], scratch.path().display().to_string());
        if std::env::var_os("TORCHINDUCTOR_CACHE_DIR").is_none() {
            assert_eq!(
                vars["TORCHINDUCTOR_CACHE_DIR"],
                format!("{tmp}/torchinductor_a_b")
            );
        }
        let placed = env_of(&[("TORCHINDUCTOR_CACHE_DIR", "/cache")]);
        let vars: BTreeMap<String, String> = scratch.env(&placed).into_iter().collect();
        assert!(!vars.contains_key("TORCHINDUCTOR_CACHE_DIR"));
        scratch.remove();
    }

    #[test]
    fn a_tmpdir_chosen_in_the_space_is_left_alone() {
        let chosen = env_of(&[("TMPDIR", "/var/tmp/mine")]);
        assert!(Scratch::for_server(&chosen).unwrap().is_none());
    }

    #[test]
    fn only_folders_named_like_scratch_are_removed() {
        let base = tempfile::tempdir().unwrap();
        let keep = base.path().join("results");
        std::fs::create_dir(&keep).unwrap();
        remove(&keep);
        assert!(keep.exists());
        let gone = base.path().join("infertune-1-2");
        std::fs::create_dir(&gone).unwrap();
        remove(&gone);
        assert!(!gone.exists());
    }
}
