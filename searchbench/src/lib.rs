//! Search-efficiency benchmark: samplers against random search on scenarios with a known
//! (reference) optimum, reported as regret-vs-trials curves and trials-to-3%.
//!
//! A scenario is a space, an [`Evaluator`] (config → metrics, or a start-up failure) and the
//! study's own [`Objective`]: each trial is scored and recorded exactly as the tune loop records
//! a probed or failed trial. The benchmark's scenarios are space files evaluated by the
//! simulator in virtual time (`sim::SimEvaluator`).

mod drive;
pub mod optuna;
pub mod plot;
pub mod reference;
pub mod report;
pub mod sim;
pub mod table;
pub mod twin;
pub mod warm;

use anyhow::Context;
use infertune::prior::twin::TwinView;
use infertune::record::{FailureKind, MetricMap, Params, TrialRecord};
use infertune::sampler::{from_name, from_name_with_prior, Prior, Sampler};
use infertune::score::record_run;
use infertune::score::Objective;
use infertune::space::Feasibility;
use reference::Reference;
use std::path::PathBuf;

/// Something that runs a config and measures it.
pub trait Evaluator: Sync {
    /// Metrics of a run of the resolved config `params` under the probe, or why it could not
    /// start.
    fn evaluate(&self, params: &Params) -> Result<MetricMap, StartupFailure>;
}

/// A config that did not start.
#[derive(Clone, Debug, PartialEq)]
pub struct StartupFailure {
    /// Failure class (oom, invalid-config, crash, timeout, ...).
    pub kind: FailureKind,
    /// What went wrong.
    pub message: String,
}

/// A benchmark scenario: maximise `objective` over `space`.
pub struct Scenario {
    /// Name used in tables, CSV and plots.
    pub name: String,
    /// Identifies the scenario's definition (cache key of its reference search).
    pub fingerprint: String,
    /// The searched space.
    pub space: Box<dyn Feasibility + Sync>,
    /// What a trial measures.
    pub evaluator: Box<dyn Evaluator>,
    /// How a trial's metrics are scored: the objective value and the SLOs every feasible trial
    /// meets.
    pub objective: Objective,
    /// The engine's expert config in this space (`search.prior: expert`), run first as a
    /// study runs it; computed without the host's cores, so the benchmark is the same anywhere.
    pub expert: Option<Params>,
    /// What the nominal twin predicts for the space (`search.prior: twin`) and how it is
    /// recalibrated as a search measures; `None` where the twin does not apply (a measured grid).
    pub twin: Option<TwinPrior>,
}

/// The twin prior of a scenario, as a study with `search.prior: twin` starts it.
pub struct TwinPrior {
    /// The nominal twin's view of the space.
    pub view: TwinView,
    /// Its recalibration from the search's own trials.
    pub refresh: infertune::sampler::Refresh,
}

/// The expert config of `space`, as a study with `search.prior: expert` runs it on a host whose
/// cores and memory are unknown (a scenario's card is simulated, not this machine).
pub fn expert_of(space: &infertune::space::StudySpec) -> Option<Params> {
    let unknown = infertune::topo::SlotShare::default();
    infertune::engine::expert_config(space, space, &unknown)
        .ok()
        .map(|e| e.params)
}

/// A sampler name with `:none` after it runs without the expert prior (`bo:none`).
const WITHOUT_PRIOR: &str = ":none";
/// A sampler name with `:twin` after it runs with the twin prior (`bo:twin`).
const WITH_TWIN: &str = ":twin";

/// What a search knows before its first trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    /// Nothing.
    Blind,
    /// The expert config runs first.
    Expert,
    /// The expert config, then the twin's best; the twin's evaluations seed the sampler.
    Twin,
}

/// A sampler name with `@N` after it keeps `N` trials in flight at once (`bo@4`).
const SLOTS: char = '@';

impl Scenario {
    /// Runs `params` and records it the way the tune loop does: a start-up failure as a failed
    /// trial, measured metrics judged by the study's scoring.
    pub fn trial(&self, number: usize, params: Params) -> TrialRecord {
        let measured = self.evaluator.evaluate(&params);
        self.record_of(number, params, measured)
    }

    /// The record of trial `number` of `params` that `measured` these metrics.
    fn record_of(
        &self,
        number: usize,
        params: Params,
        measured: Result<MetricMap, StartupFailure>,
    ) -> TrialRecord {
        let number = u32::try_from(number).unwrap_or(u32::MAX);
        let measured = measured.map_err(|f| (f.kind, f.message));
        record_run(&self.objective, number, params, measured)
    }
}

