//! Tree-structured Parzen Estimator (multivariate), extended to learn from failures.
//!
//! Trials are ranked feasible first (by score), then SLO-breaking ones (closest to meeting
//! their SLOs first), then start-up failures; the top `γ` fraction forms the "good" density
//! `l(x)`, the rest the "bad" density `g(x)`. Candidates are drawn from `l` and from a narrow
//! kernel at the best trial (local refinement), and the one maximising
//! `log l(x) − log g(x) + w · log(1 − P_fail(x))` is proposed, where `P_fail` is a kernel
//! classifier of start-up failures (oom, invalid-config, crash, timeout) and crashes while
//! serving against configs that served. SLO-breaking trials thus pull the search towards the feasible region only while
//! nothing feasible is known, and failure regions are avoided even where the score model would
//! lead into them.

use super::history::{observations, Observation, Tier};
use super::kernel::{failure_probability, with_failure, Parzen};
use super::propose::{accept, call_rng, first_acceptable, Dims, Rejections, Tried, MAX_ATTEMPTS};
use super::qmc::{check_dims, sobol_point};
use super::Sampler;
use crate::record::{Params, TrialRecord};
use crate::space::Feasibility;

/// Informative trials before the model takes over (earlier ones follow a Sobol sequence).
/// Few, since the model, guided by how far SLO-breaking trials miss, finds the feasible region
/// sooner than more space-filling points do (`docs/benchmarks.md`, section "Search").
const STARTUP_TRIALS: usize = 5;
/// Candidates drawn from `l(x)` per proposal.
const CANDIDATES: usize = 64;
/// Further candidates drawn close to the best trial so far (local refinement); as many as
/// from `l(x)` (`docs/benchmarks.md`, section "Search").
const LOCAL_CANDIDATES: usize = 64;
/// Kernel width (and category-switch probability) of the local candidates.
const LOCAL_BANDWIDTH: f64 = 0.05;
/// Fraction of ranked trials in the good set.
const GAMMA: f64 = 0.2;
/// Largest good set.
const MAX_GOOD: usize = 25;

/// TPE with an SLO-aware ranking and a learned start-up-failure region.
pub(crate) struct TpeSampler {
    seed: u64,
}

impl TpeSampler {
    /// A TPE sampler seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        TpeSampler { seed }
    }
}

impl Sampler for TpeSampler {
    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params> {
        let dims = Dims::of(space);
        check_dims(dims.len())?;
        let tried = Tried::of(trials);
        let observed = observations(&dims, trials);
        if observed.len() < STARTUP_TRIALS || dims.is_empty() {
            return first_acceptable(space, &tried, MAX_ATTEMPTS, |attempt| {
                dims.decode(&sobol_point(self.seed, trials.len() + attempt, dims.len()))
            });
        }
        let categories = dims.categories();
        let model = Model::fit(&observed, &categories);
        let mut rng = call_rng(self.seed, trials.len(), 2);
        let mut best: Option<(f64, Params)> = None;
        let mut rejections = Rejections::default();
        for attempt in 0..MAX_ATTEMPTS {
            if attempt >= CANDIDATES + LOCAL_CANDIDATES && best.is_some() {
                break;
            }
            let x = if attempt % (CANDIDATES + LOCAL_CANDIDATES) < CANDIDATES {
                model.good.sample(dims.len(), &mut rng)
            } else {
                model.local.sample(dims.len(), &mut rng)
            };
            match accept(space, &tried, &dims.decode(&x)) {
                Ok(params) => {
                    let score = model.acquisition(&dims.encode(&params));
                    if best.as_ref().is_none_or(|(b, _)| score > *b) {
                        best = Some((score, params));
                    }
                }
                Err(why) => rejections.count(why),
            }
        }
        best.map(|(_, params)| params)
            .ok_or_else(|| rejections.into_error(MAX_ATTEMPTS))
    }
}

/// The fitted densities and failure classifier of one call.
struct Model<'a> {
    good: Parzen<'a>,
    /// A narrow kernel at the best trial that started.
    local: Parzen<'a>,
    bad: Parzen<'a>,
    failed: Vec<&'a [f64]>,
    started: Vec<&'a [f64]>,
}

