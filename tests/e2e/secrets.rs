//! Secrets of a space never reach a study's files or the terminal: a simulator study whose space
//! carries a token in `launch.env`, a `${VAR}` value and an `--api-key` in `extra_args`, and whose
//! failing trial echoes its argv (and whose servers log the token), leaves only `***` in the
//! records, views and logs, a `best.sh` that refers to variables, and owner-only files.

use crate::kit::e2e_sim_common;

use assert_cmd::Command;
use e2e_sim_common::{records, tune};
use infertune::record::Outcome;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const HF_TOKEN: &str = "hf_literal_token_value_123";
const API_KEY: &str = "sk-literal-api-key-456";
const AUTH: &str = "auth-from-environment-789";
const SECRETS: [&str; 3] = [HF_TOKEN, API_KEY, AUTH];

/// Between the engine and `infertune sim serve`: logs the token, fails like an argument parser
/// that echoes its argv for `--max-num-seqs 1`, and drops `--api-key` (the simulator has none).
/// No `${` in it: the space would expand that.
const WRAPPER: &str = r#"echo "INFO: token $HF_TOKEN auth $AUTH" >&2
case " $* " in *" --max-num-seqs 1 "*) echo "vllm serve: error: argument --max-num-seqs: too few (argv: $*)" >&2; exit 2;; esac
bin=$1; shift; n=$#; skip=0
while [ "$n" -gt 0 ]; do a=$1; shift; n=$((n-1)); if [ "$skip" = 1 ]; then skip=0; elif [ "$a" = --api-key ]; then skip=1; else set -- "$@" "$a"; fi; done
exec "$bin" "$@""#;

fn write_space(dir: &Path) -> PathBuf {
    let bin = assert_cmd::cargo::cargo_bin("infertune");
    let json = |s: &str| serde_json::to_string(s).unwrap();
    let text = format!(
        r#"name: secrets
engine: {{kind: sim, card: h100, model: qwen2.5-32b}}
launch:
  port: 18700
  ready_timeout: 20s
  stop_grace: 2s
  command: ["bash", "-c", {wrapper}, "wrapper", {bin}]
  env: {{HF_TOKEN: {HF_TOKEN}, AUTH: "${{E2E_SECRET_AUTH}}"}}
  extra_args: ["--time-scale", "0.1", "--startup-time", "1s", "--api-key", {API_KEY}]
parameters:
  max_model_len: {{type: const, value: 4096}}
  max_num_seqs: {{type: int, low: 1, high: 64, log: true, default: 32}}
probe:
  dataset: {{kind: random, input_len: 64, output_len: 8}}
  load: {{kind: closed, concurrency: 4, requests: 8}}
  timeout: 20s
  seed: 3
objective:
  metric: output_throughput
search:
  sampler: random
  trials: 2
  seed: 1
  revalidate_top: 0
  enqueue: [{{max_num_seqs: 1}}]
"#,
        wrapper = json(WRAPPER),
        bin = json(bin.to_str().unwrap()),
    );
    let path = dir.join("secrets.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn assert_no_secret(dir: &Path) {
    for file in files_under(dir) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        for secret in SECRETS {
            assert!(
                !text.contains(secret),
                "{} holds {secret}:\n{text}",
                file.display()
            );
        }
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn run_cli(args: &[&str]) -> String {
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .env("E2E_SECRET_AUTH", AUTH)
        .args(args)
        .assert()
        .success();
    String::from_utf8_lossy(&out.get_output().stdout).into_owned()
}

#[test]
fn a_space_with_secrets_leaves_none_in_the_study_or_on_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let space = write_space(tmp.path());
    let out = Command::from_std(tune(&space, tmp.path(), &[]))
        .env("E2E_SECRET_AUTH", AUTH)
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let dir = tmp.path().join("secrets");
    let all = records(&dir);
    let failed = all
        .iter()
        .find_map(|r| match &r.outcome {
            Outcome::Failed { message, .. } => Some(message.clone()),
            _ => None,
        })
        .expect("the trial with --max-num-seqs 1 fails");
    assert!(failed.contains("--api-key ***"), "{failed}");
    assert!(
        all.iter().any(|r| r.outcome == Outcome::Feasible),
        "{all:?}"
    );
    for secret in SECRETS {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{stdout}{stderr}"
        );
    }
    assert_no_secret(&dir);

    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["env"]["HF_TOKEN"], "***");
    assert_eq!(best["env"]["AUTH"], "***");
    let script = std::fs::read_to_string(dir.join("best.sh")).unwrap();
    for variable in ["HF_TOKEN", "E2E_SECRET_AUTH", "INFERTUNE_SECRET_API_KEY"] {
        let reference = format!("\"${{{variable}:?set {variable}}}\"");
        assert!(script.contains(&reference), "{reference} in\n{script}");
    }
    let log = std::fs::read_to_string(dir.join("trial-0/server.log")).unwrap();
    assert!(log.contains("token *** auth ***"), "{log}");

    assert_eq!(mode(&dir), 0o700);
    for name in [
        "journal.jsonl",
        "best.json",
        "trials.csv",
        "report.md",
        "report.html",
        "trial-0/launch.json",
        "trial-0/server.log",
    ] {
        assert_eq!(mode(&dir.join(name)), 0o600, "{name}");
    }
    assert_eq!(
        mode(&dir.join("best.sh")),
        0o700,
        "best.sh runs, for its owner only"
    );

    // Without a variable, best.sh stops before starting anything, naming what to set.
    let unset = std::process::Command::new("bash")
        .arg(dir.join("best.sh"))
        .env_remove("HF_TOKEN")
        .env("E2E_SECRET_AUTH", AUTH)
        .env("INFERTUNE_SECRET_API_KEY", API_KEY)
        .output()
        .unwrap();
    assert!(!unset.status.success());
    assert!(String::from_utf8_lossy(&unset.stderr).contains("set HF_TOKEN"));

    let dir_arg = dir.to_str().unwrap();
    let printed = run_cli(&["export", dir_arg]) + &run_cli(&["report", dir_arg]);
    for secret in SECRETS {
        assert!(!printed.contains(secret), "{printed}");
    }
    assert_no_secret(&dir);
}
