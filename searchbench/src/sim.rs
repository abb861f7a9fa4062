//! Benchmark scenarios run through the simulator: a YAML space file names the engine, card and
//! model, its parameters and constraints, the probe workload and the objective; each trial is
//! `infertune::sim::eval` of the resolved config in virtual time.
//!
//! The simulator is deterministic for a given seed, so every config is evaluated once per
//! scenario and remembered: searches of different samplers and seeds share the evaluations.

use super::{Evaluator, Scenario, StartupFailure, TwinPrior};
use crate::twin::Perturbation;
use anyhow::Context;
use infertune::prior::twin;
use infertune::probe::WorkloadSpec;
use infertune::record::{MetricMap, Params};
use infertune::sim::{CardScale, Deployment};
use infertune::space::{EngineKind, Prior, StudySpec, Target};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Mutex;

/// Seed of the simulated engine's noise, the same for every config: one run-level noise draw
/// shared by all configs, so rankings reflect the configs rather than luck.
const ENGINE_SEED: u64 = 0;

/// A config evaluated by the simulator, with evaluations remembered by config.
pub(crate) struct SimEvaluator {
    deployment: Deployment,
    workload: WorkloadSpec,
    /// Parameters the engine receives (those not marked `internal`).
    passed: Vec<String>,
    /// Evaluations by config and kind of run.
    memo: Mutex<HashMap<String, Result<MetricMap, StartupFailure>>>,
}

impl SimEvaluator {
    /// The evaluator of `space` on `deployment` under the space's probe workload.
    pub fn on(space: &StudySpec, deployment: Deployment) -> SimEvaluator {
        SimEvaluator {
            deployment,
            workload: space.probe.clone(),
            passed: space
                .parameters
                .iter()
                .filter(|p| p.target != Some(Target::None))
                .map(|p| p.name.clone())
                .collect(),
            memo: Mutex::new(HashMap::new()),
        }
    }
}

impl SimEvaluator {
    /// The parameters of `params` the engine receives.
    fn engine_params(&self, params: &Params) -> Params {
        params
            .iter()
            .filter(|(name, _)| self.passed.contains(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect()
    }

    /// A simulated run of `engine_params` under `workload` with the engine's noise from `seed`.
    fn simulate(
        &self,
        engine_params: &Params,
        workload: &WorkloadSpec,
        seed: u64,
    ) -> Result<MetricMap, StartupFailure> {
        infertune::sim::eval(&self.deployment, engine_params, workload, seed)
            .map_err(startup_failure)
    }
}

impl SimEvaluator {
    /// `run` of the engine parameters of `params`, remembered under `what` (the run's kind).
    fn remembered(
        &self,
        params: &Params,
        what: &str,
        run: impl FnOnce(&Params) -> Result<MetricMap, StartupFailure>,
    ) -> Result<MetricMap, StartupFailure> {
        let engine_params = self.engine_params(params);
        let key = format!(
            "{}@{what}",
            serde_json::to_string(&engine_params).unwrap_or_default()
        );
        let memo = |m: &Mutex<HashMap<String, _>>| {
            m.lock()
                .unwrap_or_else(|e: std::sync::PoisonError<_>| e.into_inner())
                .get(&key)
                .cloned()
        };
        if let Some(known) = memo(&self.memo) {
            return known;
        }
        let result = run(&engine_params);
        self.memo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, result.clone());
        result
    }
}

impl Evaluator for SimEvaluator {
    fn evaluate(&self, params: &Params) -> Result<MetricMap, StartupFailure> {
        self.remembered(params, "full", |engine_params| {
            self.simulate(engine_params, &self.workload, ENGINE_SEED)
        })
    }
}

fn startup_failure(failure: infertune::sim::config::SimFailure) -> StartupFailure {
    StartupFailure {
        kind: failure.kind,
        message: failure.message,
    }
}

/// What the simulator runs for `space`: its engine kind and version, `engine.card` and
/// `engine.model`; tensor parallelism comes from a `tensor_parallel_size`/`worldSize` parameter.
pub fn deployment(space: &StudySpec) -> anyhow::Result<Deployment> {
    let engine = match space.engine.kind {
        EngineKind::Vllm | EngineKind::Sim => EngineKind::Vllm,
        EngineKind::Mindie => EngineKind::Mindie,
        other => anyhow::bail!(
            "{}: the simulator models vLLM and MindIE, not {other:?}; set engine.kind to vllm, \
             mindie or sim",
            space.origin
        ),
    };
    let card = space.engine.card.clone().with_context(|| {
        format!(
            "{}: a simulated scenario needs engine.card (e.g. `card: h100`)",
            space.origin
        )
    })?;
    Ok(Deployment {
        engine,
        version: space.engine.version.clone(),
        card,
        card_scale: Default::default(),
        model: space.engine.model.clone(),
        tp: 1,
    })
}

/// The scenario in the space file at `path`: maximise its objective subject to its SLOs, scored
/// as the study scores it; measured on the twin `perturbed` away from the space's card, if
/// given, and with the nominal twin's view of the space when `with_twin`.
pub fn scenario(
    path: &Path,
    perturbed: Option<&Perturbation>,
    with_twin: bool,
) -> anyhow::Result<Scenario> {
    let space = StudySpec::load(path, infertune::engine::rule_pack)?;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    let objective = super::maximised(&space)?;
    let nominal = deployment(&space)?;
    let (name, measured) = match perturbed {
        Some(p) => {
            p.name.hash(&mut hasher);
            (format!("{} ({})", space.name, p.name), p.apply(&nominal))
        }
        None => (space.name.clone(), nominal),
    };
    let twin = if with_twin {
        let mut twin_space = space.clone();
        twin_space.search.prior = Prior::Twin;
        let view = twin::view(&twin_space, &space, &objective, CardScale::default(), 0)
            .map_err(|e| anyhow::anyhow!("{}: the twin prior: {e}", space.origin))?;
        Some(TwinPrior {
            view,
            refresh: twin::refresher(&twin_space, Vec::new(), 0),
        })
    } else {
        None
    };
    Ok(Scenario {
        name,
        fingerprint: format!("{:016x}", hasher.finish()),
        objective,
        evaluator: Box::new(SimEvaluator::on(&space, measured)),
        expert: super::expert_of(&space),
        twin,
        space: Box::new(space),
    })
}

/// Whether the space file at `path` is a MindIE one (a vLLM scheduler generation does not apply).
fn is_mindie(path: &Path) -> bool {
    StudySpec::load(path, infertune::engine::rule_pack)
        .is_ok_and(|space| space.engine.kind == EngineKind::Mindie)
}

/// Every scenario file (`*.yaml`) in `dir`, in name order: as written, or with `twin` each
/// measured under every perturbation of [`crate::twin::PERTURBATIONS`] with the nominal twin's
/// view attached.
pub fn scenarios(dir: &Path, twin: bool) -> anyhow::Result<Vec<Scenario>> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list scenario folder {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    anyhow::ensure!(
        !paths.is_empty(),
        "no scenario files (*.yaml) in {}; pass a folder of space files with --scenarios",
        dir.display()
    );
    let variants: Vec<Option<&Perturbation>> = if twin {
        crate::twin::PERTURBATIONS.iter().map(Some).collect()
    } else {
        vec![None]
    };
    paths
        .iter()
        .flat_map(|p| variants.iter().map(move |v| (p, *v)))
        .filter(|(p, v)| v.is_none_or(|v| v.version.is_none() || !is_mindie(p)))
        .map(|(p, v)| scenario(p, v, twin).with_context(|| format!("scenario {}", p.display())))
        .collect()
}
