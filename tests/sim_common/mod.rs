//! Helpers shared by the simulator's integration tests.

use infertune::probe::{DatasetSpec, LoadSpec, WorkloadSpec};
use infertune::sim::Deployment;
use infertune::space::{EngineKind, Params, Value};
use std::time::Duration;

/// A vLLM (or MindIE) deployment.
pub fn deployment(
    engine: EngineKind,
    version: Option<&str>,
    card: &str,
    model: &str,
    tp: u32,
) -> Deployment {
    Deployment {
        engine,
        version: version.map(str::to_string),
        card: card.into(),
        model: model.into(),
        tp,
    }
}

/// Parameters from name/value pairs.
pub fn params(pairs: &[(&str, Value)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// A closed-loop random-dataset workload.
pub fn closed(
    input: u32,
    output: u32,
    range: f64,
    concurrency: u32,
    requests: u32,
) -> WorkloadSpec {
    WorkloadSpec {
        api: Default::default(),
        dataset: DatasetSpec::Random {
            input_len: input,
            output_len: output,
            range_ratio: range,
            prefix_len: 0,
            tokenizer: None,
        },
        load: LoadSpec::Closed {
            concurrency,
            requests: Some(requests),
            duration: None,
        },
        warmup: 0,
        min_tokens: None,
        ignore_eos: true,
        stream: true,
        extra_body: None,
        timeout: Duration::from_secs(600),
        stall_timeout: None,
        seed: 0,
        slo: Vec::new(),
    }
}
