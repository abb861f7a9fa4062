//! Samplers: propose the next config from the space and the trials so far.
//!
//! Every sampler is stateless over the trial list: it is seeded at construction and derives the
//! randomness of each call from that seed and the number of trials, so resuming a study replays
//! the same proposals. Proposals are resolved by the space (never rejected by it) and never equal
//! a config already tried.

mod batch_inputs;
mod bo;
mod gp;
mod grid;
mod history;
mod kernel;
mod prior;
pub mod propose;
mod pso;
mod qmc;
mod random;
#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;
mod tpe;

pub use bo::check_prior;
pub(crate) use bo::BoSampler;
pub(crate) use grid::GridSampler;
pub(crate) use prior::kendall_tau;
pub use prior::{
    refresh_point, Prior, PriorCheck, Refresh, RefreshFn, Trust, DEFAULT_TRANSFER_WEIGHT,
};
pub(crate) use pso::PsoSampler;
pub(crate) use qmc::QmcSampler;
pub(crate) use random::RandomSampler;
pub(crate) use tpe::TpeSampler;

use crate::record::{Outcome, Params, TrialRecord, Violation};
use crate::space::Feasibility;

/// Proposes configs. Stateless over the trial list (seeded at construction), so resume = replay.
pub trait Sampler {
    /// The next config to try: resolved, feasible under constraints and rule pack, not tried before.
    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params>;

    /// `n` distinct configs for trials run in parallel. Each proposal after the first is asked
    /// with the earlier ones treated as observed at the mean score so far (constant liar), so a
    /// model-based sampler spreads the batch instead of proposing `n` neighbours.
    fn ask_n(
        &mut self,
        space: &dyn Feasibility,
        trials: &[TrialRecord],
        n: usize,
    ) -> anyhow::Result<Vec<Params>> {
        let mut batch: Vec<Params> = Vec::with_capacity(n);
        for _ in 0..n {
            let params = self.ask(space, &with_pending(trials, &batch))?;
            batch.push(params);
        }
        Ok(batch)
    }

    /// How the trials of earlier studies (a warm start) stand against `trials`, as the sampler
    /// weighs them at its next proposal; `None` for a sampler that learns from none.
    fn prior_check(&self, _space: &dyn Feasibility, _trials: &[TrialRecord]) -> Option<PriorCheck> {
        None
    }

    /// The run-to-run spread of the objective measured so far (relative: the standard deviation
    /// of its log between runs of one config), `None` when none is known. Model-based samplers
    /// trust a trial no more than its own interval allows (`TrialRecord::relative_error`), and
    /// one without an interval no more than this.
    fn observe_noise(&mut self, _relative: Option<f64>) {}
}

/// `trials` followed by a stand-in for each config of `pending` (proposed, still running),
/// observed at the mean score so far (constant liar; the worst score drove a parallel search
/// away from the region its pending trials probe): asking with this list never proposes a
/// pending config again and spreads proposals away from them.
pub fn with_pending(trials: &[TrialRecord], pending: &[Params]) -> Vec<TrialRecord> {
    let liar = liar_score(trials);
    let mut seen = trials.to_vec();
    for params in pending {
        seen.push(pending_record(seen.len(), params.clone(), liar));
    }
    seen
}

/// Names accepted by [`from_name`].
pub const SAMPLER_NAMES: [&str; 7] = ["default", "grid", "random", "qmc", "tpe", "pso", "bo"];

/// Other names [`from_name`] accepts, each with the name it stands for.
pub const SAMPLER_ALIASES: [(&str, &str); 1] = [("sobol", "qmc")];

/// What the sampler called `name` (one of [`SAMPLER_NAMES`]) does, for help texts.
pub fn about(name: &str) -> &'static str {
    match name {
        "default" => "bo, the best in the search benchmark",
        "grid" => "every combination of a few levels per parameter, in a seeded order",
        "random" => "uniform random configs (log-uniform where a parameter says `log: true`)",
        "qmc" => "quasi-random: a scrambled Sobol sequence, evenly spread (alias: sobol)",
        "tpe" => "Tree-structured Parzen Estimator that also learns from failures and SLO breaches",
        "pso" => "particle swarm optimisation",
        "bo" => "constrained Bayesian optimisation: Gaussian processes of score and SLO miss, failure-aware",
        _ => "",
    }
}

