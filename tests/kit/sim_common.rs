//! Helpers shared by the simulator's integration tests.

use infertune::probe::{DatasetSpec, WorkloadSpec};

use infertune::sim::Deployment;
use infertune::space::EngineKind;

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
        card_scale: Default::default(),
        model: model.into(),
        tp,
    }
}

/// A closed-loop random-dataset workload.
pub fn closed(
    input: u32,
    output: u32,
    range: f64,
    concurrency: u32,
    requests: u32,
) -> WorkloadSpec {
    let mut workload = WorkloadSpec::closed_random(input, output, concurrency, requests);
    if let DatasetSpec::Random { range_ratio, .. } = &mut workload.dataset {
        *range_ratio = range;
    }
    workload
}
