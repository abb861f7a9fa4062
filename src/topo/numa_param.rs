//! The `numa` search-space parameter: resolving `candidates: auto` from the topology and
//! validating explicit candidate lists.

use super::binding::{Binding, Candidates};
use super::cpuset::parse_list;
use super::numa_error::NumaError;
use super::Topology;
use crate::util::process::find_on_path;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Where `numactl` is on `PATH`, or an error with the install hint.
pub fn numactl_available() -> Result<PathBuf, NumaError> {
    find_on_path("numactl", std::env::var_os("PATH").as_deref()).ok_or(NumaError::NumactlMissing)
}

/// The launch prefix for a chosen `numa` value: empty for `none`, else `numactl` followed by
/// the value's arguments (`-N 0 -m 0` → `["numactl", "-N", "0", "-m", "0"]`).
pub(crate) fn numactl_prefix(value: &str) -> Result<Vec<String>, NumaError> {
    if value.trim().eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let args = shlex::split(value)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| NumaError::BadBinding {
            binding: value.to_string(),
            reason: "not a numactl argument list; use `none` or e.g. `-N 0 -m 0`".into(),
        })?;
    Ok(std::iter::once("numactl".to_string()).chain(args).collect())
}

/// Where NUMA binding candidates come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NumaCandidates {
    /// Derived from the host topology and the instance's accelerator node.
    Auto,
    /// Explicit numactl argument strings, e.g. `"-N 0 -m 0"`; `"none"` means no binding.
    List(Vec<String>),
}

/// The values a sampler chooses from for a `numa` parameter: `none` or numactl arguments
/// joined by spaces (`-N 0 -m 0`). `device` is the index of the instance's (first)
/// accelerator; `min_free_bytes` the free-memory floor for strict memory bindings.
/// See [`resolve_numa_choices`] for the same with labels and notes.
pub fn resolve_numa_candidates(
    kind: &NumaCandidates,
    topo: &Topology,
    device: Option<u32>,
    min_free_bytes: Option<u64>,
) -> Result<Vec<String>, NumaError> {
    Ok(resolve_numa_choices(kind, topo, device, min_free_bytes)?.values())
}

/// Resolves a `numa` parameter into labelled bindings and notes.
///
/// `auto`: [`Topology::candidates`] on the node of accelerator `device`; with no device, on
/// the node all accelerators share (if they share one). An explicit list passes through
/// after each entry is checked (known numactl options, existing node and CPU ids).
/// Fails with [`NumaError::NumactlMissing`] when any binding needs numactl and it is absent.
pub fn resolve_numa_choices(
    kind: &NumaCandidates,
    topo: &Topology,
    device: Option<u32>,
    min_free_bytes: Option<u64>,
) -> Result<Candidates, NumaError> {
    let choices = match kind {
        NumaCandidates::Auto => {
            let mut notes = Vec::new();
            let node = accelerator_node(topo, device, &mut notes)?;
            let mut choices = topo.candidates(node, min_free_bytes)?;
            notes.append(&mut choices.notes);
            choices.notes = notes;
            choices
        }
        NumaCandidates::List(entries) => {
            if entries.is_empty() {
                return Err(NumaError::EmptyList);
            }
            let mut choices = Candidates::default();
            for entry in entries {
                let args = parse_binding(entry, topo)?;
                choices.push(if args.is_empty() {
                    Binding::none()
                } else {
                    Binding {
                        label: "explicit".into(),
                        args,
                    }
                });
            }
            choices
        }
    };
    if topo.numactl.is_none() && choices.bindings.iter().any(|b| !b.is_none()) {
        return Err(NumaError::NumactlMissing);
    }
    Ok(choices)
}

fn accelerator_node(
    topo: &Topology,
    device: Option<u32>,
    notes: &mut Vec<String>,
) -> Result<Option<u32>, NumaError> {
    match device {
        Some(index) => {
            let accel = topo
                .accelerator(index)
                .ok_or_else(|| NumaError::UnknownDevice {
                    device: index,
                    known: super::cpuset::format_list(topo.accelerators.iter().map(|a| &a.index)),
                })?;
            if accel.numa_node.is_none() {
                notes.push(format!("accelerator {index}: local node unknown"));
            }
            Ok(accel.numa_node)
        }
        None => {
            let nodes: BTreeSet<Option<u32>> =
                topo.accelerators.iter().map(|a| a.numa_node).collect();
            match nodes.into_iter().collect::<Vec<_>>()[..] {
                [Some(shared)] => Ok(Some(shared)),
                _ => Ok(None),
            }
        }
    }
}

/// What an option's value is.
#[derive(Clone, Copy, PartialEq)]
enum OptionValue {
    Nodes,
    Cpus,
    Nothing,
}

