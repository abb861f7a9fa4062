//! Spaces checked against the engines' flag catalogues by `infertune check` and `tune`: a
//! flag the engine does not have, a value it does not accept, a deprecated or removed flag and
//! an unknown MindIE config path are refused before anything starts, at the parameter's line.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// A vLLM space (version `version`) with `parameters` (YAML lines under `parameters:`).
fn vllm_space(dir: &Path, version: &str, parameters: &str) -> PathBuf {
    let text = format!(
        "name: cat\nengine:\n  kind: vllm\n  version: \"{version}\"\n  model: m\nparameters:\n{parameters}\
         probe:\n  dataset: {{kind: random, input_len: 16, output_len: 8}}\n  load: {{kind: closed, concurrency: 1, requests: 2}}\n\
         objective:\n  metric: output_throughput\n"
    );
    let path = dir.join("space.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `infertune <command> --space SPACE`, with an empty catalogue cache.
fn run(command: &str, space: &Path, cache: &Path) -> (bool, String, String) {
    let mut cmd = Command::cargo_bin("infertune").unwrap();
    cmd.env("INFERTUNE_CACHE", cache)
        .current_dir(space.parent().unwrap())
        .args([command, "--space", space.to_str().unwrap()]);
    if command == "check" {
        cmd.args(["--samples", "50"]);
    } else {
        cmd.args(["--results", "results"]);
    }
    let out = cmd.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

fn refused(version: &str, parameters: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let space = vllm_space(dir.path(), version, parameters);
    let (ok, _, stderr) = run("check", &space, dir.path());
    assert!(!ok, "check accepted it: {stderr}");
    stderr
}

#[test]
fn a_misspelt_parameter_is_refused_with_did_you_mean_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::fs::read_to_string("search-spaces/vllm.yaml").unwrap();
    let line = 1 + shipped
        .lines()
        .position(|l| l.starts_with("  max_num_seqs:"))
        .unwrap();
    let space = dir.path().join("vllm.yaml");
    std::fs::write(
        &space,
        shipped.replace("  max_num_seqs:", "  max_num_seqz:"),
    )
    .unwrap();
    let (ok, stdout, stderr) = run("check", &space, dir.path());
    assert!(!ok, "{stdout}");
    let at = format!("vllm.yaml:{line}:3: parameter `max_num_seqz` is passed as `--max-num-seqz`");
    assert!(stderr.contains(&at), "no `{at}` in: {stderr}");
    assert!(
        stderr.contains("did you mean `max_num_seqs` (`--max-num-seqs`)?"),
        "{stderr}"
    );
    assert!(!stdout.contains("Example feasible configs"), "{stdout}");
    assert!(
        !stderr.contains("nearest"),
        "the shipped space names a version with a catalogue: {stderr}"
    );
}

#[test]
fn tune_refuses_the_same_space_before_any_launch() {
    let dir = tempfile::tempdir().unwrap();
    let space = vllm_space(
        dir.path(),
        "0.32.0",
        "  max_num_seqz: {type: int, low: 1, high: 8}\n",
    );
    let (ok, _, stderr) = run("tune", &space, dir.path());
    assert!(!ok);
    assert!(stderr.contains("space.yaml:7:3:"), "{stderr}");
    assert!(stderr.contains("did you mean `max_num_seqs`"), "{stderr}");
    assert!(
        !dir.path().join("results").exists(),
        "a study folder was made"
    );
}

#[test]
fn a_choice_the_engine_does_not_accept_is_refused() {
    let err = refused(
        "0.32.0",
        "  max_num_seqs: {type: int, low: 1, high: 8}\n  dtype: {type: choice, values: [auto, half, float8]}\n",
    );
    assert!(
        err.contains("space.yaml:8:3: parameter `dtype` can be `float8`"),
        "{err}"
    );
    assert!(
        err.contains("it accepts auto, bfloat16, float, float16, float32, half"),
        "{err}"
    );
}

#[test]
fn a_type_the_flag_does_not_take_is_refused() {
    let err = refused(
        "0.32.0",
        "  tensor_parallel_size: {type: float, low: 1, high: 2}\n",
    );
    assert!(err.contains("space.yaml:7:3: parameter `tensor_parallel_size` can be a float in [1, 2], but `--tensor-parallel-size` takes a whole number"), "{err}");
    let err = refused("0.32.0", "  max_num_seqs: {type: bool}\n");
    assert!(
        err.contains("parameter `max_num_seqs` is a bool, but `--max-num-seqs` takes a value"),
        "{err}"
    );
    let err = refused("0.32.0", "  disable_log_stats: {type: bool}\n");
    assert!(
        err.contains("can be false, which renders `--no-disable-log-stats`"),
        "{err}"
    );
}

#[test]
fn deprecated_and_removed_flags_are_refused_with_the_version() {
    let err = refused("0.32.0", "  disable_cascade_attn: {type: bool}\n");
    assert!(
        err.contains("is deprecated in vllm 0.32.0 (removed in 0.33.0)"),
        "{err}"
    );
    let err = refused("0.33.1", "  disable_cascade_attn: {type: bool}\n");
    assert!(err.contains("which vllm removed in 0.33.0"), "{err}");
}

#[test]
fn a_version_without_its_own_catalogue_uses_the_nearest_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let space = vllm_space(
        dir.path(),
        "0.11.0",
        "  max_num_seqs: {type: int, low: 1, high: 8}\n",
    );
    let (ok, stdout, stderr) = run("check", &space, dir.path());
    assert!(ok, "{stderr}");
    assert!(stderr.contains("warning: no flag catalogue for vllm 0.11.0; checking against the nearest, vllm 0.32.0 (shipped)"), "{stderr}");
    assert!(
        stdout.contains("Flag catalogue: vllm 0.32.0 (shipped)"),
        "{stdout}"
    );
}

#[test]
fn a_generated_catalogue_for_the_exact_version_wins_over_the_shipped_one() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("catalogues");
    std::fs::create_dir_all(&cache).unwrap();
    let mine = r#"{"engine": "vllm", "version": "0.11.0", "source": "vllm serve --help=all",
        "entries": [{"name": "--max-num-seqs", "takes": "value", "type": "int", "default": "256"}]}"#;
    std::fs::write(cache.join("vllm-0.11.0.json"), mine).unwrap();
    let space = vllm_space(
        dir.path(),
        "0.11.0",
        "  max_num_seqs: {type: int, low: 1, high: 512}\n",
    );
    let (ok, stdout, stderr) = run("check", &space, dir.path());
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("no flag catalogue"), "{stderr}");
    assert!(stdout.contains("Flag catalogue: vllm 0.11.0 ("), "{stdout}");
    // The baseline takes the engine's default from the catalogue where the space gives none.
    let row = stdout.lines().find(|l| l.contains("max_num_seqs")).unwrap();
    assert!(
        row.trim_end()
            .trim_end_matches('│')
            .trim_end()
            .ends_with("256"),
        "{row}"
    );
}

