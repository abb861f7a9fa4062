//! For real engines a `numa` value becomes a `numactl …` prefix: in the launch the supervisor
//! runs and in the exported `best.sh`. Only one test lives in this binary because it changes
//! `PATH` (to put a stand-in `numactl` on it), which no other test may observe.

use infertune::engine::{for_kind, Slot};
use infertune::export::BEST_SH;
use infertune::record::{Outcome, Params, TrialRecord, Value};
use infertune::space::StudySpec;
use infertune::study::export::Exporter;
use infertune::study::journal::StudyMeta;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const SPACE: &str = r#"
name: numa-vllm
engine: {kind: vllm, version: "0.11.0", model: Qwen/Qwen2.5-7B-Instruct}
parameters:
  numa:         {type: numa, candidates: ["none", "-N 0 -m 0", "-N 0 --preferred=0"]}
  max_num_seqs: {type: int, low: 8, high: 256}
probe:
  dataset: {kind: random, input_len: 64, output_len: 16}
  load: {kind: closed, concurrency: 4, requests: 8}
objective:
  metric: output_throughput
"#;

fn params(numa: &str) -> Params {
    Params::from([
        ("numa".to_string(), Value::Str(numa.into())),
        ("max_num_seqs".to_string(), Value::Int(64)),
    ])
}

fn winner(params: Params) -> TrialRecord {
    TrialRecord {
        metrics: [("output_throughput".to_string(), 100.0)].into(),
        value: Some(100.0),
        score: Some(100.0),
        ready_s: Some(1.0),
        wall_s: 2.0,
        ..TrialRecord::new(0, params, Outcome::Feasible)
    }
}

fn stand_in_numactl(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let exe = dir.join("numactl");
    std::fs::write(&exe, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_numa_binding_prefixes_the_launch_and_the_exported_script_with_numactl() {
    let tmp = tempfile::tempdir().unwrap();
    let space_file = tmp.path().join("space.yaml");
    std::fs::write(&space_file, SPACE).unwrap();
    let bin = tmp.path().join("bin");
    stand_in_numactl(&bin);
    let old_path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var("PATH", format!("{}:{old_path}", bin.display()));

    let space = StudySpec::load(&space_file, infertune::engine::rule_pack).unwrap();
    let engine = for_kind(space.engine.kind);
    let slot = Slot {
        port: 8000,
        devices: Vec::new(),
        extra_ports: Vec::new(),
        workdir: tmp.path().join("trial-0"),
    };
    let spec = engine
        .launch_spec(&space, &params("-N 0 -m 0"), &slot)
        .unwrap();
    assert_eq!(spec.program, "numactl");
    assert_eq!(spec.args[..6], ["-N", "0", "-m", "0", "vllm", "serve"]);
    assert!(!spec.args.iter().any(|a| a.contains("numa")), "{spec:?}");

    let preferred = engine
        .launch_spec(&space, &params("-N 0 --preferred=0"), &slot)
        .unwrap();
    assert_eq!(preferred.args[..3], ["-N", "0", "--preferred=0"]);

    let unbound = engine.launch_spec(&space, &params("none"), &slot).unwrap();
    assert_eq!(unbound.program, "vllm");

    let study = tmp.path().join("study");
    std::fs::create_dir_all(&study).unwrap();
    let meta = StudyMeta {
        format: infertune::study::journal::STUDY_FORMAT,
        name: "numa-vllm".into(),
        space_origin: space_file.display().to_string(),
        space_fingerprint: space.fingerprint(),
        seed: 0,
        sampler: "tpe".into(),
        engine: space.engine.kind,
        objective: space.objective.clone(),
        warm_start: Vec::new(),
        verdict: space.search.verdict_target(),
    };
    let exported = Exporter::new(&space, engine, &meta, &study)
        .write(&[winner(params("-N 0 -m 0"))])
        .unwrap();
    assert!(exported.is_some());
    let script = std::fs::read_to_string(study.join(BEST_SH)).unwrap();
    let exec = script.lines().last().unwrap();
    let words = shlex::split(exec).unwrap();
    let at = words.iter().position(|w| w == "numactl").expect(exec);
    assert_eq!(
        words[at..at + 7],
        ["numactl", "-N", "0", "-m", "0", "vllm", "serve"],
        "{exec}"
    );

    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::env::set_var("PATH", &empty);
    let err = engine
        .launch_spec(&space, &params("-N 0 -m 0"), &slot)
        .unwrap_err()
        .to_string();
    std::env::set_var("PATH", old_path);
    assert!(err.contains("numactl is not on PATH"), "{err}");
}
