//! NUMA bindings that follow a trial's slot: `numa: auto` candidates are computed around the
//! node of the study's first accelerator, and each trial's chosen binding moves to the node
//! of its own accelerators before launch (the record keeps the value the sampler chose).

use crate::record::{Params, Value};
use crate::space::{ParamKind, StudySpec};
use crate::topo::Topology;
use anyhow::Context as _;
use std::sync::Arc;

/// The node `numa` candidates were computed for, and the topology to move bindings with.
#[derive(Clone, Debug)]
pub(crate) struct NumaHome {
    topology: Arc<Topology>,
    node: u32,
}

impl NumaHome {
    /// The home of `space`'s `numa` parameters on `topology`: the node of its reference
    /// accelerator ([`StudySpec::numa_reference_device`]); `None` when the space has no `numa`
    /// parameter, trials are not pinned, or the node is unknown.
    pub(crate) fn of(space: &StudySpec, topology: Option<Topology>) -> Option<NumaHome> {
        let topology = topology?;
        if !space.parameters.iter().any(is_numa) {
            return None;
        }
        let device = space.numa_reference_device(&topology)?;
        let node = topology.accelerator(device)?.numa_node?;
        Some(NumaHome {
            topology: Arc::new(topology),
            node,
        })
    }

    /// `params` with every `numa` binding moved to the node of `devices` (unchanged when they
    /// are not all on one known node).
    pub(crate) fn rebase(
        &self,
        space: &StudySpec,
        params: &Params,
        devices: &[u32],
    ) -> anyhow::Result<Params> {
        let Some(node) = self.node_of(devices) else {
            return Ok(params.clone());
        };
        let mut moved = params.clone();
        for def in space.parameters.iter().filter(|d| is_numa(d)) {
            if let Some(Value::Str(binding)) = params.get(&def.name) {
                let there = self
                    .topology
                    .rebase_binding(binding, self.node, node)
                    .with_context(|| {
                        format!("parameter `{}` on accelerators {devices:?}", def.name)
                    })?;
                moved.insert(def.name.clone(), Value::Str(there));
            }
        }
        Ok(moved)
    }

    fn node_of(&self, devices: &[u32]) -> Option<u32> {
        let mut nodes = devices
            .iter()
            .map(|d| self.topology.accelerator(*d).and_then(|a| a.numa_node));
        let first = nodes.next()??;
        nodes.all(|n| n == Some(first)).then_some(first)
    }
}

fn is_numa(def: &crate::space::ParamDef) -> bool {
    matches!(def.kind, ParamKind::Numa { .. })
}

#[cfg(test)]
mod tests {
    use super::NumaHome;
    use crate::record::{Params, Value};
    use crate::space::StudySpec;
    use crate::topo::{fixture, Topology};
    use std::path::Path;

    fn eight_node() -> Topology {
        fixture("eight-node")
    }

    /// vllm.yaml (a `numa: auto` parameter) on four accelerators of nodes 0, 2, 4 and 6.
    fn parallel_space() -> StudySpec {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("search-spaces/vllm.yaml");
        let mut space = StudySpec::load(&path, crate::engine::rule_pack).unwrap();
        space.search.parallel = 4;
        space.bind_numa(&eight_node()).unwrap();
        space
    }

    fn numa(binding: &str) -> Params {
        Params::from([("numa".to_string(), Value::Str(binding.into()))])
    }

    #[test]
    fn candidates_are_around_the_first_accelerator_and_follow_each_slot() {
        let space = parallel_space();
        let home = NumaHome::of(&space, Some(eight_node())).expect("a numa home");
        assert_eq!(home.node, 0);
        let on = |devices: &[u32]| home.rebase(&space, &numa("-N 0 -m 0"), devices).unwrap();
        assert_eq!(on(&[0])["numa"], Value::Str("-N 0 -m 0".into()));
        assert_eq!(on(&[2])["numa"], Value::Str("-N 4 -m 4".into()));
        assert_eq!(on(&[3])["numa"], Value::Str("-N 6 -m 6".into()));
        // Devices on two nodes, or none: the binding stays as chosen.
        assert_eq!(on(&[1, 2])["numa"], Value::Str("-N 0 -m 0".into()));
        assert_eq!(on(&[])["numa"], Value::Str("-N 0 -m 0".into()));
        assert_eq!(
            home.rebase(&space, &numa("none"), &[3]).unwrap()["numa"],
            Value::Str("none".into())
        );
    }

    #[test]
    fn one_trial_at_a_time_on_unlisted_devices_has_no_home() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("search-spaces/vllm.yaml");
        let space = StudySpec::load(&path, crate::engine::rule_pack).unwrap();
        assert_eq!(space.search.parallel, 1);
        assert!(NumaHome::of(&space, Some(eight_node())).is_none());
    }
}
