//! A real `infertune tune` over a `numa` parameter, against simulator servers spawned by the
//! supervisor: the simulated MXC500 host (seed 003's eight-node layout, accelerators on node 0)
//! rewards binding to the accelerators' node, and the study must find that binding.

use assert_cmd::Command;
use std::path::Path;

const SPACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/search-spaces/demo-numa-sim.yaml"
);
const LOCAL: &str = "-N 0 -m 0";

#[test]
fn a_simulator_study_picks_the_accelerator_local_binding() {
    let results = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .args(["tune", "--space", SPACE, "--results"])
        .arg(results.path())
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tune failed:\n{stdout}\n{stderr}");
    let study = results.path().join("demo-numa-sim");

    let tried: Vec<String> = journal(&study)
        .iter()
        .filter(|t| t["kind"] != "repeat")
        .filter_map(|t| t["params"]["numa"].as_str().map(String::from))
        .collect();
    for candidate in ["none", LOCAL, "-N 0-3 -m 0-3", "-N 0,2,4,6 -m 0,2,4,6"] {
        assert!(
            tried.iter().any(|t| t == candidate),
            "`{candidate}` never tried: {tried:?}"
        );
    }

    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(study.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["params"]["numa"], LOCAL, "best.json: {best:#}");
    let script = std::fs::read_to_string(study.join("best.sh")).unwrap();
    let exec = shlex::split(script.lines().last().unwrap()).unwrap();
    let flag = exec.iter().position(|w| w == "--numa").expect(&script);
    assert_eq!(exec[flag + 1], LOCAL, "{script}");
}

/// The study's trial records.
fn journal(study: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(study.join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}