/// The objective of `space` as a benchmark scores it: it must maximise (regret is relative to a
/// positive maximum) at the probe's fixed load.
fn maximised(space: &infertune::space::StudySpec) -> anyhow::Result<Objective> {
    let spec = &space.objective;
    anyhow::ensure!(
        spec.direction == infertune::space::objective::Direction::Maximize,
        "{}: regret is measured against a positive maximum; a benchmark scenario's objective \
         must maximise",
        space.origin
    );
    anyhow::ensure!(
        spec.load_search.is_none(),
        "{}: a benchmark scenario probes at its fixed load; remove objective.load_search",
        space.origin
    );
    Objective::new(spec).with_context(|| format!("{}: objective", space.origin))
}

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Sampler names (see [`from_name`]); `random` is the baseline of the ratios.
    pub samplers: Vec<String>,
    /// Seeds per sampler and scenario.
    pub seeds: u64,
    /// Trials per search.
    pub trials: usize,
    /// Uniform draws of the reference search (before its local refinement).
    pub reference_draws: usize,
    /// Cache file of reference searches; `None` = always search afresh.
    pub reference_cache: Option<PathBuf>,
    /// Worker threads.
    pub threads: usize,
    /// Optuna's samplers to run as well (same seeds and trials); `None` = none.
    pub optuna: Option<optuna::OptunaConfig>,
    /// Leave out, with a note, a scenario where no config meets the SLOs (a perturbed card
    /// too slow for them), instead of stopping with an error.
    pub skip_without_optimum: bool,
}

/// One search: the best feasible value after each trial.
#[derive(Clone, Debug)]
pub struct SearchRun {
    /// Sampler name.
    pub sampler: String,
    /// Seed.
    pub seed: u64,
    /// `best[t]` = best feasible value among trials `0..=t`.
    pub best: Vec<Option<f64>>,
}

/// All searches of one scenario and its reference optimum.
#[derive(Clone, Debug)]
pub struct ScenarioResult {
    /// Scenario name.
    pub name: String,
    /// Best feasible value known (reference search and every benchmark trial).
    pub optimum: f64,
    /// The reference search.
    pub reference: Reference,
    /// Every search.
    pub runs: Vec<SearchRun>,
}

impl ScenarioResult {
    /// Relative regret of `run` after `trials` trials (1 when nothing feasible was found yet).
    pub fn regret(&self, run: &SearchRun, trials: usize) -> f64 {
        match run.best.get(trials.saturating_sub(1)).copied().flatten() {
            Some(best) => ((self.optimum - best) / self.optimum).max(0.0),
            None => 1.0,
        }
    }

    /// Trials `run` needed to get within `tolerance` (relative) of the optimum.
    pub(crate) fn trials_to_reach(&self, run: &SearchRun, tolerance: f64) -> Option<usize> {
        (1..=run.best.len()).find(|&t| self.regret(run, t) <= tolerance)
    }
}

/// Runs every sampler × seed on every scenario, a line on standard error as each one ends.
pub fn run(scenarios: &[Scenario], config: &BenchConfig) -> anyhow::Result<Vec<ScenarioResult>> {
    for name in &config.samplers {
        from_name(variant(name)?.0, 0)?;
    }
    let started = std::time::Instant::now();
    let mut results = Vec::with_capacity(scenarios.len());
    for (n, scenario) in scenarios.iter().enumerate() {
        let result = run_one(scenario, config);
        eprintln!(
            "[search] {}/{} `{}` done, {:.0} s so far",
            n + 1,
            scenarios.len(),
            scenario.name,
            started.elapsed().as_secs_f64()
        );
        match result {
            Err(e) if config.skip_without_optimum && e.is::<NoOptimum>() => {
                eprintln!("left out: {e}");
            }
            result => results.push(result?),
        }
    }
    Ok(results)
}

/// A scenario where no config meets the SLOs.
#[derive(Debug)]
struct NoOptimum(String);

impl std::fmt::Display for NoOptimum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoOptimum {}

/// Every sampler × seed on `scenario`.
fn run_one(scenario: &Scenario, config: &BenchConfig) -> anyhow::Result<ScenarioResult> {
    let mut runs = run_scenario(scenario, config)?;
    runs.extend(optuna_runs(scenario, config)?);
    let found = runs
        .iter()
        .filter_map(|r| r.best.last().copied().flatten())
        .fold(f64::NEG_INFINITY, f64::max);
    let reference = match &config.reference_cache {
        Some(path) => reference::cached(scenario, config.reference_draws, config.threads, path)?,
        None => reference::search(scenario, config.reference_draws, config.threads),
    };
    let optimum = reference.optimum.unwrap_or(f64::NEG_INFINITY).max(found);
    let s = &reference.shares;
    if !(optimum.is_finite() && optimum > 0.0) {
        return Err(NoOptimum(format!(
            "scenario `{}` has no feasible config with a positive `{}` (uniform draws: \
                     {:.0}% broke an SLO, {:.0}% failed at start, {:.0}% were refused); relax \
                     its SLOs or widen its parameter ranges",
            scenario.name,
            scenario.objective.spec().metric,
            s.slo_broken * 100.0,
            s.startup_failed * 100.0,
            s.refused * 100.0
        ))
        .into());
    }
    Ok(ScenarioResult {
        name: scenario.name.clone(),
        optimum,
        reference,
        runs,
    })
}

