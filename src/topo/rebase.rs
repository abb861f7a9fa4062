//! Moving a chosen binding to another accelerator's node: trials running side by side on
//! different slots each get the binding of the same kind around their own accelerators.

use super::binding::Binding;
use super::{NumaError, Topology};

impl Topology {
    /// The binding of the same kind as `value` for an instance whose accelerator is on node
    /// `to`, where `value` was one of the [`Topology::candidates`] for node `from` (e.g.
    /// `-N 0 -m 0` on node 0 becomes `-N 3 -m 3` on node 3). `none` and values that are not
    /// candidates of `from` (an explicit list's entries) stay as they are.
    pub fn rebase_binding(&self, value: &str, from: u32, to: u32) -> Result<String, NumaError> {
        if from == to || value == "none" {
            return Ok(value.to_string());
        }
        let here = self.candidates(Some(from), None)?;
        let Some(chosen) = here.bindings.iter().find(|b| b.value() == value) else {
            return Ok(value.to_string());
        };
        let there = self.candidates(Some(to), None)?;
        there
            .bindings
            .iter()
            .find(|b| kind(b) == kind(chosen))
            .map(Binding::value)
            .ok_or_else(|| NumaError::NoCounterpart {
                binding: value.to_string(),
                node: to,
                there: there.values().join(", "),
            })
    }
}

/// What a binding does, without the nodes and CPUs it does it on: its numactl option names
/// (`-N -m`, `-N --preferred`, `-C -m`, `-N --interleave`).
fn kind(binding: &Binding) -> Vec<&str> {
    binding
        .args
        .iter()
        .filter(|a| a.starts_with('-'))
        .map(|a| a.split('=').next().unwrap_or(a))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::topo::{fixture, Topology};

    fn eight_node() -> Topology {
        fixture("eight-node")
    }

    #[test]
    fn every_kind_of_candidate_moves_to_the_same_kind_on_the_other_node() {
        let topo = eight_node();
        let from = topo.candidates(Some(0), None).unwrap().values();
        let to = topo.candidates(Some(3), None).unwrap().values();
        assert!(from.len() >= 4, "{from:?}");
        let moved: Vec<String> = from
            .iter()
            .map(|v| topo.rebase_binding(v, 0, 3).unwrap())
            .collect();
        assert_eq!(moved, to);
        assert_eq!(topo.rebase_binding("-N 0 -m 0", 0, 3).unwrap(), "-N 3 -m 3");
    }

    #[test]
    fn none_same_node_and_explicit_values_stay() {
        let topo = eight_node();
        assert_eq!(topo.rebase_binding("none", 0, 5).unwrap(), "none");
        assert_eq!(topo.rebase_binding("-N 0 -m 0", 2, 2).unwrap(), "-N 0 -m 0");
        assert_eq!(topo.rebase_binding("-N 1 -m 1", 0, 5).unwrap(), "-N 1 -m 1");
    }

    #[test]
    fn an_unknown_node_is_an_error_not_a_panic() {
        let topo = eight_node();
        let err = topo.rebase_binding("-N 0 -m 0", 0, 42).unwrap_err();
        assert!(err.to_string().contains("42"), "{err}");
    }
}
