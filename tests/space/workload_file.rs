//! A workload file (`bench --workload`, `sim eval --workload`) is read as a space's `probe:`
//! section is: the same `${NAME}` expansion, the same errors.

use assert_cmd::Command;
use infertune::space::{load_workload, StudySpec};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A probe naming its tokenizer through `${var}`, as `search-spaces/vllm-cpu.yaml` does.
fn probe(var: &str) -> String {
    format!(
        "api: completions\n\
         dataset:\n  kind: random\n  input_len: 128\n  output_len: 64\n  \
         tokenizer: ${{{var}}}/tokenizer.json\n\
         load: {{kind: closed, concurrency: 2, requests: 4}}\n\
         seed: 1\n"
    )
}

/// The workload file of `probe(var)` and a space holding the same probe, written to `dir`.
fn files(dir: &Path, var: &str) -> (PathBuf, PathBuf) {
    let workload = dir.join("workload.yaml");
    std::fs::write(&workload, probe(var)).unwrap();
    let indented: String = probe(var).lines().map(|l| format!("  {l}\n")).collect();
    let space = dir.join("space.yaml");
    std::fs::write(
        &space,
        format!(
            "engine:\n  kind: vllm\n  model: m\n\
             launch:\n  command: [vllm, serve]\n\
             parameters:\n  max_num_seqs: {{type: int, low: 8, high: 512}}\n\
             probe:\n{indented}\
             objective:\n  metric: output_throughput\n"
        ),
    )
    .unwrap();
    (workload, space)
}

/// A word-level tokenizer of three words, the smallest the random dataset builds prompts from.
const TOKENIZER: &str = r#"{"version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [], "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
  "post_processor": null, "decoder": null,
  "model": {"type": "WordLevel", "unk_token": "[UNK]",
            "vocab": {"alpha": 0, "bravo": 1, "charlie": 2, "[UNK]": 3}}}"#;

#[test]
fn a_workload_file_naming_a_variable_reads_as_the_spaces_probe() {
    let model = tempfile::tempdir().unwrap();
    std::fs::write(model.path().join("tokenizer.json"), TOKENIZER).unwrap();
    std::env::set_var("INFERTUNE_TEST_WORKLOAD_MODEL", model.path());
    let dir = tempfile::tempdir().unwrap();
    let (workload, space) = files(dir.path(), "INFERTUNE_TEST_WORKLOAD_MODEL");
    let read = load_workload(&workload).unwrap();
    let infertune::probe::DatasetSpec::Random { tokenizer, .. } = &read.dataset else {
        panic!("a random dataset: {:?}", read.dataset);
    };
    assert_eq!(
        tokenizer.as_deref(),
        Some(model.path().join("tokenizer.json").as_path())
    );
    let space = StudySpec::load(&space, infertune::engine::rule_pack).unwrap();
    assert_eq!(read, space.probe);
}

#[test]
fn an_unset_variable_in_a_workload_file_gets_the_spaces_error() {
    let var = "INFERTUNE_TEST_WORKLOAD_SURELY_UNSET";
    let dir = tempfile::tempdir().unwrap();
    let (workload, space) = files(dir.path(), var);
    let from_workload = load_workload(&workload).unwrap_err().to_string();
    let from_space = StudySpec::load(&space, infertune::engine::rule_pack)
        .unwrap_err()
        .to_string();
    let what = format!("environment variable `{var}` (used as `${{{var}}}`) is not set");
    for message in [&from_workload, &from_space] {
        assert!(message.contains(&what), "`{what}` missing from: {message}");
    }
    let reason = |m: &str| m.split_once(&what).unwrap().1.to_string();
    assert_eq!(reason(&from_workload), reason(&from_space));
    assert!(
        from_workload.starts_with(&format!("{}:", workload.display())),
        "the workload file is named: {from_workload}"
    );
    assert!(
        from_workload.contains("dataset.tokenizer"),
        "{from_workload}"
    );
}

#[test]
fn bench_refuses_a_workload_file_with_an_unset_variable_before_sending() {
    let var = "INFERTUNE_TEST_WORKLOAD_SURELY_UNSET";
    let dir = tempfile::tempdir().unwrap();
    let (workload, _) = files(dir.path(), var);
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .args(["bench", "--url", "http://127.0.0.1:9", "--model", "m"])
        .arg("--workload")
        .arg(&workload)
        .env_remove(var)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "bench must refuse it: {stderr}");
    assert!(
        stderr.contains(&format!("`{var}` (used as `${{{var}}}`) is not set")),
        "{stderr}"
    );
}
