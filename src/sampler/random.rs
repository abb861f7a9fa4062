//! Uniform random search over the unit cube (log-uniform where a parameter says `log: true`).

use super::propose::{call_rng, first_acceptable, Dims, Tried, MAX_ATTEMPTS};
use super::Sampler;
use crate::record::{Params, TrialRecord};
use crate::space::Feasibility;
use rand::Rng;

/// Independent uniform draws; the baseline every other sampler is benchmarked against.
pub(crate) struct RandomSampler {
    seed: u64,
}

impl RandomSampler {
    /// A random sampler seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        RandomSampler { seed }
    }
}

impl Sampler for RandomSampler {
    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params> {
        let dims = Dims::of(space);
        let tried = Tried::of(trials);
        let mut rng = call_rng(self.seed, trials.len(), 0);
        first_acceptable(space, &tried, MAX_ATTEMPTS, |_| {
            let u: Vec<f64> = (0..dims.len()).map(|_| rng.random()).collect();
            dims.decode(&u)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::testkit::{feasible, mixed_space};

    #[test]
    fn spreads_over_the_whole_range() {
        let space = mixed_space();
        let mut trials = Vec::new();
        let mut sampler = RandomSampler::new(3);
        for _ in 0..60 {
            let p = sampler.ask(&space, &trials).unwrap();
            trials.push(feasible(p, 1.0));
        }
        let seqs: Vec<i64> = trials
            .iter()
            .map(|t| t.params["max_num_seqs"].as_i64().unwrap())
            .collect();
        assert!(seqs.iter().any(|&s| s < 32) && seqs.iter().any(|&s| s > 256));
    }
}
