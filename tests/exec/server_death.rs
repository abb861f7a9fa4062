//! A server that dies while it is probed: the real binary tunes a custom engine (the fixture's
//! fake OpenAI server) whose fast config logs a CUDA error and is killed at the 7th of 8
//! streams. That trial is `crashed`, with the signal and the log's root-cause line, in the
//! journal, `trials.csv` and the report; it is never feasible, and the slower config that
//! served every request is the winner. The same against the study fakes: a server found dead
//! after its probe is crashed, whatever the probe measured.

use crate::kit::e2e_sim_common;
use crate::kit::study_fakes;

use e2e_sim_common::{records, tune, wait_no_processes_under};
use infertune::record::{Outcome, TrialRecord};
use std::path::Path;
use study_fakes::{options, FakeSampler, Rig, DEATH_CAUSE};

/// The study: the baseline never crashes; the enqueued config streams four times faster but
/// dies after six streams.
fn space(dir: &Path, port: u16) -> std::path::PathBuf {
    let server =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/children/fake_openai.py");
    let text = format!(
        r#"name: dies
engine:
  kind: custom
  model: tiny
launch:
  command: ["{server}", "--port", "{{port}}", "--model", "{{served_model_name}}", "--crash-after={{crash_after}}", "--token-delay={{token_delay}}"]
  port: {port}
  ready_timeout: 20s
  stop_grace: 1s
parameters:
  crash_after: {{type: choice, values: [0, 6], default: 0}}
  token_delay: {{type: choice, values: [0.004, 0.001], default: 0.004}}
probe:
  dataset: {{kind: random, input_len: 8, output_len: 16}}
  load: {{kind: closed, concurrency: 2, requests: 8}}
  warmup: 0
  ignore_eos: true
  timeout: 10s
objective:
  metric: output_throughput
search:
  sampler: random
  trials: 2
  revalidate_top: 0
  enqueue:
    - {{crash_after: 6, token_delay: 0.001}}
"#,
        server = server.display()
    );
    let path = dir.join("dies.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_server_killed_during_its_probe_is_crashed_and_never_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let output = tune(&space(tmp.path(), 18_620), &results, &[])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "tune failed: {log}");
    let dir = results.join("dies");
    let all = records(&dir);
    assert_eq!(all.len(), 2, "{all:?}");

    let mut csv = csv::Reader::from_path(dir.join("trials.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    let (status, detail) = (column("status"), column("detail"));
    assert_eq!(&rows[0][status], "feasible", "{rows:?}");
    assert_eq!(&rows[1][status], "crashed", "{rows:?}");
    let why = &rows[1][detail];
    assert!(
        why.contains("SIGKILL") && why.contains("an illegal memory access was encountered"),
        "the detail names the signal and the log's root cause: {why}"
    );

    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["trial"], 0, "the crashed trial won: {best}");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("crashed"),
        "the report says the trial crashed"
    );
    assert_eq!(wait_no_processes_under(tmp.path(), 5.0), Vec::<i32>::new());
}

#[test]
fn a_fake_server_found_dead_after_its_probe_is_crashed_whatever_the_probe_measured() {
    let tmp = tempfile::tempdir().unwrap();
    let space = study_fakes::space(7, 12);
    let mut rig = Rig::new(&space);
    rig.launcher.dies_above = Some(64);
    let mut sampler = FakeSampler { seed: 7 };
    let options = options(tmp.path().join("fake"), false, false);
    let result = infertune::study::run(&space, &mut sampler, rig.backends(), &options).unwrap();
    assert_eq!(
        rig.launcher.registry.live(),
        0,
        "a fake server was left running"
    );
    let launched =
        |r: &&TrialRecord| r.ready_s.is_some() && r.params["max_num_seqs"].as_i64() > Some(64);
    let died: Vec<&TrialRecord> = result.records.iter().filter(launched).collect();
    assert!(!died.is_empty(), "no config died: {:#?}", result.records);
    for r in died {
        let Outcome::Crashed { exit, message } = &r.outcome else {
            panic!("trial {} is {:?}, not crashed", r.id.number, r.outcome);
        };
        assert_eq!(exit, "killed by SIGSEGV (11)");
        assert_eq!(message, DEATH_CAUSE);
        assert_eq!((r.value, r.score), (None, None));
        assert!(r.is_config_failure(), "samplers must steer away from it");
        assert_eq!(
            infertune::export::detail(&r.outcome),
            format!("killed by SIGSEGV (11) while serving: {DEATH_CAUSE}")
        );
    }
    let winner = result.winner.expect("a config that survived won");
    assert!(winner.summary.params["max_num_seqs"].as_i64() <= Some(64));
}
