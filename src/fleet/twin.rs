//! The twin a plan is searched on: the engine, card and model of the space, and which of the
//! space's parameters it models.

use crate::record::FailureKind;
use crate::sim::{CardScale, Deployment};
use crate::space::{EngineKind, ParamKind, StudySpec, Target};
use anyhow::bail;

/// Parameter names of the tensor-parallel size, set by the plan itself.
pub const TP_NAMES: [&str; 3] = ["tensor_parallel_size", "worldSize", "tp"];
/// Parameter names of a data-parallel size inside one server; the plan's replicas stand for it.
pub const DP_NAMES: [&str; 2] = ["data_parallel_size", "dp"];

/// The tensor-parallel parameter the engine of `space` reads.
pub fn tp_name(space: &StudySpec) -> &'static str {
    match space.engine.kind {
        EngineKind::Mindie => "worldSize",
        _ => "tensor_parallel_size",
    }
}

/// The deployment the twin simulates for `space` on one card: its engine (the simulator stands
/// for vLLM), `engine.card` and model (a profile name, a `config.json`, or a folder holding
/// one). Fails saying why when the twin cannot model it: another engine, no card, a model
/// architecture or weight type it does not know.
pub fn deployment(space: &StudySpec) -> anyhow::Result<Deployment> {
    let engine = match space.engine.kind {
        EngineKind::Vllm | EngineKind::Sim => EngineKind::Vllm,
        EngineKind::Mindie => EngineKind::Mindie,
        other => bail!(
            "{}: the twin models vLLM and MindIE, not {other}: no plan can be chosen for it",
            space.origin
        ),
    };
    let Some(card) = space.engine.card.clone() else {
        bail!(
            "{}: engine.card is missing; the twin needs the card a plan runs on (e.g. `card: H100`)",
            space.origin
        );
    };
    let model = crate::prior::twin::twin_model(space);
    let deployment = Deployment {
        engine,
        version: space.engine.version.clone(),
        card,
        card_scale: CardScale::default(),
        model,
        tp: 1,
    };
    match crate::sim::config::EngineConfig::resolve(&deployment, &Default::default()) {
        // One card too small for the defaults still leaves plans over more cards.
        Err(f) if f.kind != FailureKind::Oom => bail!(
            "{}: the twin cannot model {} on {}: {}",
            space.origin,
            space.engine.model,
            deployment.card,
            f.message
        ),
        _ => Ok(deployment),
    }
}

/// The parameters of `space` passed to the engine, split into those the twin models and,
/// for the others, why each is left at the engine's default in every plan.
pub fn modelled(space: &StudySpec, engine: EngineKind) -> (Vec<String>, Vec<String>) {
    let mut modelled = Vec::new();
    let mut left_out = Vec::new();
    for p in &space.parameters {
        let name = p.name.as_str();
        if p.target == Some(Target::None) || TP_NAMES.contains(&name) {
            continue;
        }
        if DP_NAMES.contains(&name) {
            left_out.push(format!(
                "`{name}`: the plan's replicas stand for data parallelism (one server each)"
            ));
        } else if matches!(p.kind, ParamKind::Numa { .. })
            || crate::sim::knobs::accepts(engine, name)
        {
            modelled.push(p.name.clone());
        } else {
            let what = if name.contains("offload") {
                "offload"
            } else if name.contains("quant") {
                "a quantisation"
            } else {
                "this parameter"
            };
            left_out.push(format!(
                "`{name}`: the twin does not model {what}; every plan leaves it at the engine's \
                 default rather than guess its effect"
            ));
        }
    }
    (modelled, left_out)
}
