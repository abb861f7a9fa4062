//! Human-readable `infertune topo` output.

use super::cpuset::format_list;
use super::{Candidates, Topology};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use serde::Serialize;
use std::fmt::Write;

/// Binding candidates for one accelerator (or for the host when it has none).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DeviceCandidates {
    /// Accelerator index; `None` for host-level candidates.
    pub device: Option<u32>,
    /// The node the candidates are built around.
    pub node: Option<u32>,
    /// The candidates.
    pub candidates: Candidates,
}

/// Devices with the same node and the same candidates, merged (in first-seen order).
fn group_by_candidates(
    per_device: &[DeviceCandidates],
) -> Vec<(Vec<u32>, Option<u32>, &Candidates)> {
    let mut groups: Vec<(Vec<u32>, Option<u32>, &Candidates)> = Vec::new();
    for entry in per_device {
        match groups
            .iter_mut()
            .find(|(_, node, c)| *node == entry.node && **c == entry.candidates)
        {
            Some(group) => group.0.extend(entry.device),
            None => groups.push((
                entry.device.into_iter().collect(),
                entry.node,
                &entry.candidates,
            )),
        }
    }
    groups
}

/// `1536` → `1.5 KiB`; binary units, one decimal.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_header(header.to_vec());
    t
}

fn or_dash(value: Option<String>) -> String {
    value.unwrap_or_else(|| "-".into())
}

/// The full text report: host, nodes, allowed resources, accelerators, candidates, notes.
pub fn text(topo: &Topology, per_device: &[DeviceCandidates]) -> String {
    let mut out = String::new();
    if let Some(host) = &topo.host {
        let _ = writeln!(
            out,
            "Host: {} · {} · {} CPUs · {}",
            host.hostname.as_deref().unwrap_or("(unknown)"),
            host.cpu_model.as_deref().unwrap_or("(unknown CPU)"),
            host.logical_cpus,
            human_bytes(host.total_memory_bytes)
        );
    }
    let mut nodes = table(&["node", "CPUs", "memory", "free", "distances"]);
    for n in &topo.nodes {
        let distances: Vec<String> = n.distances.values().map(u32::to_string).collect();
        nodes.add_row(vec![
            n.id.to_string(),
            or_dash(Some(format_list(&n.cpus)).filter(|s| !s.is_empty())),
            or_dash(n.mem_total_bytes.map(human_bytes)),
            or_dash(n.mem_free_bytes.map(human_bytes)),
            distances.join(" "),
        ]);
    }
    let _ = writeln!(out, "NUMA nodes: {}\n{nodes}", topo.nodes.len());
    let _ = writeln!(
        out,
        "Allowed CPUs: {} · allowed memory nodes: {}",
        topo.allowed
            .cpus
            .as_ref()
            .map_or("unknown".into(), format_list),
        topo.allowed
            .mems
            .as_ref()
            .map_or("unknown".into(), format_list)
    );
    let _ = writeln!(
        out,
        "numactl: {}",
        topo.numactl.as_ref().map_or_else(
            || "not installed (apt-get install numactl, or yum install numactl)".to_string(),
            |p| p.display().to_string()
        )
    );
    if topo.accelerators.is_empty() {
        let _ = writeln!(out, "Accelerators: none found");
    } else {
        let mut devices = table(&[
            "device",
            "vendor",
            "name",
            "bus id",
            "memory",
            "node",
            "node from",
            "local CPUs",
        ]);
        for a in &topo.accelerators {
            devices.add_row(vec![
                a.index.to_string(),
                format!("{:?}", a.vendor).to_lowercase(),
                a.name.clone(),
                or_dash(a.bus_id.clone()),
                or_dash(a.memory_mib.map(|m| human_bytes(m * 1024 * 1024))),
                or_dash(a.numa_node.map(|n| n.to_string())),
                or_dash(a.node_source.clone()),
                or_dash(a.local_cpus.as_ref().map(format_list)),
            ]);
        }
        let _ = writeln!(out, "Accelerators: {}\n{devices}", topo.accelerators.len());
    }
    let groups = group_by_candidates(per_device);
    let mut bindings = table(&["devices", "node", "numa value", "meaning"]);
    let mut notes: Vec<String> = topo.notes.clone();
    for (devices, node, candidates) in &groups {
        let who = Some(format_list(devices)).filter(|d| !d.is_empty());
        for b in &candidates.bindings {
            bindings.add_row(vec![
                or_dash(who.clone()),
                or_dash(node.map(|n| n.to_string())),
                b.value(),
                b.label.clone(),
            ]);
        }
        notes.extend(candidates.notes.iter().map(|note| match &who {
            Some(d) if devices.len() == 1 => format!("device {d}: {note}"),
            Some(d) => format!("devices {d}: {note}"),
            None => note.clone(),
        }));
    }
    let _ = writeln!(out, "Binding candidates (numa: auto)\n{bindings}");
    if !notes.is_empty() {
        let _ = writeln!(out, "Notes:");
        for note in notes {
            let _ = writeln!(out, "  - {note}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn bytes_in_binary_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(65_461 * 1024 * 1024), "63.9 GiB");
    }
}
