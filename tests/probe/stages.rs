//! Staged loads: stages one after another at their own rates, each with its own metrics.

use assert_cmd::Command;
use serde_json::Value;

#[test]
fn each_stage_runs_at_its_rate_and_reports_its_own_metrics() {
    let sim = crate::trace::fast_sim();
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("w.yaml");
    std::fs::write(
        &workload,
        "dataset: {kind: random, input_len: 64, output_len: 8}\n\
         load: {kind: stages, stages: [{rate: 10, duration: 1s}, {rate: 40, duration: 500ms}]}\n\
         ignore_eos: true\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    Command::cargo_bin("infertune")
        .unwrap()
        .args(["bench", "--url", &sim.url, "--model", "m", "--workload"])
        .arg(&workload)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let stages = report["stages"].as_array().expect("a list of stages");
    assert_eq!(stages.len(), 2, "{report}");
    assert_eq!(stages[0]["request_rate"], 10.0);
    assert_eq!(stages[0]["completed"], 10, "{}", stages[0]);
    assert_eq!(stages[1]["completed"], 20, "{}", stages[1]);
    assert_eq!(report["completed"], 30);
    for stage in stages {
        assert!(stage["p99_ttft_ms"].as_f64().is_some(), "{stage}");
        assert!(stage["request_throughput"].as_f64().unwrap() > 0.0);
    }
    // The second stage sends four times as fast: its requests are closer together.
    let rate = |s: &Value| s["completed"].as_f64().unwrap() / s["duration"].as_f64().unwrap();
    assert!(rate(&stages[1]) > 2.0 * rate(&stages[0]), "{report}");
}

#[test]
fn a_bad_stage_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("w.yaml");
    std::fs::write(
        &workload,
        "dataset: {kind: random, input_len: 64, output_len: 8}\n\
         load: {kind: stages, stages: [{rate: 10, duration: 1s}, {rate: 0, duration: 1s}]}\n",
    )
    .unwrap();
    Command::cargo_bin("infertune")
        .unwrap()
        .args([
            "bench",
            "--url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--workload",
        ])
        .arg(&workload)
        .assert()
        .failure()
        .stderr(predicates::str::contains("stages[1].rate"));
}
