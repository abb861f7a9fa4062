//! Samplers: propose the next config from the space and the trials so far.

use crate::space::{Feasibility, Params};
use crate::study::TrialRecord;

/// Proposes configs. Stateless over the trial list (seeded at construction), so resume = replay.
pub trait Sampler {
    /// The next config to try: resolved, feasible under constraints and rule pack, not tried before.
    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params>;
}

/// The sampler called `name`, seeded with `seed`.
pub fn from_name(name: &str, _seed: u64) -> anyhow::Result<Box<dyn Sampler>> {
    anyhow::bail!("unknown sampler `{name}`")
}
