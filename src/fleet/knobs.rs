//! Each server's scheduler knobs a plan may take: the space's defaults, then quasi-random
//! configs of the space (its constraints and engine rules applied), kept to the parameters
//! the twin models.

use crate::record::{Outcome, Params, TrialRecord};
use crate::space::{Feasibility, StudySpec};

/// Up to `1 + draws` distinct knob sets of `space` over the `modelled` parameters: the
/// defaults first, then Sobol draws seeded by `seed`.
pub fn knob_sets(space: &StudySpec, modelled: &[String], draws: usize, seed: u64) -> Vec<Params> {
    let keep = |params: Params| -> Params {
        params
            .into_iter()
            .filter(|(name, _)| modelled.contains(name))
            .collect()
    };
    let defaults: Params = space
        .parameters
        .iter()
        .filter_map(|p| Some((p.name.clone(), p.default.clone()?)))
        .collect();
    let defaults = space.resolve(&defaults).unwrap_or(defaults);
    let mut sets = vec![keep(defaults)];
    let Ok(mut sampler) = crate::sampler::from_name("qmc", seed) else {
        return sets;
    };
    let mut asked: Vec<TrialRecord> = Vec::with_capacity(draws);
    while asked.len() < draws {
        let Ok(params) = sampler.ask(space, &asked) else {
            break;
        };
        let n = asked.len() as u32;
        let set = keep(params.clone());
        if !sets.contains(&set) {
            sets.push(set);
        }
        asked.push(TrialRecord::new(n, params, Outcome::Feasible));
    }
    sets
}
