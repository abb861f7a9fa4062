//! What `tune` refuses at start-up beyond loading the space, in one place, so that `check`
//! refuses exactly the same spaces.

use crate::engine::catalogue::{self, Verdict};
use crate::probe::loadsearch;
use crate::score::Objective;
use crate::space::StudySpec;
use anyhow::Context as _;

/// Checks that a study of `space` can start: the objective (see [`objective`]), and the
/// sampler it names exists. Loading the space already checked the rest (the engine kind too).
pub fn check(space: &StudySpec) -> anyhow::Result<()> {
    objective(space)?;
    crate::sampler::from_name(&space.search.sampler, space.search.seed)
        .with_context(|| format!("{}: search.sampler", space.origin))?;
    Ok(())
}

/// Checks that the objective of `space` compiles and that its load search fits the probe.
pub fn objective(space: &StudySpec) -> anyhow::Result<Objective> {
    let objective =
        Objective::new(&space.objective).with_context(|| format!("{}: objective", space.origin))?;
    if let Some(search) = &space.objective.load_search {
        loadsearch::validate(search, &space.probe).with_context(|| space.origin.clone())?;
    }
    Ok(objective)
}

/// Checks `space` against its engine's flag catalogue (see [`catalogue::verify`]) for the
/// engine version rules apply to, and gives parameters without a `default:` the catalogue's
/// default where it lies in their domain, for the baseline. Returns which catalogue it used.
pub fn flags(space: &mut StudySpec) -> anyhow::Result<Verdict> {
    let version = space.engine_version();
    let verdict = catalogue::verify(space, version.as_deref())?;
    for (name, value) in &verdict.defaults {
        if let Some(def) = space.parameters.iter_mut().find(|d| &d.name == name) {
            def.default = Some(value.clone());
        }
    }
    Ok(verdict)
}
