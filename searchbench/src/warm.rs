//! Warm-start benchmark: the `bo` sampler on a target scenario, cold and seeded with the trials
//! of a search on a prior scenario (another card of the same family, or an unrelated model),
//! seed by seed, reported as two rows of the usual summary.

use super::{search_with, ScenarioResult, SearchRun};
use crate::Scenario;
use infertune::sampler::{from_name, from_name_with_prior, Prior, Sampler};

/// Sampler that learns from a prior.
const SAMPLER: &str = "bo";
/// Added to a seed for the search that produces its prior, so prior and target differ.
const PRIOR_SEED_OFFSET: u64 = 1000;

/// How the warm-start comparison runs.
#[derive(Clone, Debug)]
pub struct WarmConfig {
    /// Seeds (each a cold and a warm search, and one prior search).
    pub seeds: u64,
    /// Trials of each target search.
    pub trials: usize,
    /// Trials of each prior search.
    pub prior_trials: usize,
    /// Transfer weight of the prior's trials.
    pub weight: f64,
    /// Worker threads.
    pub threads: usize,
}

/// Cold and warm searches of `target` (whose optimum `base` knows), the warm ones seeded with a
/// search of `prior`: a result with runs `bo cold` and `bo warm`, named `target ← prior`.
pub fn compare(
    target: &Scenario,
    base: &ScenarioResult,
    prior: &Scenario,
    config: &WarmConfig,
) -> anyhow::Result<ScenarioResult> {
    let seeds: Vec<u64> = (0..config.seeds).collect();
    let pairs =
        infertune::util::parallel::map_on(&seeds, config.threads, |&seed| -> anyhow::Result<_> {
            // One serial search of `scenario` from its expert config.
            let search = |scenario: &Scenario, sampler: &mut dyn Sampler, trials| {
                let first = scenario.expert.clone().into_iter().collect();
                search_with(scenario, sampler, trials, first, 1)
            };
            let mut source = from_name(SAMPLER, seed + PRIOR_SEED_OFFSET)?;
            let (_, trials) = search(prior, &mut *source, config.prior_trials)?;
            let mut cold = from_name(SAMPLER, seed)?;
            let (cold, _) = search(target, &mut *cold, config.trials)?;
            let prior = Prior {
                trials,
                weight: config.weight,
                refresh: None,
            };
            let mut warm = from_name_with_prior(SAMPLER, seed, prior)?;
            let (warm, _) = search(target, &mut *warm, config.trials)?;
            Ok(
                [("cold", cold), ("warm", warm)].map(|(label, best)| SearchRun {
                    sampler: format!("{SAMPLER} {label}"),
                    seed,
                    best,
                }),
            )
        });
    let mut runs = Vec::with_capacity(seeds.len() * 2);
    for pair in pairs {
        runs.extend(pair?);
    }
    runs.sort_by(|a, b| (&a.sampler, a.seed).cmp(&(&b.sampler, b.seed)));
    Ok(ScenarioResult {
        name: format!("{} ← {}", target.name, prior.name),
        optimum: base.optimum,
        reference: base.reference.clone(),
        runs,
    })
}

/// Labels of the two rows [`compare`] produces.
pub fn labels() -> Vec<String> {
    vec![format!("{SAMPLER} cold"), format!("{SAMPLER} warm")]
}
