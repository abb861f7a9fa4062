//! Trace replay: requests at the trace's times with its exact lengths, Mooncake's shared
//! blocks, and bad input refused before anything is sent.

use crate::kit::sim_server::SimServer;

use assert_cmd::Command;
use infertune::probe::dataset::plan;
use infertune::probe::workload::TraceFormat;
use infertune::probe::{Api, DatasetSpec, LoadSpec, WorkloadSpec};
use predicates::str::contains;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `sim serve` modelling an H100 a hundred times faster than real time, serving model `m`.
pub(crate) fn fast_sim() -> SimServer {
    SimServer::start(&[
        "--card",
        "H100",
        "--model",
        "Qwen2.5-7B",
        "--served-model-name",
        "m",
        "--time-scale",
        "0.01",
        "--startup-time",
        "0s",
    ])
}

fn azure_conv() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/traces/azure-llm-2023-conv-first-10m.csv");
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

fn trace(path: &Path, format: TraceFormat) -> DatasetSpec {
    DatasetSpec::Trace {
        path: path.to_path_buf(),
        format,
        speed: 1.0,
        start: Duration::ZERO,
        duration: None,
        requests: None,
        max_context: None,
        scale: false,
    }
}

fn replay(dataset: DatasetSpec, api: Api) -> WorkloadSpec {
    let mut workload = WorkloadSpec::closed_random(1, 1, 1, 1);
    workload.api = api;
    workload.dataset = dataset;
    workload.load = LoadSpec::Trace {
        max_concurrency: None,
    };
    workload
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn bench(url: &str, path: &Path, format: &str) -> Command {
    let mut cmd = Command::cargo_bin("infertune").unwrap();
    cmd.args([
        "bench",
        "--url",
        url,
        "--model",
        "m",
        "--api",
        "completions",
    ])
    .args(["--dataset", "trace", "--trace-format", format])
    .arg("--dataset-path")
    .arg(path);
    cmd.env_remove("INFERTUNE_API_KEY");
    cmd
}

#[test]
fn replay_sends_the_traces_requests_on_time_with_their_exact_lengths() {
    let path = azure_conv();
    let rows: Vec<(u64, u64)> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .skip(1)
        .take(30)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            (f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    let sim = fast_sim();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    bench(&sim.url, &path, "azure")
        .args(["--speed", "20", "--requests", "30", "--json"])
        .arg(&json)
        .assert()
        .success()
        .stdout(contains("Trace replay: 30 requests"))
        .stdout(contains("(prompt / output / unreported): 0 / 0 / 0"));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["completed"], 30, "{report}");
    assert_eq!(report["trace_replay"]["requests"], 30);
    let input: u64 = rows.iter().map(|r| r.0).sum();
    let output: u64 = rows.iter().map(|r| r.1).sum();
    assert_eq!(report["total_input_tokens"], input);
    assert_eq!(report["total_output_tokens"], output);
    assert_eq!(report["prompt_tokens_mismatched"], 0);
    assert_eq!(report["output_tokens_mismatched"], 0);
    assert_eq!(report["usage_unreported"], 0);
    // The 30 requests span this much of the trace; at speed 20 the replay takes 1/20 of it.
    let span = report["trace_replay"]["span_s"].as_f64().unwrap();
    let duration = report["duration"].as_f64().unwrap();
    assert!(duration >= span / 20.0, "{duration} s for a {span} s span");
    let late = report["p99_send_lateness_ms"].as_f64().unwrap();
    assert!(late < 100.0, "p99 send lateness {late} ms");
}

#[test]
fn bench_runs_a_workload_file() {
    let sim = fast_sim();
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "t.jsonl",
        "{\"timestamp\": 0, \"input_length\": 30, \"output_length\": 4, \"hash_ids\": [1]}\n\
         {\"timestamp\": 100, \"input_length\": 40, \"output_length\": 5, \"hash_ids\": [1]}\n\
         {\"timestamp\": 200, \"input_length\": 50, \"output_length\": 6, \"hash_ids\": [2]}\n",
    );
    let yaml = format!(
        "api: completions\ndataset: {{kind: trace, path: {}, format: mooncake, speed: 2}}\n\
         load: {{kind: trace}}\n",
        path.display()
    );
    let workload = write(dir.path(), "w.yaml", &yaml);
    let json = dir.path().join("r.json");
    let mut cmd = Command::cargo_bin("infertune").unwrap();
    cmd.args(["bench", "--url", &sim.url, "--model", "m", "--workload"])
        .arg(&workload)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["completed"], 3, "{report}");
    assert_eq!(report["total_input_tokens"], 120);
    assert_eq!(report["total_output_tokens"], 15);
    let mut both = Command::cargo_bin("infertune").unwrap();
    both.args(["bench", "--model", "m", "--rate", "2", "--workload"])
        .arg(&workload)
        .assert()
        .failure()
        .stderr(contains("--rate"));
}