/// The sampler the search benchmark found best (`scripts/bench-search.sh`; its figures are in
/// `docs/benchmarks.md`, section "Search"). It models each SLO's margin from every trial that
/// served (feasible ones included), so it walks to the edge of the feasible region where the
/// best configs lie; it sees how the batch forms under the probe (see `batch_inputs`); and it
/// alone learns from earlier studies' trials (a warm start, checked against the study's own).
/// Where nearly every config fails to start,
/// breaks an SLO or is refused, it may trail TPE or even random search: until `bo` has a
/// feasible config it only walks away from what it tried.
pub const DEFAULT_SAMPLER: &str = "bo";

/// The sampler called `name`, seeded with `seed`.
pub fn from_name(name: &str, seed: u64) -> anyhow::Result<Box<dyn Sampler>> {
    let key = name.trim().to_ascii_lowercase();
    let key = match SAMPLER_ALIASES.iter().find(|(alias, _)| *alias == key) {
        Some((_, named)) => named,
        None if key == "default" => DEFAULT_SAMPLER,
        None => key.as_str(),
    };
    Ok(match key {
        "grid" => Box::new(GridSampler::new(seed, grid::DEFAULT_LEVELS)),
        "random" => Box::new(RandomSampler::new(seed)),
        "qmc" => Box::new(QmcSampler::new(seed)),
        "tpe" => Box::new(TpeSampler::new(seed)),
        "pso" => Box::new(PsoSampler::new(seed)),
        "bo" => Box::new(BoSampler::new(seed, Prior::default())),
        _ => anyhow::bail!(
            "unknown sampler `{name}`: use one of {} (set `search.sampler` in the space file)",
            SAMPLER_NAMES.join(", ")
        ),
    })
}

/// The sampler called `name`, seeded with `seed`, whose models also learn from the trials of
/// earlier studies in `prior` (a warm start; only `bo` learns from them).
pub fn from_name_with_prior(
    name: &str,
    seed: u64,
    prior: Prior,
) -> anyhow::Result<Box<dyn Sampler>> {
    if prior.trials.is_empty() {
        return from_name(name, seed);
    }
    anyhow::ensure!(
        learns_from_prior(name),
        "sampler `{name}` cannot learn from earlier studies; set `search.sampler: bo` for a warm \
         start"
    );
    Ok(Box::new(BoSampler::new(seed, prior)))
}

/// Whether the sampler called `name` learns from a prior's trials (only `bo` does).
pub fn learns_from_prior(name: &str) -> bool {
    let key = name.trim().to_ascii_lowercase();
    key == "bo" || (key == "default" && DEFAULT_SAMPLER == "bo")
}

/// The value a pending proposal is assumed to reach: the mean score seen so far.
fn liar_score(trials: &[TrialRecord]) -> Option<f64> {
    let scores: Vec<f64> = trials
        .iter()
        .filter_map(|t| t.score)
        .filter(|s| s.is_finite())
        .collect();
    (!scores.is_empty()).then(|| scores.iter().sum::<f64>() / scores.len() as f64)
}

/// A stand-in record for a proposal still running: marked pending, at the liar's score, which
/// ranks it below every feasible trial without marking its region as a start-up failure (and
/// `bo` learns nothing of its SLOs from it).
fn pending_record(number: usize, params: Params, score: Option<f64>) -> TrialRecord {
    TrialRecord {
        value: score,
        score,
        violations: vec![Violation::Pending],
        ..TrialRecord::new(
            u32::try_from(number).unwrap_or(u32::MAX),
            params,
            Outcome::Infeasible,
        )
    }
}
