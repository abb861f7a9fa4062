//! Accelerator power, memory and utilisation from the platform's tool: `nvidia-smi` (CSV
//! query), `npu-smi info` (Ascend) and `mx-smi` (MetaX) tables, read for the slot's devices.

use anyhow::{bail, Context, Result};
use std::process::Command;

/// One reading of a slot's accelerators: power and memory summed over them, utilisation
/// their mean (a fraction). A figure the tool did not report is `None`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Reading {
    /// Seconds since the probe's first scrape.
    pub at: f64,
    /// The tool that read it.
    pub tool: &'static str,
    /// Watts.
    pub power_w: Option<f64>,
    /// MiB in use.
    pub memory_used_mib: Option<f64>,
    /// Busy fraction.
    pub utilization: Option<f64>,
}

/// One device's figures as a tool prints them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Device {
    /// The tool's device index.
    pub index: u32,
    /// Watts.
    pub power_w: Option<f64>,
    /// MiB in use.
    pub memory_used_mib: Option<f64>,
    /// Busy fraction.
    pub utilization: Option<f64>,
}

/// A platform tool: how to run it and read its output.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tool {
    /// Program name.
    pub program: &'static str,
    args: &'static [&'static str],
    parse: fn(&str) -> Result<Vec<Device>>,
}

/// The tools, in the order they are looked for on `PATH`.
pub(crate) const TOOLS: [Tool; 3] = [
    Tool {
        program: "nvidia-smi",
        args: &[
            "--query-gpu=index,power.draw,memory.used,utilization.gpu",
            "--format=csv,noheader,nounits",
        ],
        parse: parse_nvidia_smi,
    },
    Tool {
        program: "npu-smi",
        args: &["info"],
        parse: parse_npu_smi,
    },
    Tool {
        program: "mx-smi",
        args: &[],
        parse: parse_mx_smi,
    },
];

impl Tool {
    /// The first tool found on `PATH`, if any.
    pub(crate) fn detect() -> Option<Tool> {
        let path = std::env::var_os("PATH")?;
        TOOLS
            .into_iter()
            .find(|tool| std::env::split_paths(&path).any(|dir| dir.join(tool.program).is_file()))
    }

    /// Run the tool and read `devices` (all of them when empty) at `at` seconds.
    pub(crate) fn read(&self, devices: &[u32], at: f64) -> Result<Reading> {
        let output = Command::new(self.program)
            .args(self.args)
            .output()
            .with_context(|| format!("cannot run {}", self.program))?;
        if !output.status.success() {
            bail!("{} exited with {}", self.program, output.status);
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let all = (self.parse)(&text).with_context(|| format!("reading {}", self.program))?;
        Ok(reading(self.program, &all, devices, at))
    }
}

/// The slot's share of `all`: `devices` (every device when empty) summed.
pub(crate) fn reading(tool: &'static str, all: &[Device], devices: &[u32], at: f64) -> Reading {
    let chosen: Vec<&Device> = all
        .iter()
        .filter(|d| devices.is_empty() || devices.contains(&d.index))
        .collect();
    let sum = |f: fn(&Device) -> Option<f64>| -> Option<f64> {
        let values: Option<Vec<f64>> = chosen.iter().map(|d| f(d)).collect();
        values.filter(|v| !v.is_empty()).map(|v| v.iter().sum())
    };
    Reading {
        at,
        tool,
        power_w: sum(|d| d.power_w),
        memory_used_mib: sum(|d| d.memory_used_mib),
        utilization: sum(|d| d.utilization).map(|u| u / chosen.len() as f64),
    }
}

/// A number as a tool prints it; `None` for `[N/A]`, `[Not Supported]`, `-`.
fn number(text: &str) -> Option<f64> {
    let t = text.trim().trim_end_matches(['W', '%']).trim();
    let t = t.strip_suffix("MiB").unwrap_or(t).trim();
    t.parse().ok()
}

/// `nvidia-smi --query-gpu=index,power.draw,memory.used,utilization.gpu
/// --format=csv,noheader,nounits`: `0, 312.45, 70123, 87` per line (units tolerated).
pub(crate) fn parse_nvidia_smi(text: &str) -> Result<Vec<Device>> {
    let mut devices = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.split(',').collect();
        let [index, power, memory, util] = fields[..] else {
            bail!(
                "line {}: expected 4 comma-separated fields in `{line}`",
                n + 1
            );
        };
        let index = index
            .trim()
            .parse()
            .with_context(|| format!("line {}: GPU index `{index}`", n + 1))?;
        devices.push(Device {
            index,
            power_w: number(power),
            memory_used_mib: number(memory),
            utilization: number(util).map(|pct| pct / 100.0),
        });
    }
    Ok(devices)
}

