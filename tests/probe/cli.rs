//! `infertune bench` end to end: output files, exit status, secrets, bad input.

use crate::kit::support;

use assert_cmd::Command;
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;
use std::time::Duration;
use support::{FakeConfig, FakeServer, Fault};

fn quick(fault: Fault, fault_every: u64) -> FakeServer {
    FakeServer::start(FakeConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        tokens: Some(8),
        fault,
        fault_every,
        ..FakeConfig::default()
    })
}

fn bench(url: &str) -> Command {
    let mut cmd = Command::cargo_bin("infertune").unwrap();
    cmd.args(["bench", "--url", url, "--model", "fake", "--input-len", "4"]);
    cmd.env_remove("INFERTUNE_API_KEY");
    cmd
}

#[test]
fn levels_reports_and_per_request_csv() {
    let server = quick(Fault::None, 1);
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    bench(&server.url)
        .args([
            "--concurrency",
            "1,4",
            "--requests",
            "3,8",
            "--slo",
            "ttft:p99<=2s",
        ])
        .args([
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ])
        .env("INFERTUNE_API_KEY", "sk-very-secret")
        .assert()
        .success()
        .stdout(contains("Serving Benchmark Result (concurrency 4)"))
        .stdout(contains("Successful requests:"))
        .stdout(contains("ttft_queued"))
        .stdout(contains("sk-very-secret").not());
    let reports: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(reports[0]["completed"], 3);
    assert_eq!(reports[1]["completed"], 8);
    assert_eq!(reports[1]["max_concurrency"], 4);
    assert_eq!(reports[1]["total_output_tokens"], 64);
    assert!(reports[1]["p99_ttft_ms"].as_f64().unwrap() > 4.0);
    assert_eq!(
        reports[1]["request_goodput"],
        reports[1]["request_throughput"]
    );
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv_text.lines().count(), 1 + 3 + 8);
    assert!(csv_text.starts_with("run,index,ok,error_kind"));
    for file in [&json, &csv] {
        assert!(!std::fs::read_to_string(file)
            .unwrap()
            .contains("sk-very-secret"));
    }
    // 11 measured, and a warm-up of each level's concurrency (1 + 4) before it.
    assert_eq!(server.served(), 11 + 5);
}

#[test]
fn exit_status_is_non_zero_only_when_every_request_failed() {
    let all = quick(Fault::Status(500), 1);
    bench(&all.url)
        .args(["--concurrency", "2", "--requests", "4"])
        .assert()
        .code(1)
        .stdout(contains("Failed requests:"))
        .stdout(contains("HTTP 500"));
    let some = quick(Fault::Status(500), 2);
    bench(&some.url)
        .args(["--concurrency", "2", "--requests", "4"])
        .assert()
        .success();
}

#[test]
fn bad_input_is_explained() {
    let server = quick(Fault::None, 1);
    bench(&server.url)
        .args(["--concurrency", "1,2", "--requests", "1,2,3"])
        .assert()
        .code(2)
        .stderr(contains("one --requests value per"));
    bench(&server.url)
        .args(["--requests", "2", "--slo", "ttft<=2s"])
        .assert()
        .code(2)
        .stderr(contains("--slo"));
    bench(&server.url)
        .args(["--requests", "2", "--extra-body", "{oops"])
        .assert()
        .code(2)
        .stderr(contains("--extra-body is not valid JSON"));
    bench("https://127.0.0.1:1")
        .args(["--requests", "2"])
        .assert()
        .code(2)
        .stderr(contains("use http://"));
    assert_eq!(server.served(), 0);
}

#[test]
fn open_loop_runs_at_a_rate() {
    let server = quick(Fault::None, 1);
    bench(&server.url)
        .args([
            "--rate",
            "50",
            "--burstiness",
            "0.5",
            "--max-concurrency",
            "4",
            "--requests",
            "10",
            "--no-stream",
        ])
        .assert()
        .success()
        .stdout(contains("Serving Benchmark Result (rate 50/s)"))
        .stdout(contains("unavailable (responses not streamed)"));
    // 10 measured, after a warm-up of the load's concurrency cap.
    assert_eq!(server.served(), 10 + 4);
}

#[test]
fn runs_on_one_server_and_earlier_starts_split_the_spread() {
    let server = quick(Fault::None, 1);
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("start1.json");
    let runs = ["--concurrency", "2", "--requests", "6", "--runs", "3"];
    bench(&server.url)
        .args(runs)
        .args(["--json", first.to_str().unwrap()])
        .assert()
        .success()
        .stdout(contains("3 runs over 1 start(s)"));
    let reports: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&first).unwrap()).unwrap();
    assert_eq!(reports.as_array().unwrap().len(), 3);
    bench(&server.url)
        .args(runs)
        .args(["--starts", first.to_str().unwrap()])
        .assert()
        .success()
        .stdout(contains("6 runs over 2 start(s)"))
        .stdout(contains("added by a new start"));
    bench(&server.url)
        .args(runs)
        .args([
            "--starts",
            dir.path().join("missing.json").to_str().unwrap(),
        ])
        .assert()
        .failure()
        .stderr(contains("--starts: cannot read"));
}
