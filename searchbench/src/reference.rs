//! The reference optimum of a scenario: a large uniform search, spread over worker threads,
//! refined by coordinate descent around its best configs. Results can be cached in a JSON file
//! keyed by the scenario's fingerprint and the number of draws.

use super::Scenario;
use infertune::record::{Outcome, Params};
use infertune::sampler::propose::{call_rng, Dims};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Best configs kept from the uniform phase for refinement.
const REFINED: usize = 16;
/// Coordinate step sizes of the refinement, coarse to fine (unit-cube scale).
const STEPS: [f64; 6] = [0.5, 0.25, 0.1, 0.03, 0.01, 0.003];

/// The outcome of a reference search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// Best feasible value found; `None` if nothing was feasible.
    pub optimum: Option<f64>,
    /// The config that reached it.
    pub best: Option<Params>,
    /// Shares of the uniform draws: feasible, SLO-breaking, failed at start, refused by the
    /// space's constraints or rules.
    pub shares: Shares,
}

/// How uniform draws over a space end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Shares {
    /// Met every SLO.
    pub feasible: f64,
    /// Ran but broke an SLO.
    pub slo_broken: f64,
    /// Failed at start (oom, invalid config, ...).
    pub startup_failed: f64,
    /// Refused by a constraint or rule before launch.
    pub refused: f64,
}

/// Best feasible value found by `draws` uniform draws on `threads` threads plus refinement.
pub fn search(scenario: &Scenario, draws: usize, threads: usize) -> Reference {
    let dims = Dims::of(&*scenario.space);
    let chunks = threads.clamp(1, draws.max(1));
    let per_chunk = draws.div_ceil(chunks);
    let drawn: Vec<(Draw, Vec<f64>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..chunks)
            .map(|chunk| {
                let dims = &dims;
                scope.spawn(move || {
                    let mut rng = call_rng(chunk as u64, draws, 5);
                    let n = per_chunk.min(draws.saturating_sub(chunk * per_chunk));
                    (0..n)
                        .map(|_| {
                            let u: Vec<f64> = (0..dims.len()).map(|_| rng.random()).collect();
                            (draw(scenario, dims, &u), u)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let shares = shares_of(&drawn);
    let mut found: Vec<(f64, Vec<f64>)> = drawn
        .into_iter()
        .filter_map(|(d, u)| match d {
            Draw::Feasible(v) => Some((v, u)),
            _ => None,
        })
        .collect();
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    found.truncate(REFINED);
    let refined: Vec<(f64, Vec<f64>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = found
            .into_iter()
            .map(|(v, u)| {
                let dims = &dims;
                scope.spawn(move || refine(scenario, dims, v, u))
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let top = refined.into_iter().max_by(|a, b| a.0.total_cmp(&b.0));
    Reference {
        optimum: top.as_ref().map(|(v, _)| *v),
        best: top.and_then(|(_, u)| scenario.space.resolve(&dims.decode(&u)).ok()),
        shares,
    }
}

/// The cached reference of `scenario` for `draws` in the cache file `path`, else a fresh
/// search that is then added to the cache.
pub(crate) fn cached(
    scenario: &Scenario,
    draws: usize,
    threads: usize,
    path: &Path,
) -> anyhow::Result<Reference> {
    let key = format!("{}:{}:{draws}", scenario.name, scenario.fingerprint);
    let mut cache: BTreeMap<String, Reference> = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).unwrap_or_default(),
        Err(_) => BTreeMap::new(),
    };
    if let Some(known) = cache.get(&key) {
        return Ok(known.clone());
    }
    let fresh = search(scenario, draws, threads);
    cache.insert(key, fresh.clone());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(&cache)?)?;
    Ok(fresh)
}

/// How one draw ended.
enum Draw {
    Feasible(f64),
    SloBroken,
    StartupFailed,
    Refused,
}

fn shares_of(drawn: &[(Draw, Vec<f64>)]) -> Shares {
    let n = drawn.len().max(1) as f64;
    let share = |f: fn(&Draw) -> bool| drawn.iter().filter(|(d, _)| f(d)).count() as f64 / n;
    Shares {
        feasible: share(|d| matches!(d, Draw::Feasible(..))),
        slo_broken: share(|d| matches!(d, Draw::SloBroken)),
        startup_failed: share(|d| matches!(d, Draw::StartupFailed)),
        refused: share(|d| matches!(d, Draw::Refused)),
    }
}

/// Runs the config at `u`.
fn draw(scenario: &Scenario, dims: &Dims, u: &[f64]) -> Draw {
    let Ok(params) = scenario.space.resolve(&dims.decode(u)) else {
        return Draw::Refused;
    };
    let record = scenario.trial(0, params);
    match (&record.outcome, record.value) {
        (Outcome::Feasible, Some(v)) => Draw::Feasible(v),
        (Outcome::Failed { .. }, _) => Draw::StartupFailed,
        _ => Draw::SloBroken,
    }
}

/// The feasible value at `u`, if it resolves, starts and meets the SLOs.
fn value(scenario: &Scenario, dims: &Dims, u: &[f64]) -> Option<f64> {
    match draw(scenario, dims, u) {
        Draw::Feasible(v) => Some(v),
        _ => None,
    }
}

/// Greedy coordinate ascent from `u` (value `best`), one parameter at a time.
fn refine(scenario: &Scenario, dims: &Dims, mut best: f64, mut u: Vec<f64>) -> (f64, Vec<f64>) {
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
    (best, u)
}