/// Each pair of consecutive three-cell table rows whose first cell starts with a device index:
/// the index and both rows' cells.
fn device_rows(text: &str) -> Vec<(u32, Vec<&str>, Vec<&str>)> {
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.trim_start().starts_with('|'))
        .map(cells)
        .collect();
    rows.windows(2)
        .filter(|pair| pair[0].len() == 3 && pair[1].len() == 3)
        .filter_map(|pair| {
            let index = pair[0][0].split_whitespace().next()?.parse().ok()?;
            Some((index, pair[0].clone(), pair[1].clone()))
        })
        .collect()
}

/// The cells of a `| a | b | c |` table row, trimmed.
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

/// `npu-smi info`: each NPU takes two rows, `| 0  910B3 | OK | 90.1  34  0 / 0 |` (power W,
/// temperature) then `| 0 | 0000:C1:00.0 | 0  0 / 0  3300 / 65536 |` (AICore %, memory,
/// HBM used / total MB).
pub(crate) fn parse_npu_smi(text: &str) -> Result<Vec<Device>> {
    let mut devices = Vec::new();
    for (index, first, second) in device_rows(text) {
        let is_npu = matches!(first[1], "OK" | "Warning" | "Alarm");
        if !is_npu {
            continue;
        }
        let figures: Vec<&str> = second[2].split_whitespace().collect();
        // AICore(%)  Memory-Usage(MB) used / total  HBM-Usage(MB) used / total
        let hbm_used = figures.len().checked_sub(3).map(|i| figures[i]);
        devices.push(Device {
            index,
            power_w: first[2].split_whitespace().next().and_then(number),
            memory_used_mib: hbm_used.and_then(number),
            utilization: figures.first().and_then(|f| number(f)).map(|p| p / 100.0),
        });
    }
    if devices.is_empty() {
        bail!("no NPU rows (expected `| <npu> <name> | OK | <power> …` rows)");
    }
    Ok(devices)
}

/// `mx-smi`: each GPU takes two rows, `| 0  MXC500 | 0000:05:00.0 | 0% |` then
/// `| 51C  71W | 60982/65536 MiB | |`.
pub(crate) fn parse_mx_smi(text: &str) -> Result<Vec<Device>> {
    let mut devices = Vec::new();
    for (index, first, second) in device_rows(text) {
        if !second[1].contains("MiB") {
            continue;
        }
        let used = second[1].split('/').next();
        devices.push(Device {
            index,
            power_w: second[0].split_whitespace().nth(1).and_then(number),
            memory_used_mib: used.and_then(number),
            utilization: number(first[2]).map(|p| p / 100.0),
        });
    }
    if devices.is_empty() {
        bail!("no GPU rows (expected `| <gpu> <name> | <bus> | <util>% |` rows)");
    }
    Ok(devices)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A captured transcript: its first line is `$ <command>`, the rest the output.
    fn transcript(path: &str) -> String {
        let full = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
        text.split_once('\n')
            .map(|(_, rest)| rest.to_string())
            .unwrap()
    }

    #[test]
    fn nvidia_smi_query_reads_each_gpu_and_the_slot_sums_its_own() {
        let all = parse_nvidia_smi(&transcript("metrics/nvidia-smi-power.txt")).unwrap();
        assert_eq!(all.len(), 8);
        assert_eq!(all[0].index, 0);
        let slot = reading("nvidia-smi", &all, &[0, 1], 0.0);
        let expect = all[0].power_w.unwrap() + all[1].power_w.unwrap();
        assert_eq!(slot.power_w, Some(expect));
        assert!(slot.utilization.unwrap() <= 1.0);
        assert!(parse_nvidia_smi("0, 1\n")
            .unwrap_err()
            .to_string()
            .contains("line 1"));
    }

    #[test]
    fn npu_smi_info_reads_power_hbm_and_aicore() {
        let all = parse_npu_smi(&transcript("topo/ascend-910b/commands/npu-smi-info.txt")).unwrap();
        assert_eq!(all.len(), 8);
        assert_eq!(all[2].index, 2);
        assert_eq!(all[2].power_w, Some(92.1));
        assert_eq!(all[2].memory_used_mib, Some(3334.0));
        assert_eq!(all[2].utilization, Some(0.0));
        let slot = reading("npu-smi", &all, &[6, 7], 0.0);
        assert_eq!(slot.power_w, Some(96.1 + 97.1));
        assert!(parse_npu_smi("no table").is_err());
    }

    #[test]
    fn mx_smi_reads_power_memory_and_utilisation() {
        let all = parse_mx_smi(&transcript("topo/captured/seed-003/mx-smi.txt")).unwrap();
        assert_eq!(all.len(), 4);
        assert_eq!(all[0].power_w, Some(71.0));
        assert_eq!(all[0].memory_used_mib, Some(60982.0));
        assert_eq!(all[0].utilization, Some(0.0));
    }
}
