//! Huawei Ascend NPUs from `npu-smi info` (boxed status table) and `npu-smi info -t topo`
//! (link matrix with a `CPU Affinity` column; the node follows from those CPUs).

use super::table::{boxed_rows, is_bus_id, last_total, normalize_bus_id, parse_matrix};
use super::{apply_matrix, tool_text, Reported};
use crate::topo::runner::CommandRunner;

pub(super) fn report(runner: &dyn CommandRunner, notes: &mut Vec<String>) -> Vec<Reported> {
    let Some(text) = tool_text(runner, "npu-smi", &["info"], notes) else {
        return Vec::new();
    };
    let mut devices = parse_info(&text);
    if devices.is_empty() {
        return devices;
    }
    if let Some(matrix) = tool_text(runner, "npu-smi", &["info", "-t", "topo"], notes) {
        match parse_matrix(&matrix, "NPU") {
            Ok(rows) => apply_matrix(&mut devices, &rows, "npu-smi", notes),
            Err(e) => notes.push(format!("`npu-smi info -t topo` not understood: {e}")),
        }
    }
    devices
}

/// Each chip is two table rows: `| 0  910B4 | OK | 88.2  30  0 / 0 |` then
/// `| 0 [phy-id] | 0000:C1:00.0 | 0  0 / 0  26838/ 32768 |`. Chips are numbered in the
/// order listed, which is the logical id `ASCEND_RT_VISIBLE_DEVICES` and the topo matrix use.
fn parse_info(text: &str) -> Vec<Reported> {
    let rows = boxed_rows(text);
    let mut devices = Vec::new();
    for pair in rows.windows(2) {
        let (head, detail) = (&pair[0], &pair[1]);
        if head.len() < 3 || detail.len() < 3 || !is_bus_id(&detail[1]) {
            continue;
        }
        let mut words = head[0].split_whitespace();
        if words.next().and_then(|w| w.parse::<u32>().ok()).is_none() {
            continue;
        }
        devices.push(Reported {
            index: devices.len() as u32,
            name: words.collect::<Vec<_>>().join(" "),
            bus_id: Some(normalize_bus_id(&detail[1])),
            memory_mib: last_total(&detail[2]),
            ..Reported::default()
        });
    }
    devices
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_chip_cards_get_consecutive_logical_ids() {
        let text = "\
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     Ascend910           | OK            | 178.5       36                0    / 0             |
| 0     0                   | 0000:9D:00.0  | 0           0    / 0          3416 / 65536         |
+------------------------------------------------------------------------------------------------+
| 0     Ascend910           | OK            | -           36                0    / 0             |
| 1     1                   | 0000:9F:00.0  | 0           0    / 0          3195 / 65536         |
+===========================+===============+====================================================+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| No running processes found in NPU 0                                                            |
";
        let devices = parse_info(text);
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[1].index, 1);
        assert_eq!(devices[1].bus_id.as_deref(), Some("0000:9f:00.0"));
        assert_eq!(devices[0].memory_mib, Some(65536));
        assert_eq!(devices[0].name, "Ascend910");
    }
}
