//! NVIDIA GPUs from `nvidia-smi --query-gpu=… --format=csv,noheader` and `nvidia-smi topo -m`.

use super::table::{normalize_bus_id, parse_matrix};
use super::{apply_matrix, tool_text, Reported};
use crate::topo::runner::CommandRunner;

/// The query: index, PCI address, memory, and the name last (names never hold commas, but
/// keeping it last makes that irrelevant).
const QUERY: [&str; 2] = [
    "--query-gpu=index,pci.bus_id,memory.total,name",
    "--format=csv,noheader",
];

pub(super) fn report(runner: &dyn CommandRunner, notes: &mut Vec<String>) -> Vec<Reported> {
    let Some(text) = tool_text(runner, "nvidia-smi", &QUERY, notes) else {
        return Vec::new();
    };
    let mut devices = match parse_query(&text) {
        Ok(devices) => devices,
        Err(e) => {
            notes.push(format!("nvidia-smi query output not understood: {e}"));
            return Vec::new();
        }
    };
    if let Some(matrix) = tool_text(runner, "nvidia-smi", &["topo", "-m"], notes) {
        match parse_matrix(&matrix, "GPU") {
            Ok(rows) => apply_matrix(&mut devices, &rows, "nvidia-smi", notes),
            Err(e) => notes.push(format!("`nvidia-smi topo -m` not understood: {e}")),
        }
    }
    devices
}

/// Parses lines such as `0, 00000000:18:00.0, 81559 MiB, NVIDIA H100 80GB HBM3`.
fn parse_query(text: &str) -> Result<Vec<Reported>, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.splitn(4, ',').map(str::trim).collect();
            let [index, bus, memory, name] = fields[..] else {
                return Err(format!("`{line}`: expected index, bus id, memory, name"));
            };
            let index = index
                .parse()
                .map_err(|_| format!("`{line}`: index `{index}` is not a number"))?;
            Ok(Reported {
                index,
                name: name.to_string(),
                bus_id: Some(normalize_bus_id(bus)),
                memory_mib: memory.trim_end_matches("MiB").trim().parse().ok(),
                ..Reported::default()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_lines() {
        let devices =
            parse_query("0, 00000000:18:00.0, 81559 MiB, NVIDIA H100 80GB HBM3\n1, 00000000:2A:00.0, [N/A], NVIDIA H100 80GB HBM3\n")
                .unwrap();
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[0].bus_id.as_deref(), Some("0000:18:00.0"));
        assert_eq!(devices[0].memory_mib, Some(81559));
        assert_eq!(devices[1].memory_mib, None);
        assert_eq!(devices[1].name, "NVIDIA H100 80GB HBM3");
    }

    #[test]
    fn malformed_query_names_the_line() {
        let err = parse_query("x, 0000:18:00.0, 1 MiB, GPU").unwrap_err();
        assert!(err.contains("index `x`"), "{err}");
        assert!(parse_query("0, 0000:18:00.0")
            .unwrap_err()
            .contains("expected"));
    }
}
