//! `infertune check` end to end: the ready spaces load and have feasible configs; a space whose
//! every config an engine rule refuses fails with the rule named.

use assert_cmd::Command;
use predicates::prelude::*;

/// The machine-specific paths `vllm-cpu.yaml` takes from the environment (scripts/vllm-env.sh
/// exports them); `check` starts nothing, so placeholders do.
const VLLM_CPU_ENV: [(&str, &str); 4] = [
    ("INFERTUNE_VLLM_BIN", "/opt/vllm-cpu/bin/vllm"),
    ("INFERTUNE_VLLM_MODEL", "/opt/models/llama-tiny-seed0"),
    ("VLLM_CACHE_ROOT", "/tmp/vllm-cache"),
    ("HF_HOME", "/tmp/hf-home"),
];

fn check(space: &str, samples: &str) -> assert_cmd::assert::Assert {
    Command::cargo_bin("infertune")
        .unwrap()
        .envs(VLLM_CPU_ENV)
        .args([
            "check",
            "--space",
            space,
            "--samples",
            samples,
            "--seed",
            "3",
        ])
        .assert()
}

#[test]
fn vllm_space_prints_the_feasible_fraction_and_example_launches() {
    check("search-spaces/vllm.yaml", "10000")
        .success()
        .stdout(predicate::str::contains("of 10,000 sampled configs ("))
        .stdout(predicate::str::contains(
            "vllm.batched_tokens_ge_max_model_len",
        ))
        .stdout(predicate::str::contains("max_num_seqs"))
        .stdout(predicate::str::contains("Example feasible configs"))
        .stdout(
            predicate::str::is_match(r"(?m)^\s+(\$ |launch command not rendered .*params: )")
                .unwrap(),
        );
}

#[test]
fn every_ready_space_passes_check() {
    for space in [
        "vllm", "vllm-cpu", "sglang", "llamacpp", "mindie", "demo-sim",
    ] {
        check(&format!("search-spaces/{space}.yaml"), "2000")
            .success()
            .stdout(predicate::str::contains("Feasible: "));
    }
}

#[test]
fn no_feasible_config_fails_naming_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blocked.yaml");
    std::fs::write(
        &path,
        "engine: {kind: vllm, version: \"0.11.0\", model: m}
parameters:
  max_num_seqs: {type: int, low: 512, high: 1024}
  max_num_batched_tokens: {type: int, low: 8, high: 256}
probe:
  dataset: {kind: random, input_len: 8, output_len: 8}
  load: {kind: closed, concurrency: 1, requests: 1}
objective: {metric: output_throughput}
",
    )
    .unwrap();
    check(path.to_str().unwrap(), "500")
        .code(1)
        .stdout(predicate::str::contains("Feasible: 0 of 500"))
        .stderr(predicate::str::contains(
            "`vllm.batched_tokens_ge_max_num_seqs` rejected 500",
        ));
}

#[test]
fn malformed_space_exits_with_a_located_error() {
    check("tests/fixtures/spaces/low_gt_high.yaml", "10")
        .code(2)
        .stderr(predicate::str::contains(
            "tests/fixtures/spaces/low_gt_high.yaml:5:45:",
        ));
}
