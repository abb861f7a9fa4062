//! `infertune bench` over several loads: the `--report` folder (table, plots, each run's files),
//! progress lines, and the `--sweep` search for the highest load holding the SLOs, against the
//! fake server and the simulator.

use crate::kit::sim_server::SimServer;
use crate::kit::support;

use assert_cmd::Command;
use predicates::str::contains;
use std::path::Path;
use std::time::Duration;
use support::{FakeConfig, FakeServer};

fn bench(url: &str) -> Command {
    let mut cmd = Command::cargo_bin("infertune").unwrap();
    cmd.args(["bench", "--url", url, "--model", "m", "--input-len", "16"]);
    cmd.env_remove("INFERTUNE_API_KEY");
    cmd
}

fn quick() -> FakeServer {
    FakeServer::start(FakeConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        tokens: Some(8),
        ..FakeConfig::default()
    })
}

/// The rows of `sweep.csv` in `dir`, each a map from column to cell.
fn table(dir: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(dir.join("sweep.csv")).unwrap();
    let header = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            header
                .iter()
                .zip(r.iter())
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect()
        })
        .collect()
}

/// The `<svg>` documents of `html`, in order.
fn svgs(html: &str) -> Vec<&str> {
    html.split("<svg").skip(1).collect()
}

#[test]
fn a_list_of_concurrencies_writes_a_table_plots_and_each_runs_files() {
    let server = quick();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("sweep");
    bench(&server.url)
        .args(["--concurrency", "1,2,4", "--requests", "3,6,12"])
        .args(["--slo", "ttft:p99<=2s", "--report"])
        .arg(&report)
        .assert()
        .success()
        .stdout(contains("TTFT p99 ms"))
        .stdout(contains("report.html"));
    let rows = table(&report);
    let loads: Vec<&str> = rows.iter().map(|r| r["concurrency"].as_str()).collect();
    assert_eq!(loads, ["1", "2", "4"]);
    assert_eq!(rows[2]["completed"], "12");
    assert_eq!(rows[2]["failed"], "0");
    assert_eq!(rows[2]["slo_violations"], "");
    assert!(rows[2]["output_throughput"].parse::<f64>().unwrap() > 0.0);
    let html = std::fs::read_to_string(report.join("report.html")).unwrap();
    let plots = svgs(&html);
    assert_eq!(
        plots.len(),
        6,
        "output and request throughput, TTFT, TPOT, E2E, failures"
    );
    for (plot, title) in plots
        .iter()
        .zip(["Output throughput", "Request throughput"])
    {
        assert!(plot.contains(title), "{plot}");
    }
    for (plot, title) in plots[2..5]
        .iter()
        .zip(["first token", "per output", "End-to-end"])
    {
        assert!(plot.contains(title));
        // p50 and p99 at each of the three concurrencies, plus two legend marks.
        assert_eq!(plot.matches("<circle").count(), 2 * 3 + 2, "{plot}");
        assert_eq!(plot.matches("<polyline").count(), 2);
    }
    assert!(plots[5].contains("Failed requests"));
    for (c, requests) in [(1, 3), (2, 6), (4, 12)] {
        let run = |ext: &str| {
            std::fs::read_to_string(report.join(format!("runs/concurrency-{c}.{ext}"))).unwrap()
        };
        let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
        assert_eq!(json["max_concurrency"], c);
        assert_eq!(json["completed"], requests);
        assert_eq!(run("csv").lines().count(), 1 + requests);
    }
    assert!(report.join("report.md").is_file());
    assert!(report.join("plots/ttft.svg").is_file());
    // 21 measured, and a warm-up of each level's concurrency (1 + 2 + 4) before it.
    assert_eq!(server.served(), 21 + 7);
}

