//! An upgrade in the middle of a night: the binary a study runs from is replaced by another
//! program while the study runs; the simulator's later trials still start (from the running
//! binary's own file), and none fails to start.

use crate::kit::e2e_sim_common::{
    processes_under, records, records_so_far, space_with_port, wait_while_running, STUDY,
};
use infertune::record::Outcome;
use std::os::unix::fs::PermissionsExt;

#[test]
fn replacing_the_binary_mid_study_keeps_simulator_trials_starting() {
    let tmp = tempfile::tempdir().unwrap();
    let (bin, results) = (tmp.path().join("bin"), tmp.path().join("results"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&results).unwrap();
    let exe = bin.join("infertune");
    std::fs::copy(assert_cmd::cargo::cargo_bin("infertune"), &exe).unwrap();
    let space = space_with_port(tmp.path(), 18680);
    let log = tmp.path().join("tune.log");
    let mut tuner = std::process::Command::new(&exe)
        .args(["tune", "--space"])
        .arg(&space)
        .arg("--results")
        .arg(&results)
        .args(["--trials", "4"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let study = results.join(STUDY);
    let first = wait_while_running(&mut tuner, || !records_so_far(&study).is_empty());
    // The upgrade: another program renamed over the path (a running binary cannot be written).
    let upgrade = bin.join("infertune.new");
    std::fs::write(
        &upgrade,
        "#!/bin/sh\necho 'not the binary the study started' >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&upgrade, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&upgrade, &exe).unwrap();
    let before = records_so_far(&study).len();
    let status = tuner.wait().unwrap();
    assert!(
        first,
        "the study ended before its first trial was journaled"
    );
    assert!(
        status.success(),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );

    let done = records(&study);
    let later = &done[before..];
    let unstarted: Vec<_> = later
        .iter()
        .filter(|r| match &r.outcome {
            Outcome::Failed { message, .. } => {
                message.contains("cannot start") || message.contains("not the binary")
            }
            _ => false,
        })
        .collect();
    assert!(
        unstarted.is_empty(),
        "trials failed to start: {unstarted:?}"
    );
    assert!(
        later.iter().any(|r| r.ready_s.is_some()),
        "no server came up after the upgrade: {later:?}"
    );
    assert!(processes_under(&results).is_empty());
}
