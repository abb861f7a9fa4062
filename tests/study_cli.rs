//! `infertune report` on a study folder, clear errors on bad folders, and the time budget.

mod study_fakes;

use assert_cmd::Command;
use predicates::prelude::*;
use predicates::str::contains;
use study_fakes::*;

#[test]
fn report_writes_markdown_html_and_plots_for_a_study_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    run_study(&space(3, 8), &dir, false, true).unwrap();
    Command::cargo_bin("infertune")
        .unwrap()
        .args(["report", dir.to_str().unwrap()])
        .assert()
        .success()
        .stdout(contains("report.md"));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("## Failures by kind")
            && md.contains("![Best value so far](plots/best-so-far.svg)")
    );
    assert!(dir.join("plots/best-so-far.svg").exists());
}

#[test]
fn report_on_a_folder_without_a_study_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    Command::cargo_bin("infertune")
        .unwrap()
        .args(["report", tmp.path().to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(contains("is").and(contains("a study folder?")));
}

#[test]
fn a_spent_time_budget_ends_the_search_without_running_trials() {
    let tmp = tempfile::tempdir().unwrap();
    let mut space = space(3, 8);
    space.search.budget = Some(std::time::Duration::from_nanos(1));
    let result = run_study(&space, &tmp.path().join("b"), false, true).unwrap();
    assert!(!result.interrupted);
    assert!(result.records.is_empty());
    assert!(result.winner.is_none());
}

#[test]
fn export_and_report_refuse_while_a_tuner_holds_the_study() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    run_study(&space(3, 8), &dir, false, true).unwrap();
    let tuner = infertune::study::lock::acquire(&dir).unwrap();
    for command in ["export", "report"] {
        Command::cargo_bin("infertune")
            .unwrap()
            .args([command, dir.to_str().unwrap()])
            .assert()
            .failure()
            .stderr(contains("a tuner is running the study"));
    }
    drop(tuner);
    Command::cargo_bin("infertune")
        .unwrap()
        .args(["report", dir.to_str().unwrap()])
        .assert()
        .success();
}
