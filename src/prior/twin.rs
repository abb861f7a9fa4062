//! `search.prior: twin`: before the first real trial, the digital twin (`sim`) evaluates the
//! space in virtual time under the study's own probe workload. Its best feasible configs,
//! spread apart, run right after the baseline and the expert settings, and all it evaluated
//! seeds the sampler as a warm start does (trusted at the transfer weight, set aside when the
//! study's own trials contradict it), so configs it predicts to fail or break an SLO come last.

use crate::record::{metric, FailureKind, MetricMap, Params, TrialRecord};
use crate::report::TwinPredictions;
use crate::sampler::from_name;
use crate::sampler::propose::Dims;
use crate::sampler::Refresh;
use crate::score::{record_run, Objective};
use crate::sim::calibrate::{calibrate, Calibration, Observation};
use crate::sim::{CardScale, Deployment};
use crate::space::{EngineKind, Feasibility, Prior, StudySpec, Target};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Configs of the space the twin evaluates before the first trial.
pub const DRAWS: usize = 48;
/// Of those, how many of the best run first.
pub const FIRST: usize = 3;
/// Configs run first differ from each other by at least this share of some parameter's range.
const SPREAD: f64 = 0.2;

/// Why a study has no twin prior.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NoTwin {
    /// `search.prior` is `expert` or `none`.
    #[error("search.prior is not `twin`")]
    Off,
    /// The default prior on a study of the simulator, which is the twin itself.
    #[error(
        "the engine is the simulator, the twin itself; `search.prior: twin` has it rank its own \
         landscape"
    )]
    Simulated,
    /// The twin models vLLM and MindIE only.
    #[error("the twin models vLLM and MindIE, not {0}")]
    Engine(EngineKind),
    /// The space names no card.
    #[error("the space names no card for the twin; set engine.card (e.g. `card: H100`)")]
    NoCard,
    /// The twin cannot build the card or the model.
    #[error("{0}")]
    Unbuildable(String),
}

/// What the twin predicts for a space.
#[derive(Clone, Debug, Default)]
pub struct TwinView {
    /// Every config it evaluated, recorded as a trial would be.
    pub trials: Vec<TrialRecord>,
    /// Its best feasible configs, spread apart, best first.
    pub first: Vec<Params>,
    /// Parameters of the space the twin does not model (left out of what it evaluates).
    pub unmodelled: Vec<String>,
}

impl TwinView {
    /// How many of the evaluated configs the twin predicts feasible.
    pub fn predicted_feasible(&self) -> usize {
        self.trials.iter().filter(|t| t.is_feasible()).count()
    }
}

/// The deployment the twin simulates for `space`: its engine, `engine.card` and model (a
/// profile name, a `config.json`, or a model folder holding one).
pub fn deployment(space: &StudySpec) -> Result<Deployment, NoTwin> {
    match space.search.prior {
        Prior::Twin => {}
        Prior::Default if space.engine.kind == EngineKind::Sim => return Err(NoTwin::Simulated),
        Prior::Default => {}
        Prior::Expert | Prior::None => return Err(NoTwin::Off),
    }
    let engine = match space.engine.kind {
        EngineKind::Vllm | EngineKind::Sim => EngineKind::Vllm,
        EngineKind::Mindie => EngineKind::Mindie,
        other => return Err(NoTwin::Engine(other)),
    };
    let card = space.engine.card.clone().ok_or(NoTwin::NoCard)?;
    let model = twin_model(space);
    let deployment = Deployment {
        engine,
        version: space.engine.version.clone(),
        card,
        card_scale: CardScale::default(),
        model,
        tp: 1,
    };
    crate::sim::config::EngineConfig::resolve(&deployment, &Params::new())
        .map(|_| deployment.clone())
        .or_else(|failure| match failure.kind {
            // Defaults the card cannot hold still make a deployment a search can fix.
            crate::record::FailureKind::Oom => Ok(deployment),
            _ => Err(NoTwin::Unbuildable(failure.message)),
        })
}

