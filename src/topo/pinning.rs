//! What a numactl binding pins, as cgroup cpusets: the CPUs and memory nodes a container started
//! with `docker run --cpuset-cpus/--cpuset-mems` is given to keep the same placement.

use super::cpuset::{format_list, parse_list};
use super::sysfs::{read_nodes, Root};
use super::NumaNode;
use anyhow::{bail, Context as _};
use std::collections::BTreeSet;

/// The cpusets of a binding; `None` where it restricts nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cpusets {
    /// CPUs, e.g. `0-15`.
    pub cpus: Option<String>,
    /// Memory nodes, e.g. `0`.
    pub mems: Option<String>,
}

/// The cpusets of the numactl arguments `binding` (`-N 0 -m 0`, `--physcpubind=0-3`, …) on this
/// host.
pub fn host_cpusets(binding: &str) -> anyhow::Result<Cpusets> {
    let nodes = read_nodes(&Root::new("/"), &mut Vec::new())?;
    cpusets(binding, &nodes)
}

/// The cpusets of `binding` over `nodes`: `-N`/`--cpunodebind` give their nodes' CPUs,
/// `-C`/`--physcpubind` their CPUs, `-m`/`--membind` and `-i`/`--interleave` their memory
/// nodes; a preferred node (`--preferred`) and local allocation restrict nothing.
pub(crate) fn cpusets(binding: &str, nodes: &[NumaNode]) -> anyhow::Result<Cpusets> {
    let words = shlex::split(binding)
        .with_context(|| format!("`{binding}` is not a numactl argument list"))?;
    let mut out = Cpusets::default();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let (option, inline) = match word.split_once('=') {
            Some((o, v)) => (o, Some(v.to_string())),
            None => (word.as_str(), None),
        };
        let takes_value = matches!(
            option,
            "-N" | "--cpunodebind"
                | "-C"
                | "--physcpubind"
                | "-m"
                | "--membind"
                | "-i"
                | "--interleave"
                | "-p"
                | "--preferred"
        );
        let value = match (inline, takes_value) {
            (Some(v), _) => v,
            (None, true) => words
                .next()
                .with_context(|| format!("`{option}` in `{binding}` has no value"))?
                .clone(),
            (None, false) => continue,
        };
        let list = || parse_list(&value).map_err(|e| anyhow::anyhow!("`{binding}`: {e}"));
        match option {
            "-N" | "--cpunodebind" => {
                let mut cpus = BTreeSet::new();
                for id in list()? {
                    let Some(node) = nodes.iter().find(|n| n.id == id) else {
                        bail!("`{binding}` names NUMA node {id}, which this host lacks");
                    };
                    cpus.extend(&node.cpus);
                }
                out.cpus = Some(format_list(&cpus));
            }
            "-C" | "--physcpubind" => out.cpus = Some(format_list(&list()?)),
            "-m" | "--membind" | "-i" | "--interleave" => out.mems = Some(format_list(&list()?)),
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::fixture;

    #[test]
    fn node_and_cpu_bindings_become_cpusets() {
        let topo = fixture("two-socket");
        let node1 = format_list(&topo.node(1).unwrap().cpus);
        let pinned = cpusets("-N 1 -m 1", &topo.nodes).unwrap();
        assert_eq!(pinned.cpus.as_deref(), Some(node1.as_str()));
        assert_eq!(pinned.mems.as_deref(), Some("1"));
        let cpus = cpusets("--physcpubind=0-3,8 --preferred=0", &topo.nodes).unwrap();
        assert_eq!(
            cpus,
            Cpusets {
                cpus: Some("0-3,8".into()),
                mems: None
            }
        );
    }

    #[test]
    fn an_unknown_node_or_a_missing_value_is_an_error_naming_the_binding() {
        let topo = fixture("two-socket");
        let err = cpusets("-N 9", &topo.nodes).unwrap_err().to_string();
        assert!(err.contains("node 9") && err.contains("-N 9"), "{err}");
        let err = cpusets("-m", &topo.nodes).unwrap_err().to_string();
        assert!(err.contains("no value"), "{err}");
    }
}
