//! `tune --warm-start` on the simulator: a study seeded with an earlier simulator study says
//! what it reused, on the terminal and in its report and `best.json`; a sampler that cannot
//! learn from it is refused before anything starts.

use crate::kit::e2e_sim_common::{space_with_port, tune};

use assert_cmd::Command;
use predicates::str::contains;
use std::time::Duration;

#[test]
fn a_simulator_study_warm_started_from_another_names_it_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let space = space_with_port(tmp.path(), 18_900);
    // The earlier study: the baseline and the fixture's three enqueued configs (one refused,
    // one OOM at start, one too slow).
    Command::from_std(tune(
        &space,
        &results,
        &["--study", "earlier", "--trials", "4", "--sampler", "random"],
    ))
    .timeout(Duration::from_secs(120))
    .assert()
    .success();
    let earlier = results.join("earlier");
    let earlier_arg = earlier.to_str().unwrap();

    let later_with = |sampler: &str| {
        Command::from_std(tune(
            &space,
            &results,
            &[
                "--study",
                "later",
                "--trials",
                "4",
                "--sampler",
                sampler,
                "--warm-start",
                earlier_arg,
            ],
        ))
    };
    later_with("random")
        .timeout(Duration::from_secs(30))
        .assert()
        .failure()
        .stderr(contains("cannot learn from earlier studies"));
    assert!(
        !results.join("later").exists(),
        "a refused study left a folder"
    );

    later_with("bo")
        .timeout(Duration::from_secs(120))
        .assert()
        .success()
        .stderr(contains(format!("warm start from {earlier_arg}: ")))
        .stderr(contains("1 start-up failure(s) carried over"));
    let later = results.join("later");
    let report = std::fs::read_to_string(later.join("report.md")).unwrap();
    assert!(
        report.contains("## Warm start") && report.contains(earlier_arg),
        "{report}"
    );
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(later.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["warm_start"][0]["study"], earlier_arg);
    assert_eq!(best["warm_start"][0]["failures"], 1);
}
