//! The twin prior is the default where it applies: a real engine the twin models, with a card
//! and a model it can build. Elsewhere the default is the expert prior, and `check` (text and
//! `--json`) says why.

use assert_cmd::Command;
use serde_json::Value;

/// A vLLM space on `card` (none: no `engine.card`), with `prior` as `search.prior` if given.
fn vllm_space(card: Option<&str>, prior: Option<&str>) -> String {
    let card = card.map(|c| format!("  card: {c}\n")).unwrap_or_default();
    let search = prior
        .map(|p| format!("search:\n  prior: {p}\n"))
        .unwrap_or_default();
    format!(
        "name: vllm-twin-default\nengine:\n  kind: vllm\n  version: \"0.32.0\"\n{card}  \
         model: qwen2.5-7b\nlaunch:\n  port: 8000\nparameters:\n  max_num_seqs: {{type: int, \
         low: 16, high: 512, log: true, default: 256}}\n  max_num_batched_tokens: {{type: int, \
         low: 1024, high: 16384, log: true, default: 8192}}\nprobe:\n  dataset: {{kind: random, \
         input_len: 512, output_len: 128}}\n  load: {{kind: closed, concurrency: 64, requests: \
         256}}\nobjective:\n  metric: output_throughput\n  subject_to: [\"ttft:p99<=2s\"]\n{search}"
    )
}

/// `check --json`'s `twin` object for a space of `text`.
fn twin_of(text: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("space.yaml");
    std::fs::write(&path, text).unwrap();
    twin_of_file(&path)
}

fn twin_of_file(path: &std::path::Path) -> Value {
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .args(["check", "--json", "--samples", "200", "--space"])
        .arg(path)
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    json["twin"].clone()
}

#[test]
fn a_vllm_space_with_a_card_gets_the_twin_by_default() {
    let twin = twin_of(&vllm_space(Some("H100"), None));
    assert_eq!(twin["applies"], true, "{twin:#}");
    assert!(twin["says"].as_str().unwrap().contains("the default here"));
    assert_eq!(twin["evaluated"], 48);
    assert!(!twin["first"].as_array().unwrap().is_empty(), "{twin:#}");
}

#[test]
fn without_a_card_or_when_asked_for_the_expert_the_default_is_not_the_twin() {
    let twin = twin_of(&vllm_space(None, None));
    assert_eq!(twin["applies"], false);
    let says = twin["says"].as_str().unwrap();
    assert!(says.contains("not by default here"), "{says}");
    assert!(says.contains("engine.card"), "{says}");
    assert!(twin["first"].is_null());

    let expert = twin_of(&vllm_space(Some("H100"), Some("expert")));
    assert_eq!(expert["applies"], false);
    assert!(expert["says"].as_str().unwrap().contains("would apply"));
}

#[test]
fn a_study_of_the_simulator_or_of_llamacpp_gets_the_expert_prior_and_check_says_why() {
    let root = env!("CARGO_MANIFEST_DIR");
    let sim = twin_of_file(&std::path::Path::new(root).join("search-spaces/demo-sim.yaml"));
    assert_eq!(sim["applies"], false);
    assert!(
        sim["says"].as_str().unwrap().contains("the twin itself"),
        "{sim:#}"
    );
    let llamacpp = twin_of_file(&std::path::Path::new(root).join("search-spaces/llamacpp.yaml"));
    assert_eq!(llamacpp["applies"], false);
    assert!(
        llamacpp["says"].as_str().unwrap().contains("not llamacpp"),
        "{llamacpp:#}"
    );
}
