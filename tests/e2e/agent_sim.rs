//! A program drives a simulator study the way an agent or a CI job would: only through
//! `check --json`, `tune --events jsonl`, `tune --json` and exit codes (docs/machine-interface.md),
//! never through the text meant for people.

use crate::kit::e2e_sim_common::{space_with_port, tune};
use serde_json::Value as Json;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

fn infertune(args: &[&str]) -> Output {
    assert_cmd::Command::cargo_bin("infertune")
        .unwrap()
        .args(args)
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap()
}

fn stdout_json(out: &Output) -> Json {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}):\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn events(out: &Output) -> Vec<Json> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

fn named<'a>(events: &'a [Json], name: &str) -> Vec<&'a Json> {
    events.iter().filter(|e| e["event"] == name).collect()
}

#[test]
fn an_agent_drives_a_simulator_study_through_json_events_and_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let space = space_with_port(tmp.path(), 18950);
    let space_arg = space.to_str().unwrap();
    let results = tmp.path().join("results");

    // 1. Check the space: feasible configs exist, and each example has its command.
    let check = infertune(&["check", "--space", space_arg, "--samples", "500", "--json"]);
    let report = stdout_json(&check);
    assert_eq!(check.status.code(), Some(0));
    assert_eq!(report["exit_code"], 0);
    assert!(
        report["estimate"]["feasible"].as_u64().unwrap() > 0,
        "{report}"
    );
    let examples = report["examples"].as_array().unwrap();
    assert!(
        !examples.is_empty() && examples[0]["command"].as_str().is_some(),
        "{report}"
    );

    // 2. Run the study, following its events.
    let out = assert_cmd::Command::from_std(tune(
        &space,
        &results,
        &["--trials", "4", "--events", "jsonl"],
    ))
    .timeout(Duration::from_secs(180))
    .output()
    .unwrap();
    let all = events(&out);
    let result = all.last().expect("a result event");
    assert_eq!(result["event"], "result", "the last line is the result");
    assert_eq!(
        out.status.code(),
        result["exit_code"].as_i64().map(|c| c as i32)
    );
    assert_eq!(result["status"], "winner", "{result}");
    assert_eq!(named(&all, "study_started").len(), 1);
    let phases: Vec<&str> = named(&all, "phase")
        .iter()
        .map(|e| e["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["search", "revalidation"]);
    let started = named(&all, "trial_started");
    let finished: Vec<&Json> = all
        .iter()
        .filter(|e| e["event"] == "trial_finished" || e["event"] == "trial_pruned")
        .collect();
    let status = |e: &Json| e["outcome"]["status"].as_str().unwrap().to_string();
    let rejected = finished.iter().filter(|e| status(e) == "rejected").count();
    assert_eq!(rejected, 1, "the enqueued config the constraint refuses");
    assert_eq!(
        started.len() + rejected,
        finished.len(),
        "every launched trial ends"
    );
    assert!(
        finished
            .iter()
            .any(|e| status(e) == "failed" && e["outcome"]["kind"] == "oom"),
        "the enqueued OOM config fails as such"
    );
    // Each start comes before its end.
    for s in &started {
        let number = &s["trial"]["number"];
        let at = |name: &str| {
            all.iter()
                .position(|e| e["event"] == name && e["trial"]["number"] == *number)
        };
        assert!(at("trial_started") < at("trial_finished").or(at("trial_pruned")));
    }
    let winner = &result["winner"];
    let won = finished
        .iter()
        .find(|e| e["trial"]["number"] == winner["trial"])
        .expect("the winner is a finished trial");
    assert_eq!(status(won), "feasible");
    assert_eq!(won["params"], winner["params"]);
    assert_eq!(winner["runs"], 2, "re-validated once");
    let best_sh = result["files"]["best.sh"]
        .as_str()
        .expect("best.sh is listed");
    assert!(Path::new(best_sh).is_file());
    assert_eq!(named(&all, "study_finished").len(), 1);

    // 3. Asked again, the complete study answers at once with the same winner.
    let again = infertune(&[
        "tune",
        "--space",
        space_arg,
        "--results",
        results.to_str().unwrap(),
        "--trials",
        "4",
        "--json",
    ]);
    let summary = stdout_json(&again);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(summary["ran_now"], 0);
    assert_eq!(summary["winner"]["trial"], winner["trial"]);

    // 4. An SLO no config meets: exit code 1, and the result says why.
    let strict = std::fs::read_to_string(&space)
        .unwrap()
        .replace("ttft:p99<=500ms", "ttft:p99<=1ms");
    let strict_space = tmp.path().join("strict.yaml");
    std::fs::write(&strict_space, strict).unwrap();
    let none = infertune(&[
        "tune",
        "--space",
        strict_space.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
        "--study",
        "strict",
        "--trials",
        "1",
        "--json",
    ]);
    let summary = stdout_json(&none);
    assert_eq!(none.status.code(), Some(1), "{summary}");
    assert_eq!(summary["status"], "no_feasible_config");
    assert!(summary["winner"].is_null());

    // 5. A space that does not load: exit code 2, the error as JSON.
    let missing = infertune(&["tune", "--space", "no-such-space.yaml", "--events", "jsonl"]);
    let lines = events(&missing);
    assert_eq!(missing.status.code(), Some(2));
    let error = lines.last().unwrap();
    assert_eq!(error["event"], "result");
    assert_eq!(error["status"], "error");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("no-such-space.yaml"),
        "{error}"
    );
}