impl<'a> Model<'a> {
    fn fit(observed: &'a [Observation], categories: &'a [Option<usize>]) -> Self {
        let dims = categories.len();
        let mut ranked: Vec<&Observation> = observed.iter().collect();
        ranked.sort_by(|a, b| Observation::better_first(a, b));
        let started = ranked
            .iter()
            .filter(|o| o.tier != Tier::ConfigFailure)
            .count();
        let n_good = ((GAMMA * ranked.len() as f64).ceil() as usize)
            .clamp(1, MAX_GOOD)
            .min(started);
        let points = |set: &[&'a Observation]| set.iter().map(|o| o.x.as_slice()).collect();
        let (good, bad) = ranked.split_at(n_good);
        let of_tier = |failed: bool| {
            observed
                .iter()
                .filter(|o| (o.tier == Tier::ConfigFailure) == failed)
                .map(|o| o.x.as_slice())
                .collect()
        };
        Model {
            local: Parzen::new(
                points(&good[..good.len().min(1)]),
                LOCAL_BANDWIDTH,
                0.0,
                categories,
            ),
            good: Parzen::new(points(good), bandwidth(good.len(), dims), 1.0, categories),
            bad: Parzen::new(points(bad), bandwidth(bad.len(), dims), 1.0, categories),
            failed: of_tier(true),
            started: of_tier(false),
        }
    }

    /// Higher is more promising. A candidate more likely to fail than to start ranks below
    /// every other candidate.
    fn acquisition(&self, x: &[f64]) -> f64 {
        let p_fail = failure_probability(x, &self.failed, &self.started);
        with_failure(self.good.log_density(x) - self.bad.log_density(x), p_fail)
    }
}

/// Kernel width for `n` points in `dims` dimensions (Scott-like shrinkage, bounded).
fn bandwidth(n: usize, dims: usize) -> f64 {
    let n = n.max(1) as f64;
    (0.3 * n.powf(-1.0 / (dims as f64 + 4.0))).clamp(0.05, 0.3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;
    use crate::sampler::testkit::{feasible, oom, plane, point, record, x_of};
    use crate::sampler::RandomSampler;

    /// Scores rise towards `x = 0.7`; beyond it every config fails with `beyond`.
    fn history(beyond: impl Fn(Params) -> TrialRecord) -> Vec<TrialRecord> {
        (0..10)
            .flat_map(|i| {
                let (a, b) = ((i as f64 + 0.5) / 10.0, ((i * 7 % 10) as f64 + 0.5) / 10.0);
                let x = 0.7 * a;
                [
                    feasible(point(x, b), x + 0.1 * b),
                    beyond(point(0.7 + 0.3 * a, b)),
                ]
            })
            .collect()
    }

    fn proposals_beyond(
        sampler: impl Fn(u64) -> Box<dyn Sampler>,
        trials: &[TrialRecord],
    ) -> usize {
        (0..50)
            .filter(|&seed| x_of(&sampler(seed).ask(&plane(), trials).unwrap()) > 0.7)
            .count()
    }

    #[test]
    fn startup_failures_keep_proposals_out_of_their_region() {
        let trials = history(oom);
        let tpe = proposals_beyond(|s| Box::new(TpeSampler::new(s)), &trials);
        assert!(tpe <= 5, "{tpe} of 50 proposals in the OOM region");
        // The region is 30% of the space: an uninformed sampler lands there often.
        let random = proposals_beyond(|s| Box::new(RandomSampler::new(s)), &trials);
        assert!(random >= 8, "control: random put only {random} of 50 there");
    }

    #[test]
    fn failures_met_during_a_search_steer_it_away() {
        let space = plane();
        let mut sampler = TpeSampler::new(9);
        let mut trials: Vec<TrialRecord> = Vec::new();
        let (mut failures, mut later, mut later_in_region) = (0, 0, 0);
        while later < 40 {
            let p = sampler.ask(&space, &trials).unwrap();
            let x = x_of(&p);
            if failures >= 10 {
                later += 1;
                later_in_region += usize::from(x > 0.7);
            }
            if x > 0.7 {
                failures += 1;
                trials.push(oom(p));
            } else {
                let y = p["y"].as_f64().unwrap();
                trials.push(feasible(p, x + 0.1 * y));
            }
            assert!(trials.len() < 400, "never saw 10 failures");
        }
        assert!(
            later_in_region <= 4,
            "{later_in_region} of 40 later proposals in the region"
        );
    }

    #[test]
    fn slo_breaking_trials_do_not_attract_even_with_high_throughput() {
        let broken = |p| record(p, Outcome::Infeasible, Some(100.0));
        let tpe = proposals_beyond(|s| Box::new(TpeSampler::new(s)), &history(broken));
        assert!(
            tpe <= 10,
            "{tpe} of 50 proposals among SLO-breaking configs"
        );
    }

    #[test]
    fn bandwidth_shrinks_with_data_within_bounds() {
        assert!(bandwidth(50, 4) < bandwidth(5, 4));
        assert!((0.05..=0.3).contains(&bandwidth(1, 1)));
        assert!((0.05..=0.3).contains(&bandwidth(100_000, 1)));
    }
}
