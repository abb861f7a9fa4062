//! numactl binding candidates for an instance whose accelerator sits on a given node.

use super::cpuset::format_list;
use super::numa_error::NumaError;
use super::render::human_bytes;
use super::{NumaNode, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// One way to start the engine: no binding, or a numactl argument list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// Short description, e.g. `cpus+memory on node 0`.
    pub label: String,
    /// numactl arguments (empty = no binding).
    pub args: Vec<String>,
}

impl Binding {
    /// No binding: the engine starts without numactl.
    pub fn none() -> Self {
        Binding {
            label: "no binding".into(),
            args: Vec::new(),
        }
    }

    /// True for the no-binding candidate.
    pub fn is_none(&self) -> bool {
        self.args.is_empty()
    }

    /// The parameter value a sampler chooses: `none`, or the arguments joined by spaces
    /// (`-N 0 -m 0`); `shlex::split` of it gives the arguments back.
    pub fn value(&self) -> String {
        if self.is_none() {
            "none".into()
        } else {
            self.args.join(" ")
        }
    }

    fn new(label: String, args: &[&str]) -> Self {
        Binding {
            label,
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }
}

/// Candidate bindings plus what was left out and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Candidates {
    /// Distinct bindings, `none` first.
    pub bindings: Vec<Binding>,
    /// Explanations: single-node host, skipped membind, unknown accelerator node, …
    pub notes: Vec<String>,
}

impl Candidates {
    /// Adds `binding` unless one with the same arguments is already there.
    pub(super) fn push(&mut self, binding: Binding) {
        if !self.bindings.iter().any(|b| b.args == binding.args) {
            self.bindings.push(binding);
        }
    }

    /// The values a sampler chooses from (see [`Binding::value`]).
    pub fn values(&self) -> Vec<String> {
        self.bindings.iter().map(Binding::value).collect()
    }
}

impl Topology {
    /// Binding candidates for an instance whose accelerator is on `accel_node`:
    /// `none`; `-N g -m g`; `-N g --preferred=g`; `-C <cpus of g> -m g`; and
    /// `-N g,h --interleave=g,h` with `h` the nearest other node by distance.
    /// Strict memory bindings (`-m`) are skipped, with a note, when the node has less than
    /// `min_free_bytes` free. With no accelerator node, every node gets `-N n -m n`.
    /// A host with one usable node yields only `none`, with a note.
    pub fn candidates(
        &self,
        accel_node: Option<u32>,
        min_free_bytes: Option<u64>,
    ) -> Result<Candidates, NumaError> {
        let mut out = Candidates::default();
        out.push(Binding::none());
        let target = match accel_node {
            Some(g) => Some(self.node(g).ok_or_else(|| NumaError::UnknownNode {
                node: g,
                known: self.node_list(),
            })?),
            None => None,
        };
        let usable: Vec<&NumaNode> = self
            .nodes
            .iter()
            .filter(|n| !self.usable_cpus(n).is_empty() && self.mem_allowed(n.id))
            .collect();
        if usable.len() <= 1 {
            out.notes.push(format!(
                "{} usable NUMA node: binding cannot change locality, so only `none` is offered",
                usable.len()
            ));
            return Ok(out);
        }
        match target {
            Some(node) => self.node_candidates(node, min_free_bytes, &mut out),
            None => {
                out.notes.push(
                    "no accelerator node known: offering a whole-node binding on each node".into(),
                );
                for node in usable {
                    if self.membind_ok(node, min_free_bytes, &mut out.notes) {
                        let id = node.id.to_string();
                        out.push(Binding::new(
                            format!("cpus+memory on node {id}"),
                            &["-N", &id, "-m", &id],
                        ));
                    }
                }
            }
        }
        Ok(out)
    }

    fn node_candidates(&self, node: &NumaNode, min_free_bytes: Option<u64>, out: &mut Candidates) {
        let g = node.id.to_string();
        let cpus = self.usable_cpus(node);
        if cpus.is_empty() || !self.mem_allowed(node.id) {
            out.notes.push(format!(
                "node {g} is outside this process's allowed CPUs or memory nodes (a container cpuset?); only `none` is offered"
            ));
            return;
        }
        let membind = self.membind_ok(node, min_free_bytes, &mut out.notes);
        if membind {
            out.push(Binding::new(
                format!("cpus+memory on node {g}"),
                &["-N", &g, "-m", &g],
            ));
        }
        let preferred = format!("--preferred={g}");
        out.push(Binding::new(
            format!("cpus on node {g}, memory preferred there"),
            &["-N", &g, &preferred],
        ));
        if membind {
            let list = format_list(&cpus);
            out.push(Binding::new(
                format!("CPUs {list} + memory on node {g}"),
                &["-C", &list, "-m", &g],
            ));
        }
        match self.nearest_neighbour(node) {
            Some(h) => {
                let pair = format!("{g},{h}");
                let interleave = format!("--interleave={pair}");
                out.push(Binding::new(
                    format!("cpus on nodes {pair}, memory interleaved"),
                    &["-N", &pair, &interleave],
                ));
            }
            None => out.notes.push(format!(
                "node {g} has no usable neighbour to interleave with"
            )),
        }
    }

    /// The closest other node (by the `distance` table) that has usable CPUs and memory;
    /// ties go to the lower id.
    fn nearest_neighbour(&self, node: &NumaNode) -> Option<u32> {
        self.nodes
            .iter()
            .filter(|n| {
                n.id != node.id && self.mem_allowed(n.id) && !self.usable_cpus(n).is_empty()
            })
            .filter(|n| n.mem_total_bytes != Some(0))
            .min_by_key(|n| (node.distances.get(&n.id).copied().unwrap_or(u32::MAX), n.id))
            .map(|n| n.id)
    }

    fn usable_cpus(&self, node: &NumaNode) -> BTreeSet<u32> {
        match &self.allowed.cpus {
            Some(allowed) => node.cpus.intersection(allowed).copied().collect(),
            None => node.cpus.clone(),
        }
    }

    fn mem_allowed(&self, id: u32) -> bool {
        self.allowed.mems.as_ref().is_none_or(|m| m.contains(&id))
    }

    fn membind_ok(
        &self,
        node: &NumaNode,
        min_free_bytes: Option<u64>,
        notes: &mut Vec<String>,
    ) -> bool {
        match (min_free_bytes, node.mem_free_bytes) {
            (Some(min), Some(free)) if free < min => {
                notes.push(format!(
                    "warning: skipping memory binding to node {}: {} free < {} required",
                    node.id,
                    human_bytes(free),
                    human_bytes(min)
                ));
                false
            }
            _ => true,
        }
    }
}