#[test]
fn equal_mooncake_hash_ids_become_identical_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "m.jsonl",
        "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 5, \"hash_ids\": [7, 8]}\n\
         {\"timestamp\": 250, \"input_length\": 1100, \"output_length\": 6, \"hash_ids\": [7, 9, 10]}\n",
    );
    let planned = plan(
        &replay(trace(&path, TraceFormat::Mooncake), Api::Completions),
        2,
    )
    .unwrap();
    let ids = |i: usize| -> Vec<u64> {
        let body: Value = serde_json::from_slice(&planned[i].body).unwrap();
        assert_eq!(body["ignore_eos"], true);
        body["prompt"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let (a, b) = (ids(0), ids(1));
    assert_eq!((a.len(), b.len()), (1000, 1100));
    assert_eq!(a[..512], b[..512], "hash id 7 is the same block in both");
    assert_ne!(a[512..600], b[512..600], "hash ids 8 and 9 differ");
    assert_eq!(planned[1].max_tokens, 6);
    assert_eq!(planned[1].at, Some(Duration::from_millis(250)));
}

#[test]
fn scaling_fits_the_context_and_is_stated() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "t.jsonl",
        "{\"timestamp\": 0, \"input_length\": 3000, \"output_length\": 1000}\n\
         {\"timestamp\": 1, \"input_length\": 600, \"output_length\": 200}\n",
    );
    let mut dataset = trace(&path, TraceFormat::Jsonl);
    if let DatasetSpec::Trace {
        max_context, scale, ..
    } = &mut dataset
    {
        *max_context = Some(2000);
        *scale = true;
    }
    let planned = plan(&replay(dataset, Api::Chat), 2).unwrap();
    assert_eq!(
        (planned[0].input_tokens, planned[0].max_tokens),
        (1500, 500)
    );
    assert_eq!((planned[1].input_tokens, planned[1].max_tokens), (300, 100));
}

/// `bench` against a port nothing listens on: a refusal must come before any request.
fn refused(path: &Path, format: &str, extra: &[&str]) -> String {
    let out = bench("http://127.0.0.1:9", path, format)
        .args(extra)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("cannot connect"), "{stderr}");
    stderr
}

#[test]
fn bad_input_is_located_and_nothing_starts() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(
        dir.path(),
        "a.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n\
         2023-11-16 18:15:46.6805900,374,44\n\
         2023-11-16 18:15:50.9951690,396,109\n\
         2023-11-16 18:15:51.1,12x,3\n",
    );
    let error = refused(&csv, "azure", &[]);
    assert!(error.contains(&format!("{}:4:", csv.display())), "{error}");
    let error = refused(&csv, "azure", &["--requests", "2", "--max-context", "300"]);
    assert!(
        error.contains(":2:") && error.contains("max_context 300") && error.contains("scale"),
        "{error}"
    );
    let error = refused(&csv, "azure", &["--requests", "2", "--speed", "0"]);
    assert!(error.contains("speed must be a positive"), "{error}");
    let good = write(
        dir.path(),
        "b.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n",
    );
    let error = refused(&good, "azure", &["--trace-start", "1h"]);
    assert!(error.contains("no request in the window"), "{error}");
    let error = refused(&csv, "mooncake", &[]);
    assert!(error.contains(":1:"), "{error}");
}
