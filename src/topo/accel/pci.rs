//! sysfs PCI facts: a device's `numa_node` / `local_cpulist`, and the generic accelerator scan
//! used when no vendor tool answered.

use super::super::cpuset::parse_list;
use super::super::sysfs::Root;
use super::Reported;
use anyhow::{anyhow, Context, Result};
use std::collections::BTreeSet;

const DEVICES: &str = "sys/bus/pci/devices";

/// A PCI device's locality as sysfs reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct PciAffinity {
    /// `numa_node`, unless absent or `-1` (firmware published no affinity).
    pub numa_node: Option<u32>,
    /// `local_cpulist`, unless absent or empty.
    pub local_cpus: Option<BTreeSet<u32>>,
}

/// Reads `numa_node` and `local_cpulist` of the device at `bus_id` (sysfs form).
pub(super) fn affinity(root: &Root, bus_id: &str) -> Result<PciAffinity> {
    let base = format!("{DEVICES}/{bus_id}");
    let numa_node = match root.read(&format!("{base}/numa_node"))? {
        Some(text) => {
            let value: i64 = text
                .trim()
                .parse()
                .map_err(|_| anyhow!("{base}/numa_node: `{}` is not a number", text.trim()))?;
            u32::try_from(value).ok()
        }
        None => None,
    };
    let local_cpus = match root.read(&format!("{base}/local_cpulist"))? {
        Some(text) => Some(parse_list(&text).map_err(|e| anyhow!("{base}/local_cpulist: {e}"))?),
        None => None,
    }
    .filter(|set| !set.is_empty());
    Ok(PciAffinity {
        numa_node,
        local_cpus,
    })
}

/// PCI classes that hold compute accelerators: 3D controller and processing accelerator.
const ACCELERATOR_CLASSES: [u32; 2] = [0x0302, 0x1200];
/// VGA controllers count only from GPU makers (servers also carry BMC VGA chips).
const VGA_CLASS: u32 = 0x0300;
const GPU_VENDORS: [(u32, &str); 2] = [(0x10de, "NVIDIA"), (0x1002, "AMD")];
const OTHER_VENDORS: [(u32, &str); 3] = [(0x19e5, "Huawei"), (0x9999, "MetaX"), (0x8086, "Intel")];

/// Lists accelerator-class PCI devices under the root, in bus order.
pub(super) fn scan(root: &Root) -> Result<Vec<Reported>> {
    let dir = root.path(DEVICES);
    let mut bus_ids: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    bus_ids.sort();
    let mut found = Vec::new();
    for bus_id in bus_ids {
        let base = format!("{DEVICES}/{bus_id}");
        let (Some(class), Some(vendor)) = (
            hex_file(root, &format!("{base}/class"))?,
            hex_file(root, &format!("{base}/vendor"))?,
        ) else {
            continue;
        };
        let class_code = class >> 8;
        let gpu_maker = GPU_VENDORS.iter().any(|(id, _)| *id == vendor);
        if !(ACCELERATOR_CLASSES.contains(&class_code) || class_code == VGA_CLASS && gpu_maker) {
            continue;
        }
        let device = hex_file(root, &format!("{base}/device"))?.unwrap_or(0);
        let maker = GPU_VENDORS
            .iter()
            .chain(OTHER_VENDORS.iter())
            .find(|(id, _)| *id == vendor)
            .map_or("PCI", |(_, name)| name);
        found.push(Reported {
            index: found.len() as u32,
            name: format!(
                "{maker} {vendor:04x}:{device:04x} ({})",
                class_name(class_code)
            ),
            bus_id: Some(bus_id),
            ..Reported::default()
        });
    }
    Ok(found)
}

fn class_name(class_code: u32) -> &'static str {
    match class_code {
        0x0300 => "VGA controller",
        0x0302 => "3D controller",
        _ => "processing accelerator",
    }
}

fn hex_file(root: &Root, rel: &str) -> Result<Option<u32>> {
    let Some(text) = root.read(rel)? else {
        return Ok(None);
    };
    let digits = text.trim().trim_start_matches("0x");
    u32::from_str_radix(digits, 16)
        .map(Some)
        .map_err(|_| anyhow!("{rel}: `{}` is not a hex number", text.trim()))
}
