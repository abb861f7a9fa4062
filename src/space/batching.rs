//! How a config's running batch forms under the probe: which parameter caps the batch, which
//! caps the tokens of one engine step, and how many clients the probe keeps in flight. Model-based
//! samplers derive inputs from these (a batch cap above the client count never fills).

use super::{EngineKind, ParamKind, StudySpec};
use crate::probe::LoadSpec;

/// The batching parameters of a space and the probe's client count.
#[derive(Clone, Debug, PartialEq)]
pub struct Batching {
    /// The `int` parameter capping the running batch (`max_num_seqs`, `maxBatchSize`).
    pub batch_cap: String,
    /// The `int` parameter capping the tokens of one step that decodes and prefill chunks share
    /// (vLLM's `max_num_batched_tokens`); `None` where prefill runs in batches of its own.
    pub step_tokens: Option<String>,
    /// Requests the probe keeps in flight at most.
    pub clients: u32,
}

/// Batch-cap parameter names each engine reads, and whether its step token budget is shared
/// between decodes and prefill chunks.
fn batch_caps(kind: EngineKind) -> &'static [(&'static str, Option<&'static str>)] {
    const VLLM: (&str, Option<&str>) = ("max_num_seqs", Some("max_num_batched_tokens"));
    match kind {
        EngineKind::Vllm => &[VLLM],
        EngineKind::Sglang => &[("max_running_requests", None)],
        EngineKind::Mindie => &[("maxBatchSize", None)],
        EngineKind::Llamacpp => &[("parallel", None)],
        // The simulator reads vLLM's names and MindIE's.
        EngineKind::Sim => &[VLLM, ("maxBatchSize", None)],
        EngineKind::Custom => &[],
    }
}

/// The batching parameters `spec` searches, when it searches a batch cap as an `int` and its
/// probe bounds the requests in flight.
pub(super) fn of(spec: &StudySpec) -> Option<Batching> {
    let clients = match &spec.probe.load {
        LoadSpec::Closed { concurrency, .. } => *concurrency,
        LoadSpec::Open {
            max_concurrency, ..
        } => (*max_concurrency)?,
    };
    let searched_int = |name: &str| {
        spec.parameters
            .iter()
            .any(|p| p.name == name && matches!(p.kind, ParamKind::Int { low, .. } if low >= 1))
    };
    let (cap, step) = batch_caps(spec.engine.kind)
        .iter()
        .find(|(cap, _)| searched_int(cap))?;
    Some(Batching {
        batch_cap: (*cap).to_string(),
        step_tokens: step.filter(|s| searched_int(s)).map(str::to_string),
        clients,
    })
}
