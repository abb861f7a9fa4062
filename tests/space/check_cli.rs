//! `infertune check` end to end: the ready spaces load and have feasible configs; a space whose
//! every config an engine rule refuses fails with the rule named.

use assert_cmd::Command;
use predicates::prelude::*;

/// The machine-specific paths `vllm-cpu.yaml`, `vllm-cpu-realistic.yaml`, `llamacpp-cpu.yaml`,
/// `llamacpp-realistic.yaml` and `xinference-cpu.yaml` take from the environment (scripts/vllm-env.sh, llamacpp-env.sh
/// and xinference-env.sh export them); `check` starts nothing, so placeholders do for the
/// engines. The probe's tokenizer is read (a workload every trial would fail on is refused), so
/// the model folder holds a small word-level `tokenizer.json`.
fn vllm_cpu_env(model: &std::path::Path) -> [(&'static str, String); 10] {
    [
        ("INFERTUNE_VLLM_BIN", "/opt/vllm-cpu/bin/vllm".into()),
        ("INFERTUNE_VLLM_MODEL", model.display().to_string()),
        ("INFERTUNE_VLLM_MODEL_QWEN05", model.display().to_string()),
        ("VLLM_CACHE_ROOT", "/tmp/vllm-cache".into()),
        ("HF_HOME", "/tmp/hf-home".into()),
        (
            "INFERTUNE_LLAMACPP_BIN",
            "/opt/llamacpp/bin/llama-server".into(),
        ),
        (
            "INFERTUNE_LLAMACPP_MODEL_F16",
            "/opt/llamacpp/tiny-f16.gguf".into(),
        ),
        (
            "INFERTUNE_LLAMACPP_MODEL_Q8",
            "/opt/llamacpp/tiny-q8_0.gguf".into(),
        ),
        (
            "INFERTUNE_LLAMACPP_MODEL_SMOLLM2",
            "/opt/llamacpp/smollm2-135m-f16.gguf".into(),
        ),
        (
            "INFERTUNE_XINFERENCE_BIN",
            "/opt/xinference/bin/xinference-local".into(),
        ),
    ]
}

/// A folder with a `tokenizer.json` whose every token is one lowercase word.
fn word_level_model() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut vocab = serde_json::Map::new();
    vocab.insert("[UNK]".into(), 0.into());
    for (i, a) in ('a'..='z').enumerate() {
        for (j, b) in ('a'..='z').enumerate() {
            vocab.insert(format!("{a}{b}o"), (1 + i * 26 + j).into());
        }
    }
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    });
    std::fs::write(dir.path().join("tokenizer.json"), tokenizer.to_string()).unwrap();
    dir
}

fn check(space: &str, samples: &str) -> assert_cmd::assert::Assert {
    let model = word_level_model();
    // No catalogue generated on this machine takes the place of a shipped one.
    let cache = tempfile::tempdir().unwrap();
    Command::cargo_bin("infertune")
        .unwrap()
        .envs(vllm_cpu_env(model.path()))
        .env("INFERTUNE_CACHE", cache.path())
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
        "vllm",
        "vllm-cpu",
        "vllm-cpu-realistic",
        "sglang",
        "llamacpp",
        "llamacpp-cpu",
        "mindie",
        "xinference-cpu",
        "xinference",
        "demo-sim",
    ] {
        check(&format!("search-spaces/{space}.yaml"), "2000")
            .success()
            .stdout(predicate::str::contains("Feasible: "));
    }
}

#[test]
fn the_realistic_vllm_cpu_space_takes_the_cpu_backends_expert_settings_whole() {
    let model = word_level_model();
    let cache = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .envs(vllm_cpu_env(model.path()))
        .env("INFERTUNE_CACHE", cache.path())
        .args(["check", "--json", "--samples", "100", "--space"])
        .arg("search-spaces/vllm-cpu-realistic.yaml")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let expert = &report["expert"];
    assert_eq!(expert["dropped"], serde_json::json!([]), "{expert}");
    for param in ["omp_threads_bind", "reserved_cpus"] {
        let choice = expert["choices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["param"] == param)
            .unwrap_or_else(|| panic!("no expert choice for {param}: {expert}"));
        let why = choice["why"].as_str().unwrap();
        assert!(
            why.contains("vllm-project/vllm docs/getting_started/installation/cpu.md"),
            "{param}: {why}"
        );
    }
}

#[test]
fn check_names_the_flag_catalogue_of_every_ready_space() {
    let spaces = shipped_spaces(false);
    spaces.iter().for_each(|space| names_its_catalogue(space));
    assert!(spaces.len() >= 7, "only {} spaces", spaces.len());
}

#[test]
fn check_names_the_flag_catalogue_of_every_trace_replay_space() {
    let spaces = shipped_spaces(true);
    spaces.iter().for_each(|space| names_its_catalogue(space));
    assert!(spaces.len() >= 2, "only {} spaces", spaces.len());
}

/// The shipped spaces that replay a trace of the repository's data (`replay`), or the others.
fn shipped_spaces(replay: bool) -> Vec<std::path::PathBuf> {
    let mut spaces: Vec<_> = std::fs::read_dir("search-spaces")
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            text.contains("path: data/traces/") == replay
        })
        .collect();
    spaces.sort();
    spaces
}

/// `check` on `path` names the flag catalogue of its engine and says what the expert prior
/// runs first, or why it runs nothing.
fn names_its_catalogue(path: &std::path::Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let kind = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("kind: "))
        .map(|k| k.split_whitespace().next().unwrap_or_default().to_string())
        .unwrap();
    let expected = match kind.as_str() {
        "vllm" => "Flag catalogue: vllm 0.32.0 (shipped), 316 entries",
        "sglang" => "Flag catalogue: sglang 0.5.23 (shipped), 529 entries",
        "llamacpp" => "Flag catalogue: llamacpp 0.5.0-dev (shipped), 254 entries",
        "mindie" => "Flag catalogue: mindie 2.0.RC1 (shipped), 79 entries",
        "xinference" => "Flag catalogue: xinference 4.1.0 (shipped), 502 entries",
        "sim" => "Flag catalogue: none (infertune's own simulator)",
        other => panic!("{}: no expectation for engine `{other}`", path.display()),
    };
    check(path.to_str().unwrap(), "100")
        .success()
        .stdout(predicate::str::contains(expected))
        .stdout(predicate::str::is_match(r"(?m)^Expert config( \(search.prior: expert; run first after the baseline\)$|: none \(.+\)$)").unwrap());
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

#[test]
fn the_simulator_is_shown_without_a_rule_pack_or_a_version_guess() {
    let out = check("search-spaces/demo-sim.yaml", "100").success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let header = stdout.lines().next().unwrap_or_default();
    assert!(
        header.contains("engine sim (no rule pack), model qwen2.5-32b"),
        "{header}"
    );
    assert!(!stdout.contains("version unknown"), "{stdout}");
}
