//! Host topology: NUMA nodes, CPUs, memory, accelerators and binding candidates.
//!
//! `Topology::discover` reads the running host; [`Topology::from_root`] reads a sysfs/procfs
//! tree under any folder and takes a [`CommandRunner`], so tests use fixture trees and
//! captured vendor-tool outputs. [`Topology::candidates`] proposes numactl bindings for an
//! instance whose accelerator sits on a given node, and [`resolve_numa_candidates`] turns a
//! `numa` parameter (`candidates: auto` or an explicit list) into the values a sampler picks;
//! `numactl_prefix` turns a chosen value back into the launch prefix.

pub(crate) mod accel;
mod binding;
mod cores;
pub mod cpuset;
mod numa_error;
mod numa_param;
mod pinning;
mod rebase;
pub(crate) mod render;
pub mod runner;
mod share;
mod sysfs;

pub use accel::Vendor;

pub use accel::Accelerator;
pub use binding::Binding;
pub use binding::Candidates;
pub use cores::{physical_cores, physical_cores_under};
pub use numa_error::NumaError;
pub(crate) use numa_param::numactl_prefix;
pub use numa_param::{
    numactl_available, resolve_numa_candidates, resolve_numa_choices, NumaCandidates,
};
pub use pinning::{host_cpusets, Cpusets};
pub use runner::FixtureRunner;
pub(crate) use runner::{CommandRunner, SystemRunner};
pub use share::{slot_share, slot_share_under, SlotShare};
pub(crate) use sysfs::{Allowed, NumaNode};

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Everything known about the host's layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Host facts (only for the running host, not for a fixture root).
    pub host: Option<HostFacts>,
    /// NUMA nodes in id order (at least one).
    pub nodes: Vec<NumaNode>,
    /// CPUs and memory nodes this process may use.
    pub allowed: Allowed,
    /// Accelerators with their local node.
    pub accelerators: Vec<Accelerator>,
    /// Where `numactl` is installed, if it is.
    pub numactl: Option<PathBuf>,
    /// Things discovery could not determine or had to work around.
    pub notes: Vec<String>,
}

/// Facts about the running host, from sysinfo.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Host name.
    pub hostname: Option<String>,
    /// CPU model (brand string of the first CPU).
    pub cpu_model: Option<String>,
    /// Logical CPUs.
    pub logical_cpus: usize,
    /// Physical memory in bytes.
    pub total_memory_bytes: u64,
}

impl Topology {
    /// Reads the running host (`/sys`, `/proc`, vendor tools on `PATH`, sysinfo).
    pub(crate) fn discover() -> Result<Topology> {
        let mut topo = Self::from_root("/", &SystemRunner::default())?;
        topo.host = host_facts();
        Ok(topo)
    }

    /// Reads the tree under `root` (`sys/devices/system/node`, `sys/bus/pci/devices`,
    /// `proc/self/status`) and asks `runner` for vendor tools and `numactl`.
    pub fn from_root(root: impl AsRef<Path>, runner: &dyn CommandRunner) -> Result<Topology> {
        let root = sysfs::Root::new(root.as_ref());
        let mut notes = Vec::new();
        let nodes = sysfs::read_nodes(&root, &mut notes)?;
        let allowed = sysfs::read_allowed(&root)?;
        let accelerators = accel::discover(&root, runner, &nodes, &mut notes)?;
        Ok(Topology {
            host: None,
            nodes,
            allowed,
            accelerators,
            numactl: runner.locate("numactl"),
            notes,
        })
    }

    /// The node with this id.
    pub fn node(&self, id: u32) -> Option<&NumaNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The accelerator with this index.
    pub fn accelerator(&self, index: u32) -> Option<&Accelerator> {
        self.accelerators.iter().find(|a| a.index == index)
    }

    /// Node ids, for messages (`0-7`).
    pub(crate) fn node_list(&self) -> String {
        cpuset::format_list(self.nodes.iter().map(|n| &n.id))
    }
}

fn host_facts() -> Option<HostFacts> {
    let mut system = sysinfo::System::new().ok()?;
    system.refresh_memory();
    system.refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
    Some(HostFacts {
        hostname: sysinfo::System::host_name().ok(),
        cpu_model: system.cpus().first().map(|c| c.brand().trim().to_string()),
        logical_cpus: system.cpus().len(),
        total_memory_bytes: system.total_memory(),
    })
}

/// The captured host `tests/fixtures/topo/<name>` (with its vendor-tool transcripts), for tests.
#[cfg(test)]
pub(crate) fn fixture(name: &str) -> Topology {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topo")
        .join(name);
    let commands = root.join("commands");
    let runner = if commands.is_dir() {
        FixtureRunner::from_dir(&commands).expect("the fixture's transcripts must parse")
    } else {
        FixtureRunner::new()
    };
    Topology::from_root(&root, &runner).expect("the fixture host must parse")
}
