//! The objective trials are judged by, checked against the probe it scores.

use crate::probe::loadsearch;
use crate::score::Objective;
use crate::space::StudySpec;
use anyhow::Context as _;

/// The objective of `space`: an error when it does not compile or its load search does not fit
/// the probe.
pub fn objective(space: &StudySpec) -> anyhow::Result<Objective> {
    let objective =
        Objective::new(&space.objective).with_context(|| format!("{}: objective", space.origin))?;
    if let Some(search) = &space.objective.load_search {
        loadsearch::validate(search, &space.probe).with_context(|| space.origin.clone())?;
    }
    Ok(objective)
}
