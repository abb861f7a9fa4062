//! The run report as JSON, with the field names of `vllm bench serve` plus the extras this
//! probe measures (queued TTFT, error kinds, token-count sources, pruning).

use super::load::Shape;
use super::metrics::{Collector, OUTPUT_MISMATCHED, PROMPT_MISMATCHED, USAGE_UNREPORTED};
use super::plan::Plan;
use super::workload::{Api, DatasetSpec, WorkloadSpec};
use super::{EarlyStop, Target};
use crate::record::{metric, Latency, MetricMap};
use serde_json::{json, Map, Value};

/// Metrics that are whole numbers.
const COUNTS: [&str; 9] = [
    metric::COMPLETED,
    metric::FAILED,
    metric::INCOMPLETE,
    metric::TOTAL_INPUT_TOKENS,
    metric::TOTAL_OUTPUT_TOKENS,
    metric::INCOMPLETE_OUTPUT_TOKENS,
    PROMPT_MISMATCHED,
    OUTPUT_MISMATCHED,
    USAGE_UNREPORTED,
];

/// Adds `metrics` to the JSON object `to` (`duration_s` as `duration`, counts as integers).
fn insert_metrics(to: &mut Value, metrics: &MetricMap) {
    let fields = to.as_object_mut().expect("built as an object");
    for (key, value) in metrics {
        let value = if COUNTS.contains(&key.as_str()) {
            json!(*value as u64)
        } else {
            json!(value)
        };
        let key = if key == metric::DURATION_S {
            "duration"
        } else {
            key
        };
        fields.insert(key.to_string(), value);
    }
}

/// The report of one run.
pub(crate) fn json(
    target: &Target,
    workload: &WorkloadSpec,
    plan: &Plan,
    endpoint: &str,
    collector: &Collector,
    metrics: &MetricMap,
    pruned: &Option<EarlyStop>,
) -> Value {
    let (rate, burstiness, max_concurrency) = match plan.shape {
        Shape::Closed { concurrency } => (Value::Null, Value::Null, json!(concurrency)),
        Shape::Open {
            rate,
            burstiness,
            max_concurrency,
            ..
        } => (json!(rate), json!(burstiness), json!(max_concurrency)),
        Shape::Trace { max_concurrency }
        | Shape::Stages {
            max_concurrency, ..
        } => (Value::Null, Value::Null, json!(max_concurrency)),
    };
    let tokenizer = match &workload.dataset {
        DatasetSpec::Random {
            tokenizer: Some(path),
            ..
        } => json!(path.display().to_string()),
        _ => Value::Null,
    };
    let errors: Map<String, Value> = collector
        .errors
        .iter()
        .map(|(kind, tally)| {
            (
                kind.name().to_string(),
                json!({"count": tally.count, "example": tally.example}),
            )
        })
        .collect();
    let sources: Map<String, Value> = collector
        .sources
        .iter()
        .map(|(source, n)| (source.name().to_string(), json!(n)))
        .collect();
    let mut report = json!({
        "date": humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        "backend": match workload.api { Api::Chat => "openai-chat", Api::Completions => "openai" },
        "endpoint": endpoint,
        "model_id": target.model,
        "tokenizer_id": tokenizer,
        "num_prompts": plan.requests,
        "request_rate": rate,
        "burstiness": burstiness,
        "max_concurrency": max_concurrency,
        "stream": workload.stream,
        "seed": workload.seed,
        "warmup": workload.warmup_requests(),
        "duration": metrics.get(metric::DURATION_S),
        "errors_by_kind": errors,
        "output_tokens_source": sources,
        "goodput_slo": workload.slo.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "pruned": pruned.as_ref().map(ToString::to_string),
    });
    if let Shape::Stages { stages, .. } = &plan.shape {
        let each = stages.iter().zip(&collector.stages).enumerate();
        let list: Vec<Value> = each
            .map(|(i, (stage, stats))| {
                let mut object = json!({
                    "stage": i,
                    "request_rate": stage.rate,
                    "stage_duration": stage.duration.as_secs_f64(),
                });
                insert_metrics(&mut object, &stats.metrics());
                object
            })
            .collect();
        report["stages"] = json!(list);
    }
    insert_metrics(&mut report, metrics);
    let fields = report.as_object_mut().expect("built as an object");
    if !workload.stream {
        let unavailable: Vec<&str> = Latency::ALL
            .into_iter()
            .filter(|l| *l != Latency::E2el)
            .map(Latency::name)
            .collect();
        fields.insert("unavailable_metrics".into(), json!(unavailable));
    }
    report
}
