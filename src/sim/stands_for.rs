//! What a simulator study deploys as: the engine the simulator modelled, serving the modelled
//! model, so its winner comes out as the launch it stands for.

use super::profiles;
use crate::space::{EngineKind, ParamKind, StudySpec};

/// MindIE's names the simulator reads; a space of them stands for MindIE, which has no
/// deployment formats.
const MINDIE_NAMES: [&str; 4] = [
    "maxBatchSize",
    "maxPrefillTokens",
    "maxSeqLen",
    "npuMemSize",
];

/// The vLLM space a simulator space stands for (its model as a Hugging Face repository where
/// the simulator ships one, no simulator arguments, NUMA bindings left out: they were modelled,
/// not run), and the line every file made from it carries; `None` for a space of another
/// engine or of MindIE's names.
pub fn modelled_vllm(space: &StudySpec) -> Option<(StudySpec, String)> {
    if space.engine.kind != EngineKind::Sim
        || space
            .parameters
            .iter()
            .any(|p| MINDIE_NAMES.contains(&p.name.as_str()))
    {
        return None;
    }
    let profile = profiles::model(&space.engine.model).ok();
    let mut vllm = space.clone();
    vllm.engine.kind = EngineKind::Vllm;
    vllm.engine.model = profile
        .and_then(|m| m.repo.clone())
        .unwrap_or_else(|| space.engine.model.clone());
    vllm.launch.command = None;
    vllm.launch.extra_args.clear();
    vllm.parameters
        .retain(|p| !matches!(p.kind, ParamKind::Numa { .. }));
    let card = space.engine.card.as_deref().unwrap_or("the default card");
    let note = format!(
        "Tuned on infertune's simulator of vLLM (card {card}, model {}), not on a real engine: \
         measure it on the card before relying on it",
        space.engine.model
    );
    Some((vllm, note))
}
