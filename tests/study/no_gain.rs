//! A study where no config beats the defaults says so in words, on the terminal and in the
//! report: the simulated MXC500 host serves slowest when bound away from its accelerators'
//! node, so the unbound baseline wins.

use assert_cmd::Command;

const SPACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/search-spaces/demo-numa-sim.yaml"
);

#[test]
fn a_study_the_defaults_win_says_tuning_did_not_help() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(SPACE).unwrap();
    let remote_only = text
        .replace(
            r#"candidates: ["none", "-N 0 -m 0", "-N 0-3 -m 0-3", "-N 0,2,4,6 -m 0,2,4,6"]"#,
            r#"candidates: ["none", "-N 1 -m 1", "-N 0,2,4,6 -m 0,2,4,6"]"#,
        )
        .replace(
            "max_num_seqs: {type: choice, values: [16, 32], default: 32}",
            "max_num_seqs: {type: const, value: 32}",
        )
        .replace("port: 8230", "port: 18710")
        .replace("trials: 8", "trials: 3");
    assert!(
        text != remote_only && remote_only.contains("18710") && remote_only.contains("-N 1 -m 1")
    );
    let space = tmp.path().join("remote.yaml");
    std::fs::write(&space, remote_only).unwrap();
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .args(["tune", "--space"])
        .arg(&space)
        .arg("--results")
        .arg(tmp.path())
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = "Tuning did not help here";
    assert!(stdout.contains(said), "{stdout}");
    let report = std::fs::read_to_string(tmp.path().join("demo-numa-sim/report.md")).unwrap();
    assert!(report.contains(said), "{report}");
}
