//! NUMA nodes and the process's allowed CPUs/memory nodes, read from a sysfs/procfs tree
//! under a configurable root (`/` on a real host, a fixture folder in tests).

use super::cpuset::parse_list;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One NUMA node: its CPUs, memory and distances.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NumaNode {
    /// Node id (`N` in `/sys/devices/system/node/nodeN`).
    pub id: u32,
    /// CPUs of the node (empty for memory-only nodes).
    pub cpus: BTreeSet<u32>,
    /// `MemTotal` of the node in bytes, when known.
    pub mem_total_bytes: Option<u64>,
    /// `MemFree` of the node in bytes, when known.
    pub mem_free_bytes: Option<u64>,
    /// Distance to each node by id (10 = local), from the node's `distance` file.
    pub distances: BTreeMap<u32, u32>,
}

/// What this process may use (`Cpus_allowed_list` / `Mems_allowed_list`; cgroup cpusets in containers).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Allowed {
    /// CPUs this process may run on; `None` when `/proc/self/status` was not readable.
    pub cpus: Option<BTreeSet<u32>>,
    /// Memory nodes this process may allocate from; `None` when unknown.
    pub mems: Option<BTreeSet<u32>>,
}

/// Paths under a root folder, and reading them.
#[derive(Clone, Debug)]
pub(crate) struct Root(PathBuf);

impl Root {
    /// A root at `dir` (`/` for the running host).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Root(dir.into())
    }

    /// `rel` (an absolute-looking path such as `sys/bus/pci/devices`) under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel.trim_start_matches('/'))
    }

    /// Contents of `rel`, or `None` when it does not exist.
    pub fn read(&self, rel: &str) -> Result<Option<String>> {
        read_optional(&self.path(rel))
    }
}

/// Contents of `path`, `None` when it does not exist; other I/O errors name the path.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

const NODE_DIR: &str = "sys/devices/system/node";

/// Reads all NUMA nodes. A host without `/sys/devices/system/node` is reported as one node
/// holding every online CPU and all memory, with a note saying so.
pub(crate) fn read_nodes(root: &Root, notes: &mut Vec<String>) -> Result<Vec<NumaNode>> {
    let dir = root.path(NODE_DIR);
    let ids = match node_ids(&dir)? {
        Some(ids) if !ids.is_empty() => ids,
        _ => {
            notes.push(format!(
                "no NUMA information under {}; treating the host as one node",
                dir.display()
            ));
            return Ok(vec![whole_host_node(root)?]);
        }
    };
    let mut nodes = Vec::with_capacity(ids.len());
    for &id in &ids {
        let base = format!("{NODE_DIR}/node{id}");
        let cpus = match root.read(&format!("{base}/cpulist"))? {
            Some(text) => parse_list(&text).map_err(|e| {
                anyhow::anyhow!("{}: {e}", root.path(&base).join("cpulist").display())
            })?,
            None => BTreeSet::new(),
        };
        let meminfo = root.read(&format!("{base}/meminfo"))?.unwrap_or_default();
        let distances = match root.read(&format!("{base}/distance"))? {
            Some(text) => parse_distances(&text, &ids).unwrap_or_else(|e| {
                notes.push(format!("node {id}: ignoring distance file: {e}"));
                BTreeMap::new()
            }),
            None => BTreeMap::new(),
        };
        nodes.push(NumaNode {
            id,
            cpus,
            mem_total_bytes: meminfo_bytes(&meminfo, "MemTotal"),
            mem_free_bytes: meminfo_bytes(&meminfo, "MemFree"),
            distances,
        });
    }
    Ok(nodes)
}

fn node_ids(dir: &Path) -> Result<Option<Vec<u32>>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    let mut ids: Vec<u32> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            entry
                .file_name()
                .to_str()?
                .strip_prefix("node")?
                .parse()
                .ok()
        })
        .collect();
    ids.sort_unstable();
    Ok(Some(ids))
}

fn whole_host_node(root: &Root) -> Result<NumaNode> {
    let cpus = match root.read("sys/devices/system/cpu/online")? {
        Some(text) => {
            parse_list(&text).map_err(|e| anyhow::anyhow!("sys/devices/system/cpu/online: {e}"))?
        }
        None => BTreeSet::new(),
    };
    let meminfo = root.read("proc/meminfo")?.unwrap_or_default();
    Ok(NumaNode {
        id: 0,
        cpus,
        mem_total_bytes: meminfo_bytes(&meminfo, "MemTotal"),
        mem_free_bytes: meminfo_bytes(&meminfo, "MemFree"),
        distances: BTreeMap::from([(0, 10)]),
    })
}

/// The `distance` file lists one number per node, in node-id order.
fn parse_distances(text: &str, ids: &[u32]) -> Result<BTreeMap<u32, u32>, String> {
    let values: Vec<u32> = text
        .split_whitespace()
        .map(|v| v.parse().map_err(|_| format!("`{v}` is not a number")))
        .collect::<Result<_, _>>()?;
    if values.len() != ids.len() {
        return Err(format!("{} values for {} nodes", values.len(), ids.len()));
    }
    Ok(ids.iter().copied().zip(values).collect())
}

/// A `kB` field of a meminfo file (`Node 0 MemFree: 4570048 kB` or `MemFree: 4570048 kB`), in bytes.
fn meminfo_bytes(meminfo: &str, field: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        if key.split_whitespace().last()? != field {
            return None;
        }
        let mut parts = value.split_whitespace();
        let number: u64 = parts.next()?.parse().ok()?;
        let unit_bytes = match parts.next() {
            Some("kB") => 1024,
            None => 1,
            Some(_) => return None,
        };
        Some(number * unit_bytes)
    })
}

/// Reads `Cpus_allowed_list` and `Mems_allowed_list` from `proc/self/status` under the root.
pub(crate) fn read_allowed(root: &Root) -> Result<Allowed> {
    let Some(status) = root.read("proc/self/status")? else {
        return Ok(Allowed::default());
    };
    let field = |name: &str| -> Result<Option<BTreeSet<u32>>> {
        let Some(line) = status.lines().find(|l| l.starts_with(&format!("{name}:"))) else {
            return Ok(None);
        };
        let value = &line[name.len() + 1..];
        parse_list(value).map(Some).map_err(|e| {
            anyhow::anyhow!("{}: {name}: {e}", root.path("proc/self/status").display())
        })
    };
    Ok(Allowed {
        cpus: field("Cpus_allowed_list")?,
        mems: field("Mems_allowed_list")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_fields_in_bytes() {
        let text = "Node 3 MemTotal:       67067904 kB\nNode 3 MemFree:        11667456 kB\n";
        assert_eq!(meminfo_bytes(text, "MemTotal"), Some(67_067_904 * 1024));
        assert_eq!(meminfo_bytes(text, "MemFree"), Some(11_667_456 * 1024));
        assert_eq!(meminfo_bytes(text, "MemUsed"), None);
    }

    #[test]
    fn distances_follow_node_order() {
        let map = parse_distances("10 21\n", &[0, 1]).unwrap();
        assert_eq!(map, BTreeMap::from([(0, 10), (1, 21)]));
        assert!(parse_distances("10 21 31", &[0, 1])
            .unwrap_err()
            .contains("3 values"));
    }
}
