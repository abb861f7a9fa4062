//! Physical cores: what a thread count should match (hyper-threads share a core's units).

use std::collections::BTreeSet;
use std::path::Path;

/// Physical cores of the host under `sys` (`/sys` on a running host): distinct
/// (package, core) pairs of the CPUs listed there; `None` when `sys` lists none.
pub fn physical_cores_under(sys: &Path) -> Option<u32> {
    let cpus = std::fs::read_dir(sys.join("devices/system/cpu")).ok()?;
    let read = |path: &Path| -> Option<String> {
        Some(std::fs::read_to_string(path).ok()?.trim().to_string())
    };
    let cores: BTreeSet<(String, String)> = cpus
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix("cpu")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| {
            let topology = e.path().join("topology");
            Some((
                read(&topology.join("physical_package_id"))?,
                read(&topology.join("core_id"))?,
            ))
        })
        .collect();
    u32::try_from(cores.len()).ok().filter(|n| *n > 0)
}

/// Physical cores of the running host; its logical CPUs where `/sys` does not say.
pub fn physical_cores() -> Option<u32> {
    physical_cores_under(Path::new("/sys")).or_else(|| {
        std::thread::available_parallelism()
            .ok()
            .and_then(|n| u32::try_from(n.get()).ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyper_threads_of_one_core_count_once() {
        let root = tempfile::tempdir().unwrap();
        for (cpu, package, core) in [(0, 0, 0), (1, 0, 1), (2, 0, 0), (3, 0, 1), (4, 1, 0)] {
            let dir = root
                .path()
                .join(format!("devices/system/cpu/cpu{cpu}/topology"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("physical_package_id"), format!("{package}\n")).unwrap();
            std::fs::write(dir.join("core_id"), format!("{core}\n")).unwrap();
        }
        std::fs::create_dir_all(root.path().join("devices/system/cpu/cpufreq")).unwrap();
        assert_eq!(physical_cores_under(root.path()), Some(3));
        assert_eq!(physical_cores_under(&root.path().join("absent")), None);
    }
}
