//! `infertune topo` end to end: on this machine and on a fixture root.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;
use std::path::Path;

fn infertune() -> Command {
    Command::cargo_bin("infertune").unwrap()
}

fn json_of(cmd: &mut Command) -> Value {
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).expect("topo --json prints JSON")
}

#[test]
fn topo_json_runs_on_this_machine() {
    let report = json_of(infertune().args(["topo", "--json"]));
    let nodes = report["topology"]["nodes"].as_array().unwrap();
    assert!(!nodes.is_empty(), "{report}");
    assert!(nodes[0]["cpus"].as_array().is_some_and(|c| !c.is_empty()));
    assert!(report["topology"]["host"]["logical_cpus"].as_u64().unwrap() >= 1);
    let first = &report["candidates"][0]["candidates"]["bindings"][0];
    assert_eq!(
        first["args"],
        serde_json::json!([]),
        "none comes first: {report}"
    );
}

#[test]
fn topo_tables_run_on_this_machine() {
    infertune()
        .arg("topo")
        .assert()
        .success()
        .stdout(contains("NUMA nodes:"))
        .stdout(contains("Binding candidates"));
}

#[test]
fn topo_reads_a_captured_host_with_root() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topo/eight-node");
    let report = json_of(infertune().args(["topo", "--json", "--root"]).arg(&root));
    let nodes: Vec<u64> = report["topology"]["accelerators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["numa_node"].as_u64().unwrap())
        .collect();
    assert_eq!(nodes, [0, 2, 4, 6]);
    let device3 = &report["candidates"][3];
    assert_eq!(device3["device"], 3);
    assert_eq!(
        device3["candidates"]["bindings"][1]["args"],
        serde_json::json!(["-N", "6", "-m", "6"])
    );
    infertune()
        .args(["topo", "--root"])
        .arg(&root)
        .assert()
        .success()
        .stdout(contains("MXC500"))
        .stdout(contains("-N 6,3 --interleave=6,3"));
}

#[test]
fn a_missing_root_is_a_clear_error() {
    infertune()
        .args(["topo", "--root", "/no/such/host-capture"])
        .assert()
        .code(2)
        .stderr(contains("--root /no/such/host-capture: not a folder"));
}