const OPTIONS: [(&str, &str, OptionValue); 9] = [
    ("-N", "--cpunodebind", OptionValue::Nodes),
    ("-m", "--membind", OptionValue::Nodes),
    ("-p", "--preferred", OptionValue::Nodes),
    ("-P", "--preferred-many", OptionValue::Nodes),
    ("-i", "--interleave", OptionValue::Nodes),
    ("-w", "--weighted-interleave", OptionValue::Nodes),
    ("-C", "--physcpubind", OptionValue::Cpus),
    ("-l", "--localalloc", OptionValue::Nothing),
    ("-a", "--all", OptionValue::Nothing),
];

/// Checks one explicit candidate and returns its arguments (empty for `none`).
fn parse_binding(entry: &str, topo: &Topology) -> Result<Vec<String>, NumaError> {
    let bad = |reason: String| NumaError::BadBinding {
        binding: entry.to_string(),
        reason,
    };
    if entry.trim().eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let args = shlex::split(entry).ok_or_else(|| bad("unbalanced quotes".into()))?;
    if args.is_empty() {
        return Err(bad("empty; write `none` for no binding".into()));
    }
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "numactl" {
            return Err(bad(
                "drop the leading `numactl`; list only its options".into()
            ));
        }
        let (name, inline) = split_option(arg)
            .ok_or_else(|| bad(format!("`{arg}` is not a numactl option; list only numactl options (the engine command is appended)")))?;
        let (short, long, value) = OPTIONS
            .iter()
            .find(|(s, l, _)| *s == name || *l == name)
            .copied()
            .ok_or_else(|| {
                bad(format!(
                    "unsupported numactl option `{name}`; use {}",
                    option_names()
                ))
            })?;
        if value == OptionValue::Nothing {
            if inline.is_some() {
                return Err(bad(format!("`{long}` takes no value")));
            }
            i += 1;
            continue;
        }
        let list = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i)
                    .cloned()
                    .ok_or_else(|| bad(format!("`{short}` needs a list, e.g. `{short} 0`")))?
            }
        };
        check_list(&list, value, topo).map_err(bad)?;
        i += 1;
    }
    Ok(args)
}

/// `--membind=0` → (`--membind`, `0`); `-N0` → (`-N`, `0`); `-N` → (`-N`, none).
fn split_option(arg: &str) -> Option<(String, Option<String>)> {
    if let Some(long) = arg.strip_prefix("--") {
        let (name, value) = match long.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (long, None),
        };
        return Some((format!("--{name}"), value));
    }
    let short = arg.strip_prefix('-')?;
    let mut chars = short.chars();
    let letter = chars.next()?;
    let rest: String = chars.collect();
    Some((format!("-{letter}"), (!rest.is_empty()).then_some(rest)))
}

fn option_names() -> String {
    OPTIONS
        .iter()
        .map(|(s, l, _)| format!("{s}/{l}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A node or CPU list as numactl reads it: `all`, or ids and ranges, optionally after `!`
/// (all but) or `+` (relative to the cpuset); every id must exist on this host.
fn check_list(list: &str, value: OptionValue, topo: &Topology) -> Result<(), String> {
    if list == "all" {
        return Ok(());
    }
    let ids = parse_list(list.trim_start_matches(['!', '+']))
        .map_err(|e| format!("bad list `{list}`: {e}"))?;
    if ids.is_empty() {
        return Err(format!("empty list `{list}`"));
    }
    let (known, what): (BTreeSet<u32>, &str) = match value {
        OptionValue::Cpus => (
            topo.nodes
                .iter()
                .flat_map(|n| n.cpus.iter().copied())
                .collect(),
            "CPU",
        ),
        _ => (topo.nodes.iter().map(|n| n.id).collect(), "node"),
    };
    match ids.iter().find(|id| !known.contains(id)) {
        Some(id) => Err(format!(
            "{what} {id} does not exist on this host ({what}s: {})",
            super::cpuset::format_list(&known)
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_for_chosen_values() {
        assert!(numactl_prefix("none").unwrap().is_empty());
        assert_eq!(
            numactl_prefix("-N 0 --preferred=0").unwrap(),
            ["numactl", "-N", "0", "--preferred=0"]
        );
        assert!(numactl_prefix("  ").is_err());
        assert!(numactl_prefix("-N '0").is_err());
    }

    #[test]
    fn options_split_in_all_spellings() {
        assert_eq!(
            split_option("--membind=0,1"),
            Some(("--membind".into(), Some("0,1".into())))
        );
        assert_eq!(
            split_option("--localalloc"),
            Some(("--localalloc".into(), None))
        );
        assert_eq!(split_option("-N0"), Some(("-N".into(), Some("0".into()))));
        assert_eq!(split_option("-m"), Some(("-m".into(), None)));
        assert_eq!(split_option("vllm"), None);
    }
}
