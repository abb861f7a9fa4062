//! `infertune plan` on the simulator: the ranked plans, the chosen plan's exports (a Kubernetes
//! Deployment of its replicas), and `--verify` running the best plans on simulator servers.

use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::Command;

const SPACE: &str = "tests/fixtures/spaces/plan-sim.yaml";

/// `infertune plan` of the fixture space writing into `out`, plus `args`; its stdout.
fn plan(out: &Path, args: &[&str]) -> String {
    let output = Command::new(assert_cmd::cargo::cargo_bin("infertune"))
        .args(["plan", "--space", SPACE, "--out"])
        .arg(out)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The chosen plan's exports of a plan of tensor-parallel size 2 filling 8 GPUs, in `dir`.
pub fn exported_plan(dir: &Path) -> PathBuf {
    let out = dir.join("plan");
    plan(
        &out,
        &[
            "--gpus",
            "8",
            "--tp",
            "2",
            "--fill-gpus",
            "--concurrency",
            "64",
            "--draws",
            "4",
        ],
    );
    out
}

#[test]
fn the_chosen_plan_exports_a_deployment_of_its_replicas() {
    let tmp = tempfile::tempdir().unwrap();
    let out = exported_plan(tmp.path());
    let manifests = std::fs::read_to_string(out.join("kubernetes.yaml")).unwrap();
    let deployment: Json = serde_saphyr::from_str(
        manifests
            .split("\n---")
            .find(|d| d.contains("kind: Deployment"))
            .expect("a Deployment document"),
    )
    .unwrap();
    assert_eq!(deployment["spec"]["replicas"], 4, "{manifests}");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["resources"]["limits"]["nvidia.com/gpu"], "2",
        "{manifests}"
    );
    let config: Json =
        serde_saphyr::from_str(&std::fs::read_to_string(out.join("vllm-config.yaml")).unwrap())
            .unwrap();
    assert_eq!(config["tensor-parallel-size"], 2, "{config}");
    assert_eq!(config["model"], "Qwen/Qwen2.5-7B-Instruct", "{config}");
    let best = std::fs::read_to_string(out.join("best.sh")).unwrap();
    assert!(best.contains("--tensor-parallel-size 2"), "{best}");
    assert!(!best.contains("time-scale"), "{best}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Ranked plans"), "{report}");
    assert!(out.join("plots/pareto.svg").is_file());
}

#[test]
fn rankings_and_slos_change_the_first_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let first_row = |stdout: &str| -> Vec<String> {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("1 "))
            .unwrap_or_else(|| panic!("no first plan in:\n{stdout}"));
        line.split_whitespace().map(String::from).collect()
    };
    let base = ["--gpus", "4", "--concurrency", "32", "--draws", "2"];
    let by_gpus = plan(
        &tmp.path().join("a"),
        &[&base[..], &["--rank", "gpus"]].concat(),
    );
    // Fewest GPUs: one server of one GPU carries the 32 clients with no SLO to meet.
    assert_eq!(first_row(&by_gpus)[1..4], ["1", "1", "1"], "{by_gpus}");
    let cost = plan(
        &tmp.path().join("b"),
        &[
            &base[..],
            &["--rank", "cost", "--price-per-gpu-hour", "2.5"],
        ]
        .concat(),
    );
    let cost_row = first_row(&cost);
    let per_gpu: f64 = cost_row[4].parse().unwrap();
    let per_million: f64 = cost_row[7].parse().unwrap();
    assert!(
        (per_million - 2.5 / (per_gpu * 3600.0) * 1e6).abs() / per_million < 0.01,
        "{cost}"
    );
    // A per-user floor that only a lightly loaded server meets moves the first plan to more
    // replicas than the fewest-GPU one.
    let strict = plan(
        &tmp.path().join("c"),
        &[&base[..], &["--rank", "gpus", "--min-user-tps", "150"]].concat(),
    );
    let strict_row = first_row(&strict);
    assert_eq!(strict_row[8], "yes", "{strict}");
    let gpus: u32 = strict_row[3].parse().unwrap();
    assert!(gpus > 1, "{strict}");
}

#[test]
fn verify_runs_the_best_plans_on_simulator_servers_and_reranks_them() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("verified");
    let stdout = plan(
        &out,
        &[
            "--gpus",
            "2",
            "--concurrency",
            "16",
            "--draws",
            "2",
            "--verify",
            "2",
        ],
    );
    let verified: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("verified on the engine"))
        .skip(1)
        .take_while(|l| l.contains("twin's #"))
        .collect();
    assert_eq!(verified.len(), 2, "{stdout}");
    for line in &verified {
        assert!(line.contains("tok/s per GPU"), "measured: {line}");
        assert!(line.contains("twin error: tokens/s per GPU "), "{line}");
    }
    // The measured ranks are a re-ranking of the twin's first two.
    let mut twin_ranks: Vec<&str> = verified
        .iter()
        .map(|l| {
            l.split("twin's #")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
        })
        .collect();
    twin_ranks.sort_unstable();
    assert_eq!(twin_ranks, ["1", "2"], "{stdout}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Verified on the engine"), "{report}");
    // Each verified plan ran as a trial of its own, its server's log kept.
    for n in [1, 2] {
        assert!(out.join(format!("verify-{n}")).is_dir(), "verify-{n}");
    }
}
