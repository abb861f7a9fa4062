//! `search.prior: twin` on the simulator: the twin ranks the space before the first trial, its
//! best configs run right after the baseline, and the report sets what it predicted for each
//! trial against what the trial measured.

use crate::kit::e2e_sim_common::{records, tune};

use assert_cmd::Command;
use infertune::record::Params;
use infertune::sim::CardScale;
use infertune::space::StudySpec;
use predicates::str::contains;
use std::time::Duration;

const PORT: u16 = 18_970;

/// The e2e fixture's engine and probe, searched by `bo` from the twin's view.
fn space_text() -> String {
    format!(
        r#"name: twin-prior
engine:
  kind: sim
  card: h100
  model: qwen2.5-32b
launch:
  port: {PORT}
  ready_timeout: 20s
  stop_grace: 2s
  extra_args: ["--time-scale", "0.1", "--startup-time", "1s"]
parameters:
  max_model_len:          {{type: const, value: 4096}}
  max_num_seqs:           {{type: int, low: 1, high: 64, log: true, default: 32}}
  max_num_batched_tokens: {{type: int, low: 512, high: 4096, log: true, default: 2048}}
  gpu_memory_utilization: {{type: float, low: 0.84, high: 0.96, step: 0.02, default: 0.9}}
probe:
  dataset: {{kind: random, input_len: 256, output_len: 32, range_ratio: 0.2}}
  load: {{kind: closed, concurrency: 16, requests: 40}}
  warmup: 2
  ignore_eos: true
  timeout: 20s
  seed: 3
objective:
  metric: output_throughput
search:
  sampler: bo
  prior: twin
  trials: 5
  seed: 4
  revalidate_top: 0
"#
    )
}

#[test]
fn the_twins_best_configs_run_first_and_the_report_sets_its_predictions_against_the_trials() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("twin-prior.yaml");
    std::fs::write(&path, space_text()).unwrap();
    let results = tmp.path().join("results");
    Command::from_std(tune(&path, &results, &[]))
        .timeout(Duration::from_secs(180))
        .assert()
        .success()
        .stderr(contains("twin prior: 48 configs evaluated"))
        .stderr(contains(
            "twin prior: Checked against this study's 4 scored trials",
        ));

    let space = StudySpec::load(&path, infertune::engine::rule_pack).unwrap();
    let objective = infertune::exec::objective(&space).unwrap();
    let view =
        infertune::prior::twin::view(&space, &space, &objective, CardScale::default(), 4).unwrap();
    assert!(!view.first.is_empty(), "the twin found no feasible config");
    let run: Vec<Params> = records(&results.join("twin-prior"))
        .into_iter()
        .map(|r| r.params)
        .collect();
    // The baseline, then (after an expert config, if the engine has one) the twin's picks.
    let start = run
        .iter()
        .position(|p| *p == view.first[0])
        .expect("the twin's best config never ran");
    assert!(start <= 2, "the twin's best ran as trial {start}");
    for (offset, pick) in view.first.iter().enumerate() {
        assert_eq!(run.get(start + offset), Some(pick), "pick {offset}");
    }

    let report = std::fs::read_to_string(results.join("twin-prior").join("report.md")).unwrap();
    assert!(report.contains("## The twin's predictions"), "{report}");
    assert!(report.contains("median error"), "{report}");
    let table_rows = report
        .lines()
        .skip_while(|l| !l.starts_with("## The twin's predictions"))
        .take_while(|l| !l.starts_with("## ") || l.starts_with("## The twin"))
        .filter(|l| l.starts_with("| ") && !l.starts_with("| trial"))
        .count();
    assert!(table_rows >= 3, "{report}");
}
