//! What `tune` refuses at start-up beyond loading the space, in one place, so that `check`
//! refuses exactly the same spaces (and `launch` reads the same flag catalogue).

use crate::engine::catalogue::{self, Verdict};
use crate::space::StudySpec;
use anyhow::Context as _;

/// Checks that a study of `space` can start: the objective (see [`crate::exec::objective`]),
/// and the sampler it names exists. Loading the space already checked the rest (the engine
/// kind too).
pub fn check(space: &StudySpec) -> anyhow::Result<()> {
    crate::exec::objective(space)?;
    crate::sampler::from_name(&space.search.sampler, space.search.seed)
        .with_context(|| format!("{}: search.sampler", space.origin))?;
    Ok(())
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
