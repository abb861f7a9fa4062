//! NUMA binding of the server process (`numactl` arguments) and its effect on host time.
//!
//! Model: the per-step host work runs on the bound CPU nodes and touches memory on the bound
//! memory nodes. Each side costs `LOCAL + SLOPE × excess`, where `excess` is the mean
//! `(distance − 10) / 10` from the accelerators' node to the bound nodes; an unbound side costs
//! 1 (the kernel's automatic balancing, the baseline). The host factor is the mean of the two.
//! Calibrated on seed 003 (MetaX MXC500 server): `-N0 -m0` ≈ +13 %, nodes 0-3 ≈ −18 %.

use super::profiles::HostNuma;

/// Host-cost factor of a side bound only to the accelerators' node.
const LOCAL: f64 = 0.79;
/// Extra host-cost factor per unit of mean excess distance.
const SLOPE: f64 = 0.69;

/// Where the server process runs and allocates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NumaBinding {
    /// CPU nodes (`-N`/`--cpunodebind`); empty = unbound.
    pub cpu_nodes: Vec<u32>,
    /// Memory nodes (`-m`/`--membind`, `-p`, `-i`); empty = follows the CPUs (first touch).
    pub mem_nodes: Vec<u32>,
}

/// Parse numactl arguments (`"-N 0 -m 0"`, `"--cpunodebind=0,1 --membind=0-1"`) or `none`.
pub fn parse(text: &str) -> Result<NumaBinding, String> {
    let fail = |why: String| format!("numa binding `{text}`: {why}");
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("none") {
        return Ok(NumaBinding::default());
    }
    let words = shlex::split(trimmed).ok_or_else(|| fail("unbalanced quotes".into()))?;
    let mut binding = NumaBinding::default();
    let mut local_alloc = false;
    let mut iter = words.iter().skip_while(|w| *w == "numactl");
    while let Some(word) = iter.next() {
        let (flag, inline) = split_flag(word);
        let target = match flag {
            "-N" | "--cpunodebind" => &mut binding.cpu_nodes,
            "-m" | "--membind" | "-p" | "--preferred" | "-i" | "--interleave" => {
                &mut binding.mem_nodes
            }
            "-l" | "--localalloc" => {
                local_alloc = true;
                continue;
            }
            "-C" | "--physcpubind" => {
                return Err(fail(
                    "CPU lists are not modelled; bind whole nodes with -N/--cpunodebind".into(),
                ))
            }
            other => {
                return Err(fail(format!(
                    "unknown option `{other}` (supported: -N/--cpunodebind, -m/--membind, \
                     -p/--preferred, -i/--interleave, -l/--localalloc, or `none`)"
                )))
            }
        };
        let list = match inline {
            Some(list) => list.to_string(),
            None => iter
                .next()
                .cloned()
                .ok_or_else(|| fail(format!("`{flag}` needs a node list, e.g. `{flag} 0`")))?,
        };
        *target = node_list(&list).map_err(fail)?;
    }
    if local_alloc {
        binding.mem_nodes.clear();
    }
    Ok(binding)
}

/// `-N0` → (`-N`, `0`); `--membind=0,1` → (`--membind`, `0,1`); `-m` → (`-m`, none).
fn split_flag(word: &str) -> (&str, Option<&str>) {
    if let Some((flag, value)) = word.split_once('=') {
        return (flag, Some(value));
    }
    if !word.starts_with("--") && word.len() > 2 && word.starts_with('-') {
        return (&word[..2], Some(&word[2..]));
    }
    (word, None)
}

fn node_list(text: &str) -> Result<Vec<u32>, String> {
    let mut nodes = Vec::new();
    for part in text.split(',') {
        let bad = || format!("bad node list `{text}` (use e.g. `0`, `0-3` or `0,2,4,6`)");
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            ),
            None => {
                let n: u32 = part.trim().parse().map_err(|_| bad())?;
                (n, n)
            }
        };
        if lo > hi {
            return Err(bad());
        }
        nodes.extend(lo..=hi);
    }
    nodes.sort_unstable();
    nodes.dedup();
    Ok(nodes)
}

/// Refuse nodes the host does not have, as numactl does.
pub(crate) fn check_nodes(binding: &NumaBinding, host: &HostNuma) -> Result<(), String> {
    match binding
        .cpu_nodes
        .iter()
        .chain(&binding.mem_nodes)
        .find(|n| **n >= host.nodes)
    {
        Some(n) => Err(format!(
            "numactl: node argument {n} is out of range (this host has NUMA nodes 0-{})",
            host.nodes - 1
        )),
        None => Ok(()),
    }
}

/// Multiplier on per-step host time for `binding` on `host` (1 = unbound).
pub(crate) fn host_factor(binding: &NumaBinding, host: &HostNuma) -> f64 {
    let side = |nodes: &[u32]| {
        if nodes.is_empty() {
            return 1.0;
        }
        let excess: f64 = nodes
            .iter()
            .map(|n| (f64::from(host.distance(*n)) - 10.0) / 10.0)
            .sum::<f64>()
            / nodes.len() as f64;
        LOCAL + SLOPE * excess
    };
    let mem = if binding.mem_nodes.is_empty() {
        &binding.cpu_nodes
    } else {
        &binding.mem_nodes
    };
    (side(&binding.cpu_nodes) + side(mem)) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::profiles;

    #[test]
    fn parses_the_usual_spellings() {
        let b = parse("numactl -N0 -m0").unwrap();
        assert_eq!((b.cpu_nodes, b.mem_nodes), (vec![0], vec![0]));
        let b = parse("--cpunodebind=0,2,4,6 --membind 0-3").unwrap();
        assert_eq!(
            (b.cpu_nodes, b.mem_nodes),
            (vec![0, 2, 4, 6], vec![0, 1, 2, 3])
        );
        assert_eq!(parse("none").unwrap(), NumaBinding::default());
        assert!(parse("-C 0-7").unwrap_err().contains("CPU lists"));
        assert!(parse("-N").unwrap_err().contains("needs a node list"));
        assert!(parse("-N 3-1").unwrap_err().contains("bad node list"));
    }

    #[test]
    fn local_binding_helps_and_spreading_hurts() {
        let host = &profiles::card("MXC500").unwrap().host;
        let local = host_factor(&parse("-N0 -m0").unwrap(), host);
        let four = host_factor(&parse("-N 0-3 -m 0-3").unwrap(), host);
        let spread = host_factor(&parse("-N 0,2,4,6 -m 0,2,4,6").unwrap(), host);
        assert!(
            local < 1.0 && four > 1.0 && spread > four,
            "{local} {four} {spread}"
        );
        assert_eq!(host_factor(&NumaBinding::default(), host), 1.0);
        let err = check_nodes(&parse("-N 9").unwrap(), host).unwrap_err();
        assert!(err.contains("node argument 9 is out of range"), "{err}");
    }
}
