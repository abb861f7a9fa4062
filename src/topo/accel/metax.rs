//! MetaX GPUs from `mx-smi` (boxed status table) and `mx-smi topo -m` (link matrix with
//! `Node Affinity` and `CPU Affinity` columns).

use super::table::{boxed_rows, is_bus_id, last_total, normalize_bus_id, parse_matrix};
use super::{apply_matrix, tool_text, Reported};
use crate::topo::runner::CommandRunner;

pub(super) fn report(runner: &dyn CommandRunner, notes: &mut Vec<String>) -> Vec<Reported> {
    let Some(text) = tool_text(runner, "mx-smi", &[], notes) else {
        return Vec::new();
    };
    let mut devices = parse_status(&text);
    if devices.is_empty() {
        return devices;
    }
    if let Some(matrix) = tool_text(runner, "mx-smi", &["topo", "-m"], notes) {
        match parse_matrix(&matrix, "GPU") {
            Ok(rows) => apply_matrix(&mut devices, &rows, "mx-smi", notes),
            Err(e) => notes.push(format!("`mx-smi topo -m` not understood: {e}")),
        }
    }
    devices
}

/// Each GPU is two table rows: `| 0  MXC500 | 0000:05:00.0 | 0% |` then
/// `| 51C  71W | 60982/65536 MiB | |`.
fn parse_status(text: &str) -> Vec<Reported> {
    let rows = boxed_rows(text);
    let mut devices = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        if row.len() < 2 || !is_bus_id(&row[1]) {
            continue;
        }
        let mut words = row[0].split_whitespace();
        let Some(index) = words.next().and_then(|w| w.parse().ok()) else {
            continue;
        };
        let memory_mib = rows
            .get(i + 1)
            .and_then(|next| next.get(1))
            .and_then(|c| last_total(c));
        devices.push(Reported {
            index,
            name: words.collect::<Vec<_>>().join(" "),
            bus_id: Some(normalize_bus_id(&row[1])),
            memory_mib,
            ..Reported::default()
        });
    }
    devices
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_table_rows_pair_up() {
        let text = "\
| GPU         NAME                   | Bus-id              | GPU-Util             |
| Temp        Power                  | Memory-Usage        |                      |
|====================================+=====================+======================|
| 0           MXC500                 | 0000:05:00.0        | 0%                   |
| 51C         71W                    | 60982/65536 MiB     |                      |
+------------------------------------+---------------------+----------------------+
| 1           MXC500                 | 0000:08:00.0        | 0%                   |
| 51C         76W                    | 60534/65536 MiB     |                      |
+---------------------------------------------------------------------------------+
| Process:                                                                        |
|  GPU                    PID         Process Name                 GPU Memory     |
|  0                    15652         python                       60032          |
";
        let devices = parse_status(text);
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[1].index, 1);
        assert_eq!(devices[1].name, "MXC500");
        assert_eq!(devices[1].bus_id.as_deref(), Some("0000:08:00.0"));
        assert_eq!(devices[0].memory_mib, Some(65536));
    }
}
