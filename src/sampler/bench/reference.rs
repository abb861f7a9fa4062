//! The reference optimum of a scenario: a large uniform search refined by coordinate descent
//! around its best configs.

use super::Scenario;
use crate::sampler::propose::{call_rng, Dims};
use rand::Rng;

/// Best configs kept from the uniform phase for refinement.
const REFINED: usize = 16;
/// Coordinate step sizes of the refinement, coarse to fine (unit-cube scale).
const STEPS: [f64; 6] = [0.5, 0.25, 0.1, 0.03, 0.01, 0.003];

/// Best feasible value found by `draws` uniform draws plus refinement; `None` if none was
/// feasible.
pub fn optimum(scenario: &Scenario, draws: usize, seed: u64) -> Option<f64> {
    let dims = Dims::of(&*scenario.space);
    let mut rng = call_rng(seed, draws, 5);
    let mut found: Vec<(f64, Vec<f64>)> = (0..draws)
        .filter_map(|_| {
            let u: Vec<f64> = (0..dims.len()).map(|_| rng.random()).collect();
            Some((value(scenario, &dims, &u)?, u))
        })
        .collect();
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    found.truncate(REFINED);
    found
        .into_iter()
        .map(|(v, u)| refine(scenario, &dims, v, u))
        .reduce(f64::max)
}

/// The feasible value at `u`, if it resolves, starts and meets the SLOs.
fn value(scenario: &Scenario, dims: &Dims, u: &[f64]) -> Option<f64> {
    let params = scenario.space.resolve(&dims.decode(u)).ok()?;
    let record = scenario.trial(0, params);
    record.is_feasible().then_some(record.value).flatten()
}

/// Greedy coordinate ascent from `u` (value `best`), one parameter at a time.
fn refine(scenario: &Scenario, dims: &Dims, mut best: f64, mut u: Vec<f64>) -> f64 {
    for step in STEPS {
        let mut improved = true;
        while improved {
            improved = false;
            for d in 0..u.len() {
                for delta in [-step, step] {
                    let mut v = u.clone();
                    v[d] = (v[d] + delta).clamp(0.0, 1.0);
                    if let Some(x) = value(scenario, dims, &v).filter(|x| *x > best) {
                        (best, u, improved) = (x, v, true);
                    }
                }
            }
        }
    }
    best
}