fn run_scenario(scenario: &Scenario, config: &BenchConfig) -> anyhow::Result<Vec<SearchRun>> {
    let jobs: Vec<(&String, u64)> = config
        .samplers
        .iter()
        .flat_map(|s| (0..config.seeds).map(move |seed| (s, seed)))
        .collect();
    infertune::util::parallel::map_on(&jobs, config.threads, |&(sampler, seed)| {
        search(scenario, sampler, seed, config.trials)
    })
    .into_iter()
    .collect()
}

/// The searches of every Optuna sampler of `config` on `scenario`, the samplers in parallel.
fn optuna_runs(scenario: &Scenario, config: &BenchConfig) -> anyhow::Result<Vec<SearchRun>> {
    let Some(optuna) = &config.optuna else {
        return Ok(Vec::new());
    };
    let per_sampler: Vec<anyhow::Result<Vec<SearchRun>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = optuna
            .samplers
            .iter()
            .map(|name| {
                scope.spawn(move || {
                    optuna::search(scenario, optuna, name, config.seeds, config.trials)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("an Optuna search panicked")))
            })
            .collect()
    });
    let mut runs = Vec::new();
    for r in per_sampler {
        runs.extend(r?);
    }
    Ok(runs)
}

/// The sampler of benchmark name `name`, what it starts from, and the trials it keeps in
/// flight: `bo`, `bo:none` (no expert config), `bo:twin` (the twin prior), `bo@4`, `bo:none@4`.
fn variant(name: &str) -> anyhow::Result<(&str, Start, usize)> {
    let (bare, slots) = match name.split_once(SLOTS) {
        Some((bare, n)) => (
            bare,
            n.parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .with_context(|| format!("sampler `{name}`: write `{bare}@N`, N trials at once"))?,
        ),
        None => (name, 1),
    };
    if let Some(sampler) = bare.strip_suffix(WITHOUT_PRIOR) {
        return Ok((sampler, Start::Blind, slots));
    }
    Ok(match bare.strip_suffix(WITH_TWIN) {
        Some(sampler) => (sampler, Start::Twin, slots),
        None => (bare, Start::Expert, slots),
    })
}

/// One search of `trials` trials with sampler `name` and `seed`.
fn search(scenario: &Scenario, name: &str, seed: u64, trials: usize) -> anyhow::Result<SearchRun> {
    let (sampler_name, start, slots) = variant(name)?;
    let mut first: Vec<Params> = match start {
        Start::Blind => Vec::new(),
        Start::Expert | Start::Twin => scenario.expert.clone().into_iter().collect(),
    };
    let mut sampler = match (start, &scenario.twin) {
        (Start::Twin, Some(twin)) => {
            first.extend(twin.view.first.iter().cloned());
            let prior = Prior {
                trials: twin.view.trials.clone(),
                weight: infertune::sampler::DEFAULT_TRANSFER_WEIGHT,
                refresh: Some(twin.refresh.clone()),
            };
            from_name_with_prior(sampler_name, seed, prior)?
        }
        (Start::Twin, None) => {
            anyhow::bail!(
                "{}: sampler {name}: the twin does not apply here",
                scenario.name
            )
        }
        _ => from_name(sampler_name, seed)?,
    };
    let (best, _) = search_with(scenario, &mut *sampler, trials, first, slots)
        .with_context(|| format!("{} with sampler {name} (seed {seed})", scenario.name))?;
    Ok(SearchRun {
        sampler: name.to_string(),
        seed,
        best,
    })
}

/// `trials` trials of `sampler` on `scenario`, planned by the study's planner: the best
/// feasible value after each, and the records.
pub(crate) fn search_with(
    scenario: &Scenario,
    sampler: &mut dyn Sampler,
    trials: usize,
    first: Vec<Params>,
    slots: usize,
) -> anyhow::Result<(Vec<Option<f64>>, Vec<TrialRecord>)> {
    let searched = drive::search(scenario, sampler, trials, first, slots)?;
    Ok((searched.best, searched.records))
}

#[cfg(test)]
mod tests;
