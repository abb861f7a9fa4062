//! The chosen plan as files: each replica's launch (`best.sh`, `best.json`, the engine's config
//! file) and a Kubernetes Deployment running its replicas, through the study's exports.

use super::figures::Plan;
use super::twin::tp_name;
use crate::export::{self, Best, Format, Stat, StudyFacts, WinnerFacts};
use crate::record::{Outcome, Params, TrialRecord};
use crate::space::{NumaCandidates, ParamDef, ParamKind, StudySpec};
use anyhow::Context as _;
use std::path::{Path, PathBuf};

/// The space of one of `plan`'s servers: `space` with each of its knobs and its tensor-parallel
/// size fixed (added where the space does not declare them); a NUMA binding stays a binding,
/// of the one chosen candidate.
pub fn planned_space(space: &StudySpec, plan: &Plan) -> StudySpec {
    let mut planned = space.clone();
    for (name, value) in plan_params(space, plan) {
        match planned.parameters.iter_mut().find(|p| p.name == name) {
            Some(def) if matches!(def.kind, ParamKind::Numa { .. }) => {
                let candidates = NumaCandidates::List(vec![value.to_string()]);
                def.kind = ParamKind::Numa { candidates };
            }
            Some(def) => def.kind = ParamKind::Const { value },
            None => planned
                .parameters
                .push(ParamDef::new(&name, ParamKind::Const { value })),
        }
    }
    planned
}

/// The parameters of one of `plan`'s servers: its knobs and its tensor-parallel size.
pub fn plan_params(space: &StudySpec, plan: &Plan) -> Params {
    let mut params = plan.shape.knobs.clone();
    params.insert(
        tp_name(space).to_string(),
        crate::record::Value::Int(i64::from(plan.shape.tp)),
    );
    params
}

/// Write the exports of `plan` (searched on `space`) into `dir`: `best.sh` and `best.json` of
/// one replica, and every deployment format that applies to the engine (for a simulator space,
/// the vLLM it stands for), the Kubernetes Deployment with the plan's replica count; returns
/// the paths of the deployment files.
pub fn write_exports(dir: &Path, space: &StudySpec, plan: &Plan) -> anyhow::Result<Vec<PathBuf>> {
    let planned = planned_space(space, plan);
    let modelled = crate::sim::modelled_vllm(&planned);
    let (out_space, tuned_on) = match &modelled {
        Some((vllm, note)) => (vllm, Some(note.as_str())),
        None => (&planned, None),
    };
    let engine = crate::engine::for_kind(out_space.engine.kind);
    let mut record = TrialRecord::new(0, plan_params(space, plan), Outcome::Feasible);
    record
        .params
        .retain(|name, _| out_space.parameters.iter().any(|p| &p.name == name));
    record.devices = (0..plan.shape.tp).collect();
    let figures = plan.figures.as_ref().map_err(|why| {
        anyhow::anyhow!("the chosen plan did not serve on the twin ({why}); nothing to export")
    })?;
    record.metrics = figures.replica.clone();
    // One replica's value of the space's objective, as a study's winner states it.
    let value = (record.metrics.get(&space.objective.metric).copied()).unwrap_or(figures.per_gpu);
    record.value = Some(value);
    record.score = Some(value);
    let workdir = std::path::absolute(dir)?;
    let mut launch = crate::study::deploy::deployment(out_space, engine, &record, workdir)?;
    launch.replicas = plan.shape.replicas;
    if launch.devices.is_empty() {
        launch.devices = record.devices.clone();
    }
    let winner = WinnerFacts {
        record: &record,
        values: vec![value],
        runs: 1,
        mean: value,
        ci95: None,
        trials: vec![0],
        metrics: record
            .metrics
            .iter()
            .map(|(name, v)| {
                let stat = Stat {
                    mean: *v,
                    ci95: None,
                    runs: 1,
                };
                (name.clone(), stat)
            })
            .collect(),
        baseline: None,
        gain_pct: None,
        gain_ci95: None,
        tied: Vec::new(),
    };
    let name = format!("plan-{}", space.name);
    let best = Best {
        study: StudyFacts {
            name: &name,
            engine: out_space.engine.kind,
            sampler: "plan",
            seed: 0,
            objective: &space.objective,
            warm_start: &[],
            verdict: None,
        },
        space: out_space,
        winner: &winner,
        launch: &launch.launch,
        version: out_space.engine.version.as_deref(),
        tuned_on,
    };
    export::write_best(dir, &best).context("cannot write the plan's best.sh")?;
    let has_image = launch.image.is_some();
    let formats: Vec<Format> = Format::ALL
        .into_iter()
        .filter(|f| f.applies_to(out_space.engine.kind, has_image))
        .collect();
    export::write_deploy(dir, &best, &launch, &formats)
}