/// The twin's view of `space` on its card scaled by `scale`: [`DRAWS`] quasi-random configs
/// (seeded by `seed`) evaluated and scored by `objective`, and the [`FIRST`] to run first.
pub fn view(
    space: &StudySpec,
    check: &dyn Feasibility,
    objective: &Objective,
    scale: CardScale,
    seed: u64,
) -> Result<TwinView, NoTwin> {
    let deployment = Deployment {
        card_scale: scale,
        ..deployment(space)?
    };
    let twin = Twin::of(space, deployment);
    let configs = draws(check, seed);
    let evaluate = |params: &Params| twin.run(params);
    let measured = crate::util::parallel::map(&configs, evaluate);
    let trials: Vec<TrialRecord> = configs
        .into_iter()
        .zip(measured)
        .enumerate()
        .map(|(n, (params, run))| record_run(objective, n as u32, params, run))
        .collect();
    let first = spread_best(check, &trials);
    Ok(TwinView {
        trials,
        first,
        unmodelled: twin.unmodelled,
    })
}

/// The twin of a space: its deployment and which of the space's parameters it receives.
struct Twin<'a> {
    space: &'a StudySpec,
    deployment: Deployment,
    /// Parameters passed to the engine that the twin models.
    modelled: Vec<String>,
    /// Parameters passed to the engine that it does not.
    unmodelled: Vec<String>,
}

