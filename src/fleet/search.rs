//! The search: every tensor-parallel size, replica count and knob set that fits the GPUs,
//! each server simulated in virtual time under its share of the load, then ranked.

use super::figures::{rank, Figures, Plan, Ranking, Shape, Slos};
use super::knobs::knob_sets;
use super::twin;
use super::workload::{replica_workload, TargetLoad};
use crate::record::{MetricMap, Params};
use crate::sim::Deployment;
use crate::space::StudySpec;
use anyhow::bail;
use std::collections::HashMap;

/// What to plan for.
#[derive(Clone, Debug)]
pub struct PlanRequest {
    /// GPUs available.
    pub gpus: u32,
    /// The load the deployment must carry.
    pub load: TargetLoad,
    /// What every plan must meet.
    pub slos: Slos,
    /// How plans are ranked.
    pub ranking: Ranking,
    /// Quasi-random knob sets of the space tried besides its defaults.
    pub draws: usize,
    /// Seed of the draws and of the twin's engine noise.
    pub seed: u64,
    /// Tensor-parallel sizes tried; empty: every power of two up to `gpus`.
    pub tp_sizes: Vec<u32>,
    /// Only plans that fill as many of the GPUs as their tensor-parallel size allows; else
    /// also those with fewer replicas.
    pub fill_gpus: bool,
}

/// The ranked plans and what the search left out.
#[derive(Clone, Debug)]
pub struct Planned {
    /// Every candidate deployment, best first.
    pub plans: Vec<Plan>,
    /// What the twin cannot model and every plan therefore leaves out, with why.
    pub left_out: Vec<String>,
    /// Distinct server runs the twin simulated (replicas with the same share share one).
    pub simulated: usize,
}

/// Plan `request` for the model, card and engine of `space`, its probe shaping the requests.
pub fn plan(space: &StudySpec, request: &PlanRequest) -> anyhow::Result<Planned> {
    if request.gpus == 0 {
        bail!("--gpus must be at least 1");
    }
    let deployment = twin::deployment(space)?;
    let (modelled, left_out) = twin::modelled(space, deployment.engine);
    let sets = knob_sets(space, &modelled, request.draws, request.seed);
    let shapes = shapes(request, &sets);
    if shapes.is_empty() {
        bail!(
            "no tensor-parallel size of {:?} fits on {} GPUs",
            request.tp_sizes,
            request.gpus
        );
    }
    // Replicas with the same share of the load run the same server: simulate it once.
    let mut runs: Vec<(u32, Params, crate::probe::WorkloadSpec)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let keys: Vec<usize> = shapes
        .iter()
        .map(|shape| {
            let w = replica_workload(&space.probe, &request.load, shape.replicas);
            let key = serde_json::json!([shape.tp, shape.knobs, w]).to_string();
            *index.entry(key).or_insert_with(|| {
                runs.push((shape.tp, shape.knobs.clone(), w));
                runs.len() - 1
            })
        })
        .collect();
    let seed = request.seed;
    let results: Vec<Result<MetricMap, String>> =
        crate::util::parallel::map(&runs, |(tp, knobs, w)| {
            let d = Deployment {
                tp: *tp,
                ..deployment.clone()
            };
            crate::sim::eval(&d, knobs, w, seed).map_err(|f| format!("{}: {}", f.kind, f.message))
        });
    let mut plans: Vec<Plan> = shapes
        .into_iter()
        .zip(keys)
        .map(|(shape, key)| {
            let figures = results[key]
                .clone()
                .map(|m| Figures::of(m, shape.tp, shape.replicas));
            Plan::judged(shape, figures, &request.slos)
        })
        .collect();
    rank(&mut plans, request.ranking);
    Ok(Planned {
        plans,
        left_out,
        simulated: runs.len(),
    })
}

/// The candidate shapes of `request` with each of the knob `sets`.
fn shapes(request: &PlanRequest, sets: &[Params]) -> Vec<Shape> {
    let sizes: Vec<u32> = if request.tp_sizes.is_empty() {
        (0..)
            .map(|k| 1u32 << k)
            .take_while(|tp| *tp <= request.gpus)
            .collect()
    } else {
        request.tp_sizes.clone()
    };
    let mut shapes = Vec::new();
    for tp in sizes
        .into_iter()
        .filter(|tp| *tp >= 1 && *tp <= request.gpus)
    {
        let most = request.gpus / tp;
        let least = if request.fill_gpus { most } else { 1 };
        for replicas in least..=most {
            for knobs in sets {
                shapes.push(Shape {
                    tp,
                    replicas,
                    knobs: knobs.clone(),
                });
            }
        }
    }
    shapes
}
