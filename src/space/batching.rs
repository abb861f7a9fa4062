//! How a config's running batch forms under the probe: which parameter caps the batch, which
//! caps the tokens of one engine step, and how many clients the probe keeps in flight. Model-based
//! samplers derive inputs from these (a batch cap above the client count never fills).

use super::{ParamKind, StudySpec};

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

/// A parameter an engine caps its running batch with, as its rule pack names it.
#[derive(Debug)]
pub struct BatchCap {
    /// The batch cap (`max_num_seqs`, `maxBatchSize`).
    pub cap: &'static str,
    /// The step token budget that decodes and prefill chunks share (vLLM's
    /// `max_num_batched_tokens`); `None` where prefill runs in batches of its own.
    pub step_tokens: Option<&'static str>,
}

/// The batching parameters `spec` searches, when it searches a batch cap as an `int` and its
/// probe bounds the requests in flight.
pub(super) fn of(spec: &StudySpec) -> Option<Batching> {
    let clients = spec.probe.load.concurrency()?;
    let searched_int = |name: &str| {
        spec.parameters
            .iter()
            .any(|p| p.name == name && matches!(p.kind, ParamKind::Int { low, .. } if low >= 1))
    };
    let found = spec
        .rule_pack
        .batch_caps
        .iter()
        .find(|b| searched_int(b.cap))?;
    Some(Batching {
        batch_cap: found.cap.to_string(),
        step_tokens: found
            .step_tokens
            .filter(|s| searched_int(s))
            .map(str::to_string),
        clients,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::LoadSpec;
    use std::path::Path;

    fn scenario(name: &str) -> StudySpec {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("searchbench/scenarios");
        StudySpec::load(&dir.join(name), crate::engine::rule_pack).unwrap()
    }

    #[test]
    fn each_engine_names_its_batch_cap_and_the_probe_its_clients() {
        let chat = scenario("qwen2.5-7b-h100-chat.yaml");
        let expected = Batching {
            batch_cap: "max_num_seqs".into(),
            step_tokens: Some("max_num_batched_tokens".into()),
            clients: 128,
        };
        assert_eq!(of(&chat), Some(expected));
        let mindie = of(&scenario("mindie-qwen1.5-7b-910b4.yaml")).unwrap();
        assert_eq!(mindie.batch_cap, "maxBatchSize");
        assert_eq!(
            mindie.step_tokens, None,
            "MindIE prefills in batches of its own"
        );
    }

    #[test]
    fn no_batching_without_a_searched_cap_or_a_bound_on_requests_in_flight() {
        let mut open = scenario("qwen2.5-7b-h100-chat.yaml");
        open.probe.load = LoadSpec::Open {
            rate: 4.0,
            burstiness: 1.0,
            max_concurrency: None,
            requests: Some(100),
            duration: None,
        };
        assert_eq!(of(&open), None);
        if let LoadSpec::Open {
            max_concurrency, ..
        } = &mut open.probe.load
        {
            *max_concurrency = Some(32);
        }
        assert_eq!(of(&open).map(|b| b.clients), Some(32));
        let mut custom = scenario("qwen2.5-7b-h100-chat.yaml");
        custom.rule_pack = crate::engine::rule_pack(crate::space::EngineKind::Custom);
        assert_eq!(of(&custom), None);
        let mut fixed = scenario("qwen2.5-7b-h100-chat.yaml");
        fixed.parameters.retain(|p| p.name != "max_num_seqs");
        assert_eq!(of(&fixed), None);
    }
}
