//! Text layouts shared by the vendor tools: the `topo -m` link matrix (nvidia-smi, mx-smi,
//! npu-smi) and the boxed `|`-separated status tables (npu-smi info, mx-smi).

use std::collections::BTreeMap;

/// One device row of a `topo -m` matrix: its index and its cells by column header.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MatrixRow {
    /// `N` of the row label (`GPU3` → 3).
    pub index: u32,
    /// Cell text by header name (`GPU1` → `NV12`, `CPU Affinity` → `0-23,48-71`, …).
    pub cells: BTreeMap<String, String>,
}

impl MatrixRow {
    /// The first of `names` that has a cell here.
    pub fn cell(&self, names: &[&str]) -> Option<&str> {
        names
            .iter()
            .find_map(|n| self.cells.get(*n).map(String::as_str))
    }
}

/// Splits a matrix line into cells: columns are separated by tabs or by runs of 2+ spaces
/// (single spaces belong to a name such as `CPU Affinity`); empty cells are dropped, which
/// absorbs nvidia-smi's doubled tab before `GPU NUMA ID`.
fn matrix_cells(line: &str) -> Vec<String> {
    line.replace('\t', "  ")
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses a `topo -m` matrix by its header: the header is the first line naming an
/// `Affinity` column; device rows are the lines whose label is `<prefix><N>` (`GPU0`, `NPU7`).
/// Rows of other devices (NICs) and the legend are skipped.
pub(crate) fn parse_matrix(text: &str, prefix: &str) -> Result<Vec<MatrixRow>, String> {
    let mut lines = text.lines();
    let header = lines
        .by_ref()
        .find(|l| l.contains("Affinity"))
        .ok_or("no header line with an `Affinity` column")?;
    let columns = matrix_cells(header);
    let mut rows = Vec::new();
    for line in lines {
        let mut cells = matrix_cells(line);
        if cells.is_empty() {
            continue;
        }
        let label = cells.remove(0);
        let Some(index) = label.strip_prefix(prefix).and_then(|n| n.parse().ok()) else {
            continue;
        };
        if cells.len() != columns.len() {
            return Err(format!(
                "row {label} has {} cells but the header names {} columns",
                cells.len(),
                columns.len()
            ));
        }
        rows.push(MatrixRow {
            index,
            cells: columns.iter().cloned().zip(cells).collect(),
        });
    }
    Ok(rows)
}

/// The rows of a boxed status table (`| a | b | c |` lines) as trimmed cells, up to the
/// process section (a row whose first cell starts with `Process`, or names `Process id`).
pub(crate) fn boxed_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some(inner) = line.strip_prefix('|').and_then(|l| l.strip_suffix('|')) else {
            continue;
        };
        let cells: Vec<String> = inner.split('|').map(|c| c.trim().to_string()).collect();
        if cells.iter().any(|c| c.starts_with("Process")) {
            break;
        }
        rows.push(cells);
    }
    rows
}

/// True for a PCI address such as `0000:05:00.0` or `00000000:17:00.0`.
pub(crate) fn is_bus_id(text: &str) -> bool {
    let parts: Vec<&str> = text.split(':').collect();
    parts.len() == 3
        && parts[2].contains('.')
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_hexdigit() || c == '.'))
}

/// A bus id in sysfs form: four-digit domain, lower case (`00000000:1B:00.0` → `0000:1b:00.0`).
pub(crate) fn normalize_bus_id(text: &str) -> String {
    let lower = text.trim().to_ascii_lowercase();
    match lower.split_once(':') {
        Some((domain, rest)) if domain.len() > 4 => {
            format!("{}:{rest}", &domain[domain.len() - 4..])
        }
        _ => lower,
    }
}

/// The last `used / total` pair in a cell (`0    / 0          3419 / 65536` → 65536).
pub(crate) fn last_total(cell: &str) -> Option<u64> {
    let spaced = cell.replace('/', " / ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    tokens
        .windows(3)
        .rev()
        .find(|w| w[1] == "/" && w[0].parse::<u64>().is_ok())
        .and_then(|w| w[2].parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_matrix_with_doubled_tab_keeps_columns_aligned() {
        let text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n\
                    GPU0\t X \tPHB\t0-63\t0\t\tN/A\n\
                    GPU1\tPHB\t X \t0-63\t1\t\tN/A\n\nLegend:\n\n  X    = Self\n";
        let rows = parse_matrix(text, "GPU").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].cell(&["NUMA Affinity"]), Some("1"));
        assert_eq!(rows[0].cell(&["CPU Affinity"]), Some("0-63"));
        assert_eq!(rows[0].cell(&["GPU NUMA ID"]), Some("N/A"));
        assert_eq!(rows[1].cell(&["GPU1"]), Some("X"));
    }

    #[test]
    fn space_aligned_matrix_parses_too() {
        let text = "        GPU0    GPU1    Node Affinity  CPU Affinity\n\
                    GPU0    X       MX      0              0-15\n\
                    GPU1    MX      X       2              32-47\n";
        let rows = parse_matrix(text, "GPU").unwrap();
        assert_eq!(rows[1].cell(&["NUMA Affinity", "Node Affinity"]), Some("2"));
    }

    #[test]
    fn ragged_rows_are_an_error_naming_the_row() {
        let text = "\tGPU0\tCPU Affinity\nGPU0\tX\t0-3\textra\n";
        assert!(parse_matrix(text, "GPU").unwrap_err().contains("GPU0"));
        assert!(parse_matrix("no header", "GPU").is_err());
    }

    #[test]
    fn bus_ids() {
        assert!(is_bus_id("0000:9D:00.0"));
        assert!(is_bus_id("00000000:17:00.0"));
        assert!(!is_bus_id("OK"));
        assert!(!is_bus_id("60982/65536 MiB"));
        assert_eq!(normalize_bus_id("00000000:1B:00.0"), "0000:1b:00.0");
        assert_eq!(normalize_bus_id("0000:05:00.0"), "0000:05:00.0");
    }

    #[test]
    fn memory_totals() {
        assert_eq!(
            last_total("0           0    / 0          3419 / 65536"),
            Some(65536)
        );
        assert_eq!(last_total("60982/65536 MiB"), Some(65536));
        assert_eq!(last_total("26838/ 32768"), Some(32768));
        assert_eq!(last_total("0%"), None);
    }
}
