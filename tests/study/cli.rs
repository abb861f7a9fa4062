//! `infertune report` on a study folder, clear errors on bad folders, the time budget, and
//! what `tune` refuses before it starts (or right after a baseline that cannot start).

use crate::kit::study_fakes;

use crate::kit::e2e_sim_common::tune;
use assert_cmd::Command;
use infertune::study::plan::StopReason;
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
    assert_ne!(result.stopped, StopReason::Interrupted);
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

/// A custom-engine space whose server is `engine.sh` in `dir`, passed a misspelt flag.
fn misspelt_flag_space(dir: &std::path::Path) -> std::path::PathBuf {
    let script = dir.join("engine.sh");
    std::fs::write(
        &script,
        "printf \"error: unexpected argument '--max-num-seqz' found\\n\\n  tip: a similar \
         argument exists: '--max-num-seqs'\\n\\nUsage: engine [OPTIONS]\\n\\nFor more \
         information, try '--help'.\\n\" >&2\nexit 2\n",
    )
    .unwrap();
    let space = dir.join("broken.yaml");
    std::fs::write(
        &space,
        format!(
            "name: broken\nengine: {{kind: custom, model: tiny}}\n\
             launch:\n  command: [sh, {script:?}, \"--port={{port}}\", \"--max-num-seqz={{max_num_seqs}}\"]\n  \
             port: 18750\n  ready_timeout: 20s\n  stop_grace: 1s\n\
             parameters:\n  max_num_seqs: {{type: int, low: 1, high: 64, default: 8}}\n\
             probe:\n  dataset: {{kind: random, input_len: 16, output_len: 4}}\n  \
             load: {{kind: closed, concurrency: 1, requests: 2}}\n\
             objective: {{metric: output_throughput}}\n\
             search: {{sampler: random, trials: 5}}\n"
        ),
    )
    .unwrap();
    space
}

#[test]
fn a_baseline_refused_by_the_engines_argument_parser_stops_the_study_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let space = misspelt_flag_space(tmp.path());
    let out = Command::from_std(tune(&space, &tmp.path().join("results"), &[]))
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    for part in [
        "baseline",
        "invalid-config: unexpected argument '--max-num-seqz' found",
        "a similar argument exists: '--max-num-seqs'",
        "trial-0/server.log",
    ] {
        assert!(stderr.contains(part), "`{part}` missing from: {stderr}");
    }
    assert!(!stderr.contains("For more information"), "{stderr}");
    let dir = tmp.path().join("results/broken");
    assert!(
        !dir.join("trial-1").exists(),
        "launched on after the baseline"
    );
    assert!(infertune::study::journal::read_records(&dir)
        .unwrap_or_default()
        .is_empty());
}

#[test]
fn tune_refuses_no_trials_and_a_resume_of_nothing_without_creating_a_study() {
    let tmp = tempfile::tempdir().unwrap();
    let tune = |extra: &[&str]| {
        Command::cargo_bin("infertune")
            .unwrap()
            .args([
                "tune",
                "--space",
                "search-spaces/demo-sim.yaml",
                "--results",
            ])
            .arg(tmp.path())
            .args(extra)
            .assert()
            .failure()
    };
    tune(&["--trials", "0"]).stderr(contains("--trials"));
    tune(&["--resume"]).stderr(contains("no study to resume"));
    assert!(!tmp.path().join("demo-sim").exists());
}

#[test]
fn tune_help_lists_every_sampler_with_what_it_does() {
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .args(["tune", "--help"])
        .assert()
        .success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for name in infertune::sampler::SAMPLER_NAMES {
        assert!(help.contains(&format!("- {name}: ")), "{name}: {help}");
    }
    assert!(help.contains("Sobol"), "{help}");
}