impl<'a> Twin<'a> {
    fn of(space: &'a StudySpec, deployment: Deployment) -> Twin<'a> {
        let (modelled, unmodelled) = space
            .parameters
            .iter()
            .filter(|p| p.target != Some(Target::None))
            .map(|p| p.name.clone())
            .partition(|name| crate::sim::knobs::accepts(deployment.engine, name));
        Twin {
            space,
            deployment,
            modelled,
            unmodelled,
        }
    }

    /// A run of `params` in virtual time under the space's probe, or why it did not start.
    fn run(&self, params: &Params) -> Result<MetricMap, (FailureKind, String)> {
        self.run_scaled(params, self.deployment.card_scale)
    }

    /// [`Twin::run`] on the card scaled by `scale`.
    fn run_scaled(
        &self,
        params: &Params,
        scale: CardScale,
    ) -> Result<MetricMap, (FailureKind, String)> {
        let engine_params: Params = params
            .iter()
            .filter(|(name, _)| self.modelled.contains(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let deployment = Deployment {
            card_scale: scale,
            ..self.deployment.clone()
        };
        let mut metrics = crate::sim::eval(&deployment, &engine_params, &self.space.probe, 0)
            .map_err(|f| (f.kind, f.message))?;
        let taken = (self.space.placement.devices_per_trial.count(params))
            .map_err(|message| (FailureKind::InvalidConfig, message))?;
        metrics.insert(metric::DEVICES.into(), f64::from(taken));
        Ok(on_the_clock(metrics, time_scale(self.space)))
    }
}

/// Wall seconds per modelled second of the space's engine: a simulator started with
/// `--time-scale X` runs X times as long as the engine it models (below 1: faster); 1 for a
/// real engine.
pub fn time_scale(space: &StudySpec) -> f64 {
    if space.engine.kind != EngineKind::Sim {
        return 1.0;
    }
    let args = &space.launch.extra_args;
    args.iter()
        .enumerate()
        .find_map(|(i, arg)| match arg.strip_prefix("--time-scale") {
            Some("") => args.get(i + 1)?.parse().ok(),
            Some(rest) => rest.strip_prefix('=')?.parse().ok(),
            None => None,
        })
        .filter(|s: &f64| *s > 0.0 && s.is_finite())
        .unwrap_or(1.0)
}

/// Modelled `metrics` as a client measures them against a server running `scale` wall seconds
/// per modelled second: latencies scaled by it, rates divided by it.
pub fn on_the_clock(metrics: MetricMap, scale: f64) -> MetricMap {
    metrics
        .into_iter()
        .map(|(key, value)| {
            let value = if key.ends_with("_ms") {
                value * scale
            } else if key.contains("throughput") || key.contains("goodput") {
                value / scale
            } else {
                value
            };
            (key, value)
        })
        .collect()
}

/// Median error above which a study says the twin is wrong for its card and engine.
pub const WRONG_ABOVE_PCT: f64 = 25.0;

/// What the nominal twin predicts for the scored trials of `records`; `None` where the space
/// has no twin prior or no trial was scored.
pub fn check(
    space: &StudySpec,
    objective: &Objective,
    records: &[TrialRecord],
) -> Option<TwinPredictions> {
    let twin = Twin::of(space, deployment(space).ok()?);
    let mut predicted: std::collections::HashMap<String, Option<f64>> = Default::default();
    let mut rows = Vec::new();
    for record in records {
        let Some(measured) = record.value else {
            continue;
        };
        let key = serde_json::to_string(&record.params).unwrap_or_default();
        let value = *predicted.entry(key).or_insert_with(|| {
            let metrics = twin.run(&record.params).ok()?;
            objective.judge(&metrics).value
        });
        if let Some(value) = value {
            rows.push((record.id.number, value, measured));
        }
    }
    if rows.is_empty() {
        return None;
    }
    let errors: Vec<f64> = rows
        .iter()
        .map(|(_, p, m)| ((p - m) / m).abs() * 100.0)
        .collect();
    Some(TwinPredictions {
        median_error_pct: crate::util::stats::median(&errors),
        wrong_above_pct: WRONG_ABOVE_PCT,
        calibrated: calibrated(&twin, records),
        rows,
    })
}

/// Figures of a trial the card calibration fits, where the trial measured them.
const FITTED: [&str; 3] = ["output_throughput", "mean_ttft_ms", "mean_tpot_ms"];
/// Evaluations of the study's trials a report's calibration may spend.
const CALIBRATION_BUDGET: usize = 60;

/// One measured trial as a calibration observation.
struct TrialObservation<'a> {
    twin: &'a Twin<'a>,
    params: &'a Params,
    measured: BTreeMap<String, f64>,
}

impl Observation for TrialObservation<'_> {
    fn predict(&self, scale: CardScale) -> Result<BTreeMap<String, f64>, String> {
        let metrics = self
            .twin
            .run_scaled(self.params, scale)
            .map_err(|(_, message)| message)?;
        Ok(FITTED
            .iter()
            .filter_map(|m| Some(((*m).to_string(), *metrics.get(*m)?)))
            .collect())
    }

    fn measured(&self) -> BTreeMap<String, f64> {
        self.measured.clone()
    }
}

/// The card figures fitted to the study's served trials, and the twin's error after the fit.
fn calibrated(twin: &Twin<'_>, records: &[TrialRecord]) -> Option<([f64; 3], f64)> {
    let fit = fit(twin, records)?;
    Some((fit.scale.to_array(), fit.error_after_pct))
}

/// The twin prior recomputed as the study measures: the card's figures fitted to the trials
/// measured so far, the space evaluated again on the fitted card (seeded by `seed`), after the
/// `earlier` trials of a warm start. The prior stays as first computed unless the fitted twin
/// orders the measured trials better than the nominal one.
pub fn refresher(space: &StudySpec, earlier: Vec<TrialRecord>, seed: u64) -> Refresh {
    let space = space.clone();
    Refresh(Arc::new(move |measured: &[TrialRecord]| {
        let objective = Objective::new(&space.objective).ok()?;
        let twin = Twin::of(&space, deployment(&space).ok()?);
        let scale = fit(&twin, measured)?.scale;
        let ranks = |scale| ranked(&twin, &objective, measured, scale);
        if !orders_better(&ranks(twin.deployment.card_scale), &ranks(scale)) {
            return None;
        }
        let view = view(&space, &space, &objective, scale, seed).ok()?;
        Some(earlier.iter().cloned().chain(view.trials).collect())
    }))
}

/// (predicted, measured) objective values of the scored `records` on the card scaled by
/// `scale`, where the twin predicts a value.
fn ranked(
    twin: &Twin<'_>,
    objective: &Objective,
    records: &[TrialRecord],
    scale: CardScale,
) -> Vec<(f64, f64)> {
    records
        .iter()
        .filter_map(|r| {
            let metrics = twin.run_scaled(&r.params, scale).ok()?;
            Some((objective.judge(&metrics).value?, r.value?))
        })
        .collect()
}

/// True when the fitted twin's (predicted, measured) pairs `after` agree in order (Kendall's
/// τ) strictly better than the nominal twin's `before`. A fit that brings the figures closer
/// without ordering the measured configs better has no evidence for re-ranking the others:
/// on few trials it fits noise, and on an engine unlike the twin in kind it moves the figures
/// but not the order.
fn orders_better(before: &[(f64, f64)], after: &[(f64, f64)]) -> bool {
    let tau = |pairs: &[(f64, f64)]| {
        let (predicted, measured): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        crate::sampler::kendall_tau(&predicted, &measured)
    };
    after.len() >= before.len() && tau(after) > tau(before)
}

/// The card scale fitted to the throughput and latencies of the scored `records`.
fn fit(twin: &Twin<'_>, records: &[TrialRecord]) -> Option<Calibration> {
    let observations: Vec<TrialObservation> = records
        .iter()
        .filter(|r| r.value.is_some())
        .map(|r| TrialObservation {
            twin,
            params: &r.params,
            measured: FITTED
                .iter()
                .filter_map(|m| Some(((*m).to_string(), *r.metrics.get(*m)?)))
                .collect(),
        })
        .collect();
    let set: Vec<&dyn Observation> = observations.iter().map(|o| o as &dyn Observation).collect();
    calibrate(&set, CardScale::default(), CALIBRATION_BUDGET).ok()
}

/// [`DRAWS`] distinct configs of the space, quasi-random; fewer when the space is smaller.
fn draws(check: &dyn Feasibility, seed: u64) -> Vec<Params> {
    let Ok(mut sampler) = from_name("qmc", seed) else {
        return Vec::new();
    };
    let mut asked: Vec<TrialRecord> = Vec::with_capacity(DRAWS);
    while asked.len() < DRAWS {
        let Ok(params) = sampler.ask(check, &asked) else {
            break;
        };
        let n = asked.len() as u32;
        asked.push(TrialRecord::new(
            n,
            params,
            crate::record::Outcome::Feasible,
        ));
    }
    asked.into_iter().map(|r| r.params).collect()
}

/// The best feasible trials, best first, each differing from those before it by at least
/// [`SPREAD`] of some parameter's range.
fn spread_best(check: &dyn Feasibility, trials: &[TrialRecord]) -> Vec<Params> {
    let dims = Dims::of(check);
    let mut ranked: Vec<&TrialRecord> = trials
        .iter()
        .filter(|t| t.is_feasible() && t.score.is_some())
        .collect();
    ranked.sort_by(|a, b| {
        b.score
            .unwrap_or(f64::MIN)
            .total_cmp(&a.score.unwrap_or(f64::MIN))
    });
    let mut picked: Vec<(Vec<f64>, Params)> = Vec::new();
    for trial in ranked {
        let at = dims.encode(&trial.params);
        let apart = picked
            .iter()
            .all(|(other, _)| at.iter().zip(other).any(|(a, b)| (a - b).abs() >= SPREAD));
        if apart {
            picked.push((at, trial.params.clone()));
        }
        if picked.len() == FIRST {
            break;
        }
    }
    picked.into_iter().map(|(_, p)| p).collect()
}

/// The model the twin simulates for `space`: the `config.json` of a model folder, else the
/// model name as written (a shipped profile).
pub(crate) fn twin_model(space: &StudySpec) -> String {
    let folder_config = Path::new(&space.engine.model).join("config.json");
    if folder_config.is_file() {
        folder_config.to_string_lossy().into_owned()
    } else {
        space.engine.model.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::orders_better;

    #[test]
    fn the_prior_is_recomputed_only_when_the_fit_orders_the_trials_better() {
        let measured = [100.0, 120.0, 90.0, 130.0];
        let pairs = |predicted: [f64; 4]| -> Vec<(f64, f64)> {
            predicted.into_iter().zip(measured).collect()
        };
        let misordered = pairs([110.0, 100.0, 95.0, 140.0]);
        let ordered = pairs([80.0, 100.0, 70.0, 105.0]);
        assert!(
            orders_better(&misordered, &ordered),
            "further off, better ordered"
        );
        assert!(
            !orders_better(&ordered, &misordered),
            "closer, worse ordered"
        );
        assert!(
            !orders_better(&ordered, &ordered),
            "no better: stays as first computed"
        );
        assert!(
            !orders_better(&misordered, &ordered[..2]),
            "fewer configs predicted after the fit"
        );
    }
}