#[test]
fn an_unknown_mindie_config_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::fs::read_to_string("search-spaces/mindie.yaml").unwrap();
    let space = dir.path().join("mindie.yaml");
    let broken = shipped.replace(
        "ScheduleConfig.maxBatchSize,",
        "ScheduleConfig.maxBatchSise,",
    );
    assert_ne!(broken, shipped);
    std::fs::write(&space, broken).unwrap();
    let (ok, _, stderr) = run("check", &space, dir.path());
    assert!(!ok);
    assert!(stderr.contains("config.json `BackendConfig.ScheduleConfig.maxBatchSise`, which mindie 2.0.RC1 does not have; did you mean `BackendConfig.ScheduleConfig.maxBatchSize`?"), "{stderr}");
}

#[test]
fn a_store_true_switch_that_is_on_by_default_cannot_be_turned_off_by_false() {
    let dir = tempfile::tempdir().unwrap();
    let text = "name: cat\nengine: {kind: llamacpp, version: \"0.5.0-dev\", model: m.gguf}\nparameters:\n  \
                cont_batching: {type: bool, flag: --cont-batching}\nprobe:\n  \
                dataset: {kind: random, input_len: 16, output_len: 8}\n  \
                load: {kind: closed, concurrency: 1, requests: 2}\nobjective:\n  metric: output_throughput\n";
    let space = dir.path().join("space.yaml");
    std::fs::write(&space, text).unwrap();
    let (ok, _, stderr) = run("check", &space, dir.path());
    assert!(!ok);
    assert!(stderr.contains("space.yaml:4:3: parameter `cont_batching` can be false, which passes nothing and so leaves `--cont-batching` on"), "{stderr}");
    let fixed = text.replace("flag: --cont-batching", "flag: --no-cont-batching");
    std::fs::write(&space, fixed).unwrap();
    let (ok, _, stderr) = run("check", &space, dir.path());
    assert!(ok, "{stderr}");
}

#[test]
fn a_derived_parameter_is_checked_for_its_flag_but_not_its_values() {
    let ok = "  max_num_seqs: {type: int, low: 1, high: 8}\n  max_num_batched_tokens: {type: derived, expr: \"max_num_seqs * 512\"}\n";
    let dir = tempfile::tempdir().unwrap();
    let (accepted, _, stderr) = run("check", &vllm_space(dir.path(), "0.32.0", ok), dir.path());
    assert!(accepted, "{stderr}");
    let err = refused(
        "0.32.0",
        &ok.replace("max_num_batched_tokens", "max_num_batched_tokenz"),
    );
    assert!(err.contains("space.yaml:8:3: parameter `max_num_batched_tokenz` is passed as `--max-num-batched-tokenz`"), "{err}");
}
