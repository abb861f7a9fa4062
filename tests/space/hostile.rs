//! Hostile space files: what every trial of `tune` would fail on is refused by `check` at load
//! time, with the line to fix; nothing makes the loader panic, hang or read without bound.

use assert_cmd::Command;
use infertune::space::StudySpec;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const DEMO: &str = "search-spaces/demo-sim.yaml";

/// `search-spaces/demo-sim.yaml` with `from` replaced by `to`, written to `dir`.
fn variant(dir: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(DEMO).unwrap();
    assert!(
        text.contains(from),
        "demo-sim.yaml no longer holds `{from}`"
    );
    let path = dir.join(name);
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    path
}

/// Runs `infertune check` on `space`; returns its exit code and standard error.
fn check(space: &Path) -> (i32, String) {
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .args(["check", "--samples", "200", "--space"])
        .arg(space)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_refused(space: &Path, line: usize, parts: &[&str]) {
    let (code, stderr) = check(space);
    assert_eq!(code, 2, "check must refuse it: {stderr}");
    let at = format!("{}:{line}:", space.display());
    assert!(
        stderr.contains(&at),
        "the error must point at line {line}: {stderr}"
    );
    for part in parts {
        assert!(stderr.contains(part), "`{part}` missing from: {stderr}");
    }
}

#[test]
fn check_refuses_what_every_trial_would_fail_on() {
    let dir = tempfile::tempdir().unwrap();
    let port = variant(dir.path(), "port.yaml", "port: 8200", "port: 0");
    assert_refused(&port, 18, &["launch.port", "1 to 65535"]);
    let requests = variant(dir.path(), "requests.yaml", "requests: 120", "requests: 0");
    assert_refused(&requests, 36, &["probe", "more than zero"]);
    let ratio = variant(
        dir.path(),
        "ratio.yaml",
        "range_ratio: 0.2",
        "range_ratio: -3",
    );
    assert_refused(&ratio, 36, &["range_ratio", "[0, 1)"]);
    let version = variant(
        dir.path(),
        "version.yaml",
        "kind: sim",
        "kind: sim\n  version: banana",
    );
    assert_refused(&version, 15, &["engine.version `banana`", "not a version"]);
    let sampler = variant(dir.path(), "sampler.yaml", "sampler: tpe", "sampler: tpee");
    let (code, stderr) = check(&sampler);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("unknown sampler `tpee`"), "{stderr}");
}

#[test]
fn absurd_durations_are_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let huge = variant(
        dir.path(),
        "huge.yaml",
        "ready_timeout: 30s",
        "ready_timeout: 18446744073709551615s",
    );
    let err = StudySpec::load(&huge, infertune::engine::rule_pack)
        .unwrap_err()
        .to_string();
    assert!(err.contains(":19:") && err.contains("longer than"), "{err}");
    let probe = variant(
        dir.path(),
        "probe.yaml",
        "\n  timeout: 30s",
        "\n  timeout: 9999999999s",
    );
    let err = StudySpec::load(&probe, infertune::engine::rule_pack)
        .unwrap_err()
        .to_string();
    assert!(err.contains("timeout is longer than"), "{err}");
}

#[test]
fn huge_expressions_are_refused_quickly_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    // An error past column 65,535 used to panic inside the CEL parser.
    let far = format!("{} &&", "max_num_seqs > 1 || ".repeat(4000));
    let space = variant(
        dir.path(),
        "far.yaml",
        "expr: enable_chunked_prefill || max_num_batched_tokens >= max_model_len",
        &format!("expr: \"{far}\""),
    );
    let err = StudySpec::load(&space, infertune::engine::rule_pack)
        .unwrap_err()
        .to_string();
    assert!(err.contains("characters long"), "{err}");
    // 20,000 terms took over a minute to check.
    let terms = vec!["max_num_seqs"; 20_000].join(" + ");
    let space = variant(
        dir.path(),
        "terms.yaml",
        "expr: enable_chunked_prefill || max_num_batched_tokens >= max_model_len",
        &format!("expr: \"{terms} > 0\""),
    );
    let started = Instant::now();
    let err = StudySpec::load(&space, infertune::engine::rule_pack)
        .unwrap_err()
        .to_string();
    assert!(err.contains("characters long"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_fifo_or_device_as_the_space_is_refused_without_reading() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("space.yaml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    for path in [fifo.as_path(), Path::new("/dev/zero")] {
        let err = StudySpec::load(path, infertune::engine::rule_pack)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }
    let big = dir.path().join("big.yaml");
    std::fs::write(&big, "#".repeat(2 * 1024 * 1024)).unwrap();
    let err = StudySpec::load(&big, infertune::engine::rule_pack)
        .unwrap_err()
        .to_string();
    assert!(err.contains("larger than the limit"), "{err}");
}

#[test]
fn a_fifo_as_a_dataset_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("prompts.jsonl");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let space = variant(
        dir.path(),
        "jsonl.yaml",
        "dataset: {kind: random, input_len: 512, output_len: 128, range_ratio: 0.2}",
        &format!(
            "dataset: {{kind: jsonl, path: {}, output_len: 16}}",
            fifo.display()
        ),
    );
    let err = StudySpec::load(&space, infertune::engine::rule_pack)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a regular file"), "{err}");
}
