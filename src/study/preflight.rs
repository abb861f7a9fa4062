//! What `tune` refuses at start-up beyond loading the space, in one place, so that `check`
//! refuses exactly the same spaces.

use super::score::Objective;
use crate::probe::loadsearch;
use crate::space::StudySpec;
use anyhow::Context as _;

/// Checks that a study of `space` can start: the objective (see [`objective`]), and the
/// sampler and engine it names exist. Loading the space already checked the rest.
pub fn check(space: &StudySpec) -> anyhow::Result<()> {
    objective(space)?;
    crate::sampler::from_name(&space.search.sampler, space.search.seed)
        .with_context(|| format!("{}: search.sampler", space.origin))?;
    crate::engine::for_kind(space.engine.kind)
        .with_context(|| format!("{}: engine.kind", space.origin))?;
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
