//! Accelerators and their local NUMA node: vendor tools first (NVIDIA, Ascend, MetaX), then a
//! generic PCI scan when no tool listed anything. The node comes from sysfs `numa_node`, else
//! the tool's affinity column, else the node holding the device's local CPUs.

mod ascend;
mod metax;
mod nvidia;
mod pci;
pub mod table;

use super::cpuset::{format_list, parse_list};
use super::runner::{CommandRunner, ToolOutput};
use super::sysfs::{NumaNode, Root};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use table::MatrixRow;

/// Who makes the accelerator (and so which tool described it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Vendor {
    /// NVIDIA GPU, from `nvidia-smi`.
    Nvidia,
    /// Huawei Ascend NPU, from `npu-smi`.
    Ascend,
    /// MetaX GPU, from `mx-smi`.
    Metax,
    /// Found by the generic PCI scan (no vendor tool answered).
    Pci,
}

/// One accelerator and where it sits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Accelerator {
    /// Maker / source tool.
    pub vendor: Vendor,
    /// Device index as the vendor runtime numbers it (`CUDA_VISIBLE_DEVICES`,
    /// `ASCEND_RT_VISIBLE_DEVICES`); PCI scan order for generic devices.
    pub index: u32,
    /// Model name as the tool prints it.
    pub name: String,
    /// PCI address in sysfs form (`0000:17:00.0`), when known.
    pub bus_id: Option<String>,
    /// Device memory in MiB, when known.
    pub memory_mib: Option<u64>,
    /// The NUMA node local to the device, when it could be determined.
    pub numa_node: Option<u32>,
    /// Where `numa_node` came from (`sysfs numa_node`, `nvidia-smi topo -m`, …).
    pub node_source: Option<String>,
    /// CPUs local to the device, when known.
    pub local_cpus: Option<BTreeSet<u32>>,
}

/// What a vendor tool reports about one device, before sysfs is consulted.
#[derive(Clone, Debug, Default, PartialEq)]
struct Reported {
    index: u32,
    name: String,
    bus_id: Option<String>,
    memory_mib: Option<u64>,
    affinity_node: Option<u32>,
    affinity_cpus: Option<BTreeSet<u32>>,
}

/// Finds the accelerators of the host under `root`, using `runner` for vendor tools.
pub(crate) fn discover(
    root: &Root,
    runner: &dyn CommandRunner,
    nodes: &[NumaNode],
    notes: &mut Vec<String>,
) -> Result<Vec<Accelerator>> {
    let mut found: Vec<(Vendor, &str, Vec<Reported>)> = vec![
        (Vendor::Nvidia, "nvidia-smi", nvidia::report(runner, notes)),
        (Vendor::Ascend, "npu-smi", ascend::report(runner, notes)),
        (Vendor::Metax, "mx-smi", metax::report(runner, notes)),
    ];
    found.retain(|(_, _, devices)| !devices.is_empty());
    if found.is_empty() {
        found.push((Vendor::Pci, "PCI scan", pci::scan(root)?));
    }
    let mut out = Vec::new();
    for (vendor, tool, devices) in found {
        for device in devices {
            out.push(locate(vendor, tool, device, root, nodes, notes)?);
        }
    }
    Ok(out)
}

/// Runs a vendor tool; a missing tool is silent, a failing one leaves a note.
fn tool_text(
    runner: &dyn CommandRunner,
    program: &str,
    args: &[&str],
    notes: &mut Vec<String>,
) -> Option<String> {
    match runner.run(program, args) {
        ToolOutput::Stdout(text) => Some(text),
        ToolOutput::Missing => None,
        ToolOutput::Failed(why) => {
            notes.push(format!("`{program} {}` failed: {why}", args.join(" ")));
            None
        }
    }
}

/// Copies a `topo -m` matrix's affinity columns onto the devices with the same index.
fn apply_matrix(devices: &mut [Reported], rows: &[MatrixRow], tool: &str, notes: &mut Vec<String>) {
    for row in rows {
        let Some(device) = devices.iter_mut().find(|d| d.index == row.index) else {
            continue;
        };
        device.affinity_node = row
            .cell(&["NUMA Affinity", "Node Affinity"])
            .and_then(|c| c.parse().ok());
        if let Some(cpus) = row.cell(&["CPU Affinity"]) {
            match parse_list(cpus) {
                Ok(set) if !set.is_empty() => device.affinity_cpus = Some(set),
                Ok(_) => {}
                Err(e) => notes.push(format!("{tool}: device {}: CPU Affinity: {e}", row.index)),
            }
        }
    }
}

fn locate(
    vendor: Vendor,
    tool: &str,
    device: Reported,
    root: &Root,
    nodes: &[NumaNode],
    notes: &mut Vec<String>,
) -> Result<Accelerator> {
    let sysfs = match &device.bus_id {
        Some(bus) => pci::affinity(root, bus)?,
        None => pci::PciAffinity::default(),
    };
    let label = format!("{tool} device {}", device.index);
    let sources = [
        "sysfs numa_node".to_string(),
        format!("{tool} topo affinity"),
        "sysfs local_cpulist".to_string(),
        format!("{tool} CPU affinity"),
    ];
    let mut chosen = None;
    for (step, source) in sources.into_iter().enumerate() {
        let node = match step {
            0 => sysfs.numa_node,
            1 => device.affinity_node,
            2 => sysfs
                .local_cpus
                .as_ref()
                .and_then(|c| node_of_cpus(nodes, c, &label, notes)),
            _ => device
                .affinity_cpus
                .as_ref()
                .and_then(|c| node_of_cpus(nodes, c, &label, notes)),
        };
        match node {
            Some(n) if nodes.iter().any(|x| x.id == n) => {
                chosen = Some((n, source));
                break;
            }
            Some(n) => notes.push(format!(
                "{label}: {source} names node {n}, which does not exist"
            )),
            None => {}
        }
    }
    if chosen.is_none() {
        notes.push(format!("{label}: local NUMA node unknown"));
    }
    let (numa_node, node_source) = chosen.unzip();
    Ok(Accelerator {
        vendor,
        index: device.index,
        name: device.name,
        bus_id: device.bus_id,
        memory_mib: device.memory_mib,
        numa_node,
        node_source,
        local_cpus: sysfs.local_cpus.or(device.affinity_cpus),
    })
}

/// The node whose CPUs include all of `cpus`; on a one-node host that node.
fn node_of_cpus(
    nodes: &[NumaNode],
    cpus: &BTreeSet<u32>,
    label: &str,
    notes: &mut Vec<String>,
) -> Option<u32> {
    if let [only] = nodes {
        return Some(only.id);
    }
    let holder = nodes
        .iter()
        .find(|n| !n.cpus.is_empty() && cpus.is_subset(&n.cpus));
    if holder.is_none() {
        let touched: Vec<u32> = nodes
            .iter()
            .filter(|n| !n.cpus.is_disjoint(cpus))
            .map(|n| n.id)
            .collect();
        notes.push(format!(
            "{label}: local CPUs {} span nodes {}",
            format_list(cpus),
            format_list(&touched)
        ));
    }
    holder.map(|n| n.id)
}
