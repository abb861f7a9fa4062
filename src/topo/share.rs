//! What one trial's slot holds of the host: the cores, CPUs and memory an engine's expert
//! settings are sized against.

use super::sysfs::{read_allowed, read_nodes, Root};
use std::collections::BTreeSet;
use std::path::Path;

/// One slot's share of the host, when `slots` trials run side by side.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlotShare {
    /// Physical cores the trial may use: the host's divided among the slots, at least one.
    pub cores: Option<u32>,
    /// CPUs to compute on: the first allowed NUMA node's, one logical CPU per physical core,
    /// lowest first. Known only when one trial holds the host (trials side by side are not
    /// pinned to CPUs of their own).
    pub cpus: Option<Vec<u32>>,
    /// Bytes of memory the trial may use: that node's (the host's without NUMA information)
    /// divided among the slots.
    pub memory: Option<u64>,
}

/// The share of one of `slots` trials on the running host.
pub fn slot_share(slots: u32) -> SlotShare {
    let mut share = slot_share_under(Path::new("/"), slots);
    share.cores = super::physical_cores().map(|c| (c / slots.max(1)).max(1));
    share
}

/// The share of one of `slots` trials on the host whose `sys` and `proc` trees lie under
/// `root`; parts the tree does not tell are `None`.
pub fn slot_share_under(root: &Path, slots: u32) -> SlotShare {
    let slots = slots.max(1);
    let cores = super::physical_cores_under(&root.join("sys")).map(|c| (c / slots).max(1));
    let tree = Root::new(root);
    let nodes = read_nodes(&tree, &mut Vec::new()).unwrap_or_default();
    let allowed = read_allowed(&tree).unwrap_or_default();
    let usable = |cpu: &u32| allowed.cpus.as_ref().is_none_or(|a| a.contains(cpu));
    let Some(node) = nodes.iter().find(|n| n.cpus.iter().any(usable)) else {
        return SlotShare {
            cores,
            ..SlotShare::default()
        };
    };
    let node_cpus: Vec<u32> = node.cpus.iter().copied().filter(|c| usable(c)).collect();
    SlotShare {
        cores,
        cpus: (slots == 1).then(|| one_per_core(root, &node_cpus)),
        memory: node.mem_total_bytes.map(|m| m / u64::from(slots)),
    }
}

/// The first of `cpus` on each physical core (hyper-threads of one core share its units); a
/// CPU whose core the tree does not name counts as a core of its own.
fn one_per_core(root: &Path, cpus: &[u32]) -> Vec<u32> {
    let mut seen = BTreeSet::new();
    cpus.iter()
        .copied()
        .filter(|cpu| {
            let topology = root.join(format!("sys/devices/system/cpu/cpu{cpu}/topology"));
            let read = |name: &str| {
                std::fs::read_to_string(topology.join(name))
                    .map(|s| s.trim().to_string())
                    .ok()
            };
            match (read("physical_package_id"), read("core_id")) {
                (Some(package), Some(core)) => seen.insert((package, core)),
                _ => true,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host of one NUMA node with 16 GiB and `cpus` as (cpu, core) pairs on one package.
    fn host(cpus: &[(u32, u32)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (cpu, core) in cpus {
            let dir = root
                .path()
                .join(format!("sys/devices/system/cpu/cpu{cpu}/topology"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("physical_package_id"), "0\n").unwrap();
            std::fs::write(dir.join("core_id"), format!("{core}\n")).unwrap();
        }
        let node = root.path().join("sys/devices/system/node/node0");
        std::fs::create_dir_all(&node).unwrap();
        let list: Vec<String> = cpus.iter().map(|(cpu, _)| cpu.to_string()).collect();
        std::fs::write(node.join("cpulist"), list.join(",")).unwrap();
        std::fs::write(node.join("meminfo"), "Node 0 MemTotal: 16777216 kB\n").unwrap();
        root
    }

    #[test]
    fn a_lone_trial_gets_one_cpu_per_physical_core_and_the_nodes_memory() {
        // Four cores, each with a hyper-thread sibling numbered four above it.
        let root = host(&[
            (0, 0),
            (1, 1),
            (2, 2),
            (3, 3),
            (4, 0),
            (5, 1),
            (6, 2),
            (7, 3),
        ]);
        let share = slot_share_under(root.path(), 1);
        assert_eq!(share.cores, Some(4));
        assert_eq!(share.cpus, Some(vec![0, 1, 2, 3]));
        assert_eq!(share.memory, Some(16 << 30));
    }

    #[test]
    fn trials_side_by_side_split_cores_and_memory_and_get_no_cpus_of_their_own() {
        let root = host(&[(0, 0), (1, 1), (2, 2), (3, 3)]);
        let share = slot_share_under(root.path(), 2);
        assert_eq!(share.cores, Some(2));
        assert_eq!(share.cpus, None);
        assert_eq!(share.memory, Some(8 << 30));
    }
}
