//! `sim eval` of the traffic users have: trace replay, staged loads, and prefix reuse from the
//! blocks requests really share.

use super::*;
use crate::probe::workload::{Stage, StageArrivals, TraceFormat};
use crate::probe::{DatasetSpec, LoadSpec};
use crate::record::Value;
use crate::space::EngineKind;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn h100() -> Deployment {
    Deployment {
        engine: EngineKind::Vllm,
        version: None,
        card: "H100".into(),
        model: "Qwen2.5-7B".into(),
        tp: 1,
    }
}

fn caching(on: bool) -> Params {
    [
        ("enable_prefix_caching".to_string(), Value::Bool(on)),
        ("max_model_len".to_string(), Value::Int(32768)),
    ]
    .into()
}

fn trace(path: &Path, format: TraceFormat, duration: Option<Duration>) -> WorkloadSpec {
    let mut w = WorkloadSpec::closed_random(1, 1, 1, 1);
    w.api = crate::probe::Api::Completions;
    w.dataset = DatasetSpec::Trace {
        path: path.to_path_buf(),
        format,
        speed: 1.0,
        start: Duration::ZERO,
        duration,
        requests: None,
        max_context: Some(32768),
        scale: true,
    };
    w.load = LoadSpec::Trace {
        max_concurrency: None,
    };
    w
}

#[test]
fn a_replayed_trace_sends_its_requests_and_shares_its_blocks() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    // Requests 1 and 2 start with request 0's two blocks; request 3 shares nothing.
    let rows = [
        (0, 1100, 10, "[1, 2, 3]"),
        (1000, 1500, 10, "[1, 2, 4]"),
        (2000, 1024, 10, "[1, 2]"),
        (3000, 600, 10, "[5, 6]"),
    ];
    for (ms, input, output, ids) in rows {
        writeln!(
            file,
            "{{\"timestamp\": {ms}, \"input_length\": {input}, \"output_length\": {output}, \
             \"hash_ids\": {ids}}}"
        )
        .unwrap();
    }
    let w = trace(file.path(), TraceFormat::Mooncake, None);
    let on = evaluate(&h100(), &caching(true), &w, 0).unwrap();
    assert_eq!(on.metrics["completed"], 4.0);
    assert_eq!(on.metrics["total_input_tokens"], 4224.0);
    // Sent at the trace's times: the last request 3 s after the first.
    assert!(on.metrics["duration_s"] > 3.0, "{:?}", on.metrics);
    assert_eq!(on.prefix_cache_queries, 4224);
    // Requests 1 and 2 find the two shared 512-token blocks (request 2 all but its last
    // token's block: 1008 tokens).
    assert_eq!(on.prefix_cache_hits, 1024 + 1008);
    let off = evaluate(&h100(), &caching(false), &w, 0).unwrap();
    assert_eq!(off.prefix_cache_hits, 0);
    assert!(on.metrics["mean_ttft_ms"] < off.metrics["mean_ttft_ms"]);
}

#[test]
fn a_staged_load_reports_each_stage() {
    let mut w = WorkloadSpec::closed_random(200, 20, 1, 1);
    w.load = LoadSpec::Stages {
        stages: vec![
            Stage {
                rate: 2.0,
                duration: Duration::from_secs(5),
            },
            Stage {
                rate: 4.0,
                duration: Duration::from_secs(5),
            },
        ],
        arrivals: StageArrivals::Constant,
        max_concurrency: None,
    };
    let e = evaluate(&h100(), &Params::new(), &w, 0).unwrap();
    let completed: Vec<f64> = e.stages.iter().map(|s| s["completed"]).collect();
    assert_eq!(completed, [10.0, 20.0]);
    assert_eq!(e.metrics["completed"], 30.0);
    assert!(e.stages[1]["request_throughput"] > 1.5 * e.stages[0]["request_throughput"]);
}

#[test]
fn a_trace_needs_a_trace_load_and_bad_lines_are_located() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "{{\"timestamp\": 0, \"input_length\": 10}}").unwrap();
    let w = trace(file.path(), TraceFormat::Jsonl, None);
    let e = evaluate(&h100(), &Params::new(), &w, 0).unwrap_err();
    assert!(e.message.contains(":1:"), "{e}");
    let mut closed = w.clone();
    closed.load = LoadSpec::Closed {
        concurrency: 1,
        requests: Some(1),
        duration: None,
    };
    let e = evaluate(&h100(), &Params::new(), &closed, 0).unwrap_err();
    assert!(e.message.contains("kind: trace"), "{e}");
}

/// The prefix reuse the trace's `hash_ids` imply for `rows` (input tokens, block ids): each
/// request's leading ids seen before, as a share of all prompt tokens.
fn implied_reuse(rows: &[(u32, Vec<u64>)], block: u32) -> f64 {
    let mut seen = HashSet::new();
    let (mut hit, mut total) = (0u64, 0u64);
    for (input, ids) in rows {
        let leading = ids.iter().take_while(|id| seen.contains(*id)).count() as u32;
        hit += u64::from((leading * block).min(*input));
        total += u64::from(*input);
        seen.extend(ids.iter().copied());
    }
    hit as f64 / total as f64
}

#[test]
fn the_mooncake_slice_reuses_what_its_hash_ids_imply() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/traces/mooncake-conversation.jsonl");
    if !path.exists() {
        eprintln!("skipped: {} is not checked out", path.display());
        return;
    }
    // Two minutes from the fifth, past the trace's cold start.
    let mut w = trace(&path, TraceFormat::Mooncake, Some(Duration::from_secs(120)));
    if let DatasetSpec::Trace { start, .. } = &mut w.dataset {
        *start = Duration::from_secs(300);
    }
    let mut replay = crate::probe::dataset::TraceReplay::new(&w.dataset, w.api).unwrap();
    let block = replay.block_tokens();
    let mut rows = Vec::new();
    while let Some(row) = replay.next_row().unwrap() {
        rows.push((row.input, row.blocks));
    }
    let implied = implied_reuse(&rows, block);
    let e = evaluate(&h100(), &caching(true), &w, 0).unwrap();
    let reused = e.prefix_cache_hits as f64 / e.prefix_cache_queries as f64;
    assert_eq!(e.metrics["completed"], rows.len() as f64);
    // The cache of an H100 holds the whole slice, so the engine finds what the ids imply, less
    // the partial 16-token block at each shared prefix's end and requests admitted while the
    // blocks they share were still being computed.
    assert!(implied > 0.1, "implied reuse {implied}");
    assert!(
        reused <= implied && reused > implied - 0.03,
        "reused {reused:.4}, implied {implied:.4}"
    );
}
