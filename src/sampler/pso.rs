//! Particle swarm optimisation, replayed from the trial list.
//!
//! The swarm has no memory of its own: the `k`-th informative trial is particle `k mod P`'s
//! visit in generation `k / P`. A particle's position is its last visited config, its velocity
//! the step between its last two visits, its personal best its best visit; the global best is
//! the best trial overall (baseline included). Ranking puts feasible trials first, then
//! SLO-breaking ones, then start-up failures, so particles are pulled out of failing regions.
//! (argmin's `ParticleSwarm` owns the loop and calls the cost function itself, which does not fit
//! a sampler that is asked for one config at a time and must be stateless over the trial list.)

use super::history::{observations, Observation};
use super::kernel::reflect;
use super::propose::{call_rng, first_acceptable, Dims, Tried, MAX_ATTEMPTS};
use super::qmc::{check_dims, sobol_point};
use super::Sampler;
use crate::record::{Params, TrialRecord};
use crate::space::Feasibility;
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// Particles in the swarm.
const SWARM: usize = 6;
/// Inertia, cognitive and social weights (Clerc–Kennedy constriction values).
const INERTIA: f64 = 0.729;
const COGNITIVE: f64 = 1.494;
const SOCIAL: f64 = 1.494;
/// Largest step per generation, as a fraction of the unit range.
const MAX_VELOCITY: f64 = 0.3;

/// A particle swarm over the unit cube.
pub(crate) struct PsoSampler {
    seed: u64,
}

impl PsoSampler {
    /// A swarm seeded with `seed` (initial positions: a scrambled Sobol sequence).
    pub fn new(seed: u64) -> Self {
        PsoSampler { seed }
    }
}

impl Sampler for PsoSampler {
    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params> {
        let dims = Dims::of(space);
        check_dims(dims.len())?;
        let tried = Tried::of(trials);
        let visits: Vec<Observation> = observations(&dims, &without_baseline(trials));
        let step = visits.len();
        let target = if step < SWARM {
            sobol_point(self.seed, step, dims.len())
        } else {
            let all = observations(&dims, trials);
            let mut rng = call_rng(self.seed, step, 3);
            next_position(&visits, &all, step % SWARM, &mut rng)
        };
        let mut rng = call_rng(self.seed, trials.len(), 4);
        first_acceptable(space, &tried, MAX_ATTEMPTS, |attempt| {
            // Nudge the particle further the more of its neighbourhood is tried or rejected.
            let spread = 0.02 * attempt as f64;
            let x: Vec<f64> = target
                .iter()
                .map(|&t| {
                    let z: f64 = StandardNormal.sample(&mut rng);
                    reflect(t + spread * z)
                })
                .collect();
            dims.decode(&x)
        })
    }
}

fn without_baseline(trials: &[TrialRecord]) -> Vec<TrialRecord> {
    trials
        .iter()
        .filter(|t| !t.is_baseline())
        .cloned()
        .collect()
}

/// Particle `particle`'s next position from its visits and the best of `all` trials.
fn next_position(
    visits: &[Observation],
    all: &[Observation],
    particle: usize,
    rng: &mut impl Rng,
) -> Vec<f64> {
    let own: Vec<&Observation> = visits.iter().skip(particle).step_by(SWARM).collect();
    let best_of = |set: &mut dyn Iterator<Item = &Observation>| -> Vec<f64> {
        set.min_by(|a, b| Observation::better_first(a, b))
            .map(|o| o.x.clone())
            .unwrap_or_default()
    };
    let personal = best_of(&mut own.iter().copied());
    let global = best_of(&mut all.iter());
    let last = &own[own.len() - 1].x;
    let before = own.len().checked_sub(2).map(|i| &own[i].x);
    (0..last.len())
        .map(|d| {
            let x = if last[d].is_finite() {
                last[d]
            } else {
                rng.random()
            };
            let velocity = before.map_or(0.0, |b| finite_or(last[d] - b[d], 0.0));
            let pull_own = finite_or(personal[d] - x, 0.0);
            let pull_all = finite_or(global[d] - x, 0.0);
            let v = INERTIA * velocity
                + COGNITIVE * rng.random::<f64>() * pull_own
                + SOCIAL * rng.random::<f64>() * pull_all;
            reflect(x + v.clamp(-MAX_VELOCITY, MAX_VELOCITY))
        })
        .collect()
}

fn finite_or(x: f64, fallback: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        fallback
    }
}