#[test]
fn a_list_of_rates_is_plotted_against_the_rate() {
    let server = quick();
    let dir = tempfile::tempdir().unwrap();
    bench(&server.url)
        .args(["--rate", "50,100", "--requests", "5", "--report"])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(contains("Serving Benchmark Result (rate 100/s)"));
    let rows = table(dir.path());
    let loads: Vec<&str> = rows.iter().map(|r| r["rate"].as_str()).collect();
    assert_eq!(loads, ["50", "100"]);
    assert!(dir.path().join("runs/rate-100.json").is_file());
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains(">rate</text>"));
}

#[test]
fn each_run_announces_its_number_the_requests_done_and_the_time_left() {
    let server = quick();
    bench(&server.url)
        .args(["--concurrency", "1,2,2", "--requests", "4"])
        .assert()
        .success()
        .stderr(contains("run 1/3 (concurrency 1): 0/12 requests done"))
        .stderr(contains(
            "run 3/3 (concurrency 2): 8/12 requests done, eta ",
        ));
}

#[test]
fn a_sweep_finds_the_highest_concurrency_holding_the_slo() {
    // A server that batches at most 8 sequences.
    let sim = SimServer::start(&[
        "--card",
        "A100-80",
        "--model",
        "Qwen2.5-7B",
        "--served-model-name",
        "m",
        "--time-scale",
        "0.1",
        "--startup-time",
        "1s",
        "--max-num-seqs",
        "8",
    ]);
    let dir = tempfile::tempdir().unwrap();
    // Up to 8 requests run at once; beyond that, half of each run waits for a slot.
    let output = bench(&sim.url)
        .args(["--output-len", "32", "--requests", "32"])
        .args(["--sweep", "--slo", "ttft:p50<=70ms", "--sweep-max", "64"])
        .arg("--report")
        .arg(dir.path())
        .assert()
        .success()
        .stderr(contains("run 1 of at most 20 (concurrency 1)"))
        .get_output()
        .stdout
        .clone();
    let stdout = String::from_utf8(output).unwrap();
    let knee: u32 = stdout
        .split("Knee: concurrency ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no knee in {stdout}"))
        .parse()
        .unwrap();
    let rows = table(dir.path());
    let at = |c: u32| rows.iter().find(|r| r["concurrency"] == c.to_string());
    let p50 = |c: u32| at(c).unwrap()["p50_ttft_ms"].parse::<f64>().unwrap();
    // The knee holds the SLO; the next concurrency up was measured and breaks it.
    assert_eq!(at(knee).unwrap()["slo_violations"], "", "{rows:?}");
    assert!(p50(knee) <= 70.0);
    let above = at(knee + 1).unwrap_or_else(|| panic!("knee + 1 not probed: {rows:?}"));
    assert!(above["slo_violations"].starts_with("ttft:p50<=70ms (was "));
    assert!(p50(knee + 1) > 70.0);
    // Doubling from 1 brackets the knee before bisecting.
    let bracket = (knee + 1).next_power_of_two();
    for c in std::iter::successors(Some(1), |c| Some(c * 2)).take_while(|c| *c <= bracket) {
        assert!(at(c).is_some(), "{c} not probed: {rows:?}");
    }
    assert!(
        (4..=32).contains(&knee),
        "8 run at once, so the knee is near 8: {knee}"
    );
    assert!(stdout.contains(&format!("concurrency {} breaks: ttft:p50<=70ms", knee + 1)));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains(&format!("Highest concurrency holding every SLO: {knee}.")));
    assert_eq!(svgs(&html).len(), 6);
}

#[test]
fn a_sweep_needs_an_slo_and_one_starting_load() {
    let server = quick();
    bench(&server.url)
        .args(["--sweep", "--requests", "2"])
        .assert()
        .code(2)
        .stderr(contains("--slo"));
    bench(&server.url)
        .args(["--sweep", "--slo", "ttft:p99<=1s", "--concurrency", "1,2"])
        .args(["--requests", "2"])
        .assert()
        .code(2)
        .stderr(contains(
            "--sweep starts from one --concurrency or --rate value",
        ));
    assert_eq!(server.served(), 0);
}
