//! Resolving `numa` parameters with `candidates: auto` against the host topology.

use super::{NumaCandidates, ParamKind, StudySpec};
use crate::topo::{resolve_numa_choices, Topology};
use anyhow::{Context, Result};

impl StudySpec {
    /// Load a space (its rules from `book`) and replace every `candidates: auto` with the bindings this host offers
    /// (see `infertune topo`). Returns the space and the topology's notes (e.g. "one node").
    pub(crate) fn load_for_host(
        path: &std::path::Path,
        book: super::rules::RuleBook,
    ) -> Result<(StudySpec, Vec<String>)> {
        let mut space = StudySpec::load(path, book)?;
        if !space.parameters.iter().any(is_auto_numa) {
            return Ok((space, Vec::new()));
        }
        let topo =
            Topology::discover().context("discovering the host topology for `numa: auto`")?;
        let notes = space.bind_numa(&topo)?;
        Ok((space, notes))
    }

    /// Replace `candidates: auto` with the candidate list `topo` yields for this space's
    /// accelerators; returns the notes explaining the choice.
    pub(crate) fn bind_numa(&mut self, topo: &Topology) -> Result<Vec<String>> {
        let mut notes = Vec::new();
        let device = self.numa_reference_device(topo);
        for def in self.parameters.iter_mut().filter(|d| is_auto_numa(d)) {
            let choices = resolve_numa_choices(&NumaCandidates::Auto, topo, device, None)
                .with_context(|| format!("{}: parameter `{}`", self.origin, def.name))?;
            notes.extend(choices.notes.iter().map(|n| format!("{}: {n}", def.name)));
            def.kind = ParamKind::Numa {
                candidates: NumaCandidates::List(choices.values()),
            };
        }
        Ok(notes)
    }

    /// The accelerator whose node `numa: auto` candidates are computed around when trials are
    /// pinned to devices (`launch.devices`, or several trials at once): the first the study may
    /// use, when the topology knows it. Each trial's binding then moves to its own
    /// accelerators' node at launch.
    pub fn numa_reference_device(&self, topo: &Topology) -> Option<u32> {
        let device = match &self.placement.devices {
            Some(listed) => listed.first().copied(),
            None if self.search.parallel > 1 => topo.accelerators.first().map(|a| a.index),
            None => None,
        }?;
        topo.accelerator(device).is_some().then_some(device)
    }
}

fn is_auto_numa(def: &super::ParamDef) -> bool {
    matches!(
        def.kind,
        ParamKind::Numa {
            candidates: NumaCandidates::Auto
        }
    )
}

#[cfg(test)]
mod tests {
    use crate::space::{Feasibility, NumaCandidates, ParamKind, StudySpec};
    use crate::topo::fixture;
    use std::path::Path;

    fn numa_values(space: &StudySpec) -> Vec<String> {
        let def = space
            .parameters()
            .iter()
            .find(|d| d.name == "numa")
            .unwrap();
        match &def.kind {
            ParamKind::Numa {
                candidates: NumaCandidates::List(l),
            } => l.clone(),
            other => panic!("numa not bound: {other:?}"),
        }
    }

    #[test]
    fn auto_becomes_the_accelerator_local_candidates() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("search-spaces/vllm.yaml");
        let mut space = StudySpec::load(&path, crate::engine::rule_pack).unwrap();
        space.bind_numa(&fixture("eight-node")).unwrap();
        let values = numa_values(&space);
        assert_eq!(values[0], "none");
        assert!(values.len() > 1, "{values:?}");

        let mut one = StudySpec::load(&path, crate::engine::rule_pack).unwrap();
        let notes = one.bind_numa(&fixture("one-node")).unwrap();
        assert_eq!(numa_values(&one), vec!["none".to_string()]);
        assert!(!notes.is_empty());
    }
}
