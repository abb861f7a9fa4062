//! The tune loop end to end against fakes: outcomes of every kind, the journal and its views,
//! exports and the report agree; pruning; determinism.

use crate::kit::study_fakes;

use infertune::record::{Outcome, Params, Value};
use infertune::study::journal;
use infertune::study::plan::StopReason;
use study_fakes::*;

const SEED: u64 = 7;

#[test]
fn a_study_records_every_outcome_and_its_views_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fake");
    let space = space(SEED, 12);
    let result = run_study(&space, &dir, false, false).unwrap();
    assert_ne!(result.stopped, StopReason::Interrupted);
    let records = journal::read_records(&dir).unwrap();
    assert_eq!(records, result.records);
    let search: Vec<_> = records.iter().filter(|r| r.repeat_of().is_none()).collect();
    assert_eq!(search.len(), 12);
    assert!(search[0].is_baseline() && search[0].params["max_num_seqs"].as_i64() == Some(64));
    let count = |f: &dyn Fn(&Outcome) -> bool| search.iter().filter(|r| f(&r.outcome)).count();
    assert!(
        count(&|o| matches!(o, Outcome::Rejected { .. })) >= 1,
        "{search:#?}"
    );
    assert!(
        count(&|o| matches!(
            o,
            Outcome::Failed {
                kind: infertune::record::FailureKind::Oom,
                ..
            }
        )) >= 1
    );
    assert!(count(&|o| matches!(o, Outcome::Infeasible)) >= 1);
    assert!(count(&|o| matches!(o, Outcome::Feasible)) >= 3);
    for r in &search {
        match &r.outcome {
            Outcome::Rejected { rule, .. } => {
                assert_eq!(rule, "batched_covers_len");
                assert!(r.ready_s.is_none(), "a rejected config was launched");
            }
            Outcome::Infeasible => assert!(
                r.violations[0]
                    .to_string()
                    .starts_with("ttft:p99<=1500ms (was "),
                "{:?}",
                r.violations
            ),
            _ => {}
        }
    }
    // Re-validation: the top 2 got 2 repeats each; the baseline is one of them here.
    let repeats: Vec<_> = records.iter().filter(|r| r.repeat_of().is_some()).collect();
    assert_eq!(repeats.len(), 4);
    assert_eq!(
        repeats.iter().filter(|r| r.repeat_of() == Some(0)).count(),
        2
    );

    // trials.csv: one row per record, same numbers and statuses, param and metric columns.
    let mut csv = csv::Reader::from_path(dir.join("trials.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    for col in [
        "param_max_num_seqs",
        "param_block_size",
        "output_throughput",
        "p99_ttft_ms",
    ] {
        assert!(
            header.iter().any(|h| h == col),
            "missing {col} in {header:?}"
        );
    }
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), records.len());
    for (row, r) in rows.iter().zip(&records) {
        assert_eq!(row[0], r.id.number.to_string());
        assert_eq!(row[1], *infertune::export::status(&r.outcome));
    }

    // best.json / best.sh name the winner; the report states it, its command and its gain.
    let winner = result.winner.expect("a feasible winner");
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["trial"], winner.summary.number);
    let original = records
        .iter()
        .find(|r| r.id.number == winner.summary.number)
        .unwrap();
    assert!(original.is_feasible() && !original.is_baseline());
    assert_eq!(
        best["params"],
        serde_json::to_value(&original.params).unwrap()
    );
    assert_eq!(best["engine"]["version"], "1.2.3");
    assert_eq!(best["card"], "fake-card");
    assert!(best["host"]["memory_bytes"].as_u64().unwrap_or(0) > 0);
    let script = std::fs::read_to_string(dir.join("best.sh")).unwrap();
    let seqs = original.params["max_num_seqs"].to_string();
    let exec = script.lines().last().unwrap();
    assert!(script.starts_with("#!/usr/bin/env bash\n"));
    assert!(
        exec.starts_with(
            "exec env \"FAKE_NOTE=it's tuned\" fake-serve serve tiny-model --port 18431"
        ),
        "{exec}"
    );
    assert!(exec.contains(&format!("--max-num-seqs {seqs}")), "{exec}");
    let words = shlex::split(exec).unwrap();
    assert_eq!(words[2], "FAKE_NOTE=it's tuned");

    let gain = winner.gain_pct.expect("a feasible baseline");
    assert!(gain > 0.0);
    let (md, html) = (dir.join("report.md"), dir.join("report.html"));
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains(&format!(
            "Trial {}: output_throughput = {:.2}",
            winner.summary.number, winner.summary.mean
        )),
        "{md}"
    );
    assert!(md.contains(&format!("{gain:+.1}%")), "{md}");
    assert!(
        md.contains(exec),
        "the report's command differs from best.sh"
    );
    assert!(
        md.contains("| failed (oom) |")
            && md.contains("| rejected (batched_covers_len) |")
            && md.contains("| slo-violated |"),
        "{md}"
    );
    let html = std::fs::read_to_string(html).unwrap();
    assert!(
        html.matches("<svg").count() >= 5,
        "expected plots in the HTML report"
    );
    for plot in [
        "best-so-far.svg",
        "latency-throughput.svg",
        "param-max_num_seqs.svg",
    ] {
        assert!(dir.join("plots").join(plot).exists(), "missing {plot}");
    }
    assert!(dir
        .join(format!("trial-{}", winner.summary.number))
        .join("probe.json")
        .exists());
    assert!(dir.join("trial-0").join("server.log").exists());
}

#[test]
fn pruning_stops_a_probe_whose_slo_is_certainly_broken_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let space = space(SEED, 12);
    let (pruned_sent, full_sent) = {
        let sent = |prune: bool, dir: &std::path::Path| {
            let rig = Rig::new(&space);
            let mut sampler = FakeSampler { seed: SEED };
            let r = infertune::study::run(
                &space,
                &mut sampler,
                rig.backends(),
                &options(dir.to_path_buf(), false, prune),
            )
            .unwrap();
            (
                r,
                rig.prober
                    .requests_sent
                    .load(std::sync::atomic::Ordering::SeqCst),
            )
        };
        let (with, n_with) = sent(true, &tmp.path().join("pruned"));
        let (without, n_without) = sent(false, &tmp.path().join("full"));
        let pruned: Vec<_> = with
            .records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Pruned { .. }))
            .collect();
        let infeasible = without
            .records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Infeasible))
            .count();
        assert_eq!(
            pruned.len(),
            infeasible,
            "every SLO-violating trial should be pruned"
        );
        for r in &pruned {
            let Outcome::Pruned { reason } = &r.outcome else {
                unreachable!()
            };
            assert!(
                reason.starts_with("ttft:p99<=1500ms certainly broken:"),
                "{reason}"
            );
            assert!(r.score.is_none());
        }
        assert_eq!(
            search_configs(&with.records),
            search_configs(&without.records)
        );
        assert_eq!(
            with.winner.unwrap().summary.number,
            without.winner.unwrap().summary.number
        );
        (n_with, n_without)
    };
    assert!(
        pruned_sent < full_sent,
        "pruning sent {pruned_sent} requests, full runs {full_sent}"
    );
}

#[test]
fn the_same_seed_gives_the_same_configs() {
    let tmp = tempfile::tempdir().unwrap();
    let a = run_study(&space(SEED, 9), &tmp.path().join("a"), false, true).unwrap();
    let b = run_study(&space(SEED, 9), &tmp.path().join("b"), false, true).unwrap();
    let c = run_study(&space(SEED + 1, 9), &tmp.path().join("c"), false, true).unwrap();
    assert_eq!(search_configs(&a.records), search_configs(&b.records));
    assert_ne!(search_configs(&a.records), search_configs(&c.records));
}

#[test]
fn queued_configs_follow_the_baseline_and_a_refused_one_is_never_launched() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("queued");
    let mut space = space(SEED, 3);
    space.search.revalidate_top = 0;
    let overlay = |pairs: &[(&str, i64)]| -> Params {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::Int(*v)))
            .collect()
    };
    space.search.enqueue = vec![
        overlay(&[("max_num_batched_tokens", 2048)]),
        overlay(&[("max_num_seqs", 16), ("block_size", 32)]),
    ];
    run_study(&space, &dir, false, false).unwrap();
    let records = journal::read_records(&dir).unwrap();
    assert_eq!(records.len(), 3, "{records:#?}");
    assert!(records[0].is_baseline() && records[0].ready_s.is_some());
    assert!(
        matches!(&records[1].outcome, Outcome::Rejected { rule, .. } if rule == "batched_covers_len"),
        "{:?}",
        records[1].outcome
    );
    assert!(records[1].ready_s.is_none() && !dir.join("trial-1").exists());
    let queued = &records[2];
    assert_eq!(queued.params["max_num_seqs"].as_i64(), Some(16));
    assert_eq!(queued.params["max_num_batched_tokens"].as_i64(), Some(8192));
    assert!(queued.ready_s.is_some() && !queued.is_baseline());
}

#[test]
fn running_a_study_again_continues_it_and_another_study_is_refused_with_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let first = run_study(&space(SEED, 3), &dir, false, true).unwrap();
    assert_eq!(first.earlier, 0);
    let again = run_study(&space(SEED, 3), &dir, false, true).unwrap();
    assert_eq!(
        again.records, first.records,
        "a finished study runs nothing new"
    );
    assert_eq!(again.earlier, first.records.len());
    let more = run_study(&space(SEED, 5), &dir, false, true).unwrap();
    assert_eq!(search_configs(&more.records).len(), 5);
    assert_eq!(more.records[..first.records.len()], first.records[..]);
    let e = run_study(&space(SEED + 1, 5), &dir, false, true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("already holds another study") && e.contains(&format!("--seed {SEED}")),
        "{e}"
    );
}

#[test]
fn resuming_a_study_that_does_not_exist_or_asking_for_no_trials_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("missing");
    let e = run_study(&space(SEED, 3), &dir, true, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no study to resume"), "{e}");
    assert!(!dir.exists(), "a refused resume created the study folder");
    let e = run_study(&space(SEED, 0), &dir, false, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 1 trial"), "{e}");
    assert!(!dir.exists(), "a study of no trials created its folder");
}

#[test]
fn a_load_search_scores_each_trial_by_the_highest_concurrency_meeting_the_slos() {
    let tmp = tempfile::tempdir().unwrap();
    let mut space = space(SEED, 8);
    space.objective.load_search = Some(infertune::space::objective::LoadSearchSpec {
        over: infertune::space::objective::LoadKnob::Concurrency,
        low: 1.0,
        high: 256.0,
        rounds: 12,
    });
    let result = run_study(&space, &tmp.path().join("ls"), false, true).unwrap();
    let probed: Vec<_> = result
        .records
        .iter()
        .filter(|r| r.repeat_of().is_none() && matches!(r.outcome, Outcome::Feasible))
        .collect();
    assert!(probed.len() >= 3);
    for r in probed {
        // p99 TTFT = model_ttft * c / 16 <= 1500  <=>  c <= 24000 / model_ttft.
        let capacity = (24_000.0 / model(&r.params).1).floor().min(256.0);
        assert_eq!(
            r.value,
            Some(capacity),
            "trial {}: {:?}",
            r.id.number,
            r.metrics
        );
        assert_eq!(r.metrics["load_search_value"], capacity);
        assert!(r.metrics["load_search_rounds"] <= 12.0);
    }
}

#[test]
fn the_baseline_is_re_validated_like_the_finalists_and_the_gain_has_its_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gain");
    // With this seed the baseline is feasible but no finalist.
    let result = run_study(&space(6, 8), &dir, false, true).unwrap();
    let originals: Vec<_> = result
        .records
        .iter()
        .filter(|r| r.repeat_of().is_none())
        .cloned()
        .collect();
    let top: Vec<u32> = infertune::score::select::ranked(&originals)
        .iter()
        .take(2)
        .map(|r| r.id.number)
        .collect();
    assert!(!top.contains(&0), "{top:?}");
    let baseline_repeats = result
        .records
        .iter()
        .filter(|r| r.repeat_of() == Some(0))
        .count();
    assert_eq!(
        baseline_repeats, 2,
        "the baseline gets the finalists' repeats"
    );
    let winner = result.winner.expect("a feasible winner");
    let (gain, gain_ci) = (winner.gain_pct.unwrap(), winner.gain_ci95.unwrap());
    let best = read_json(&dir.join("best.json"));
    let baseline = &best["baseline"];
    assert_eq!(baseline["runs"], 3, "{best:#}");
    assert!(baseline["ci95"].as_f64().is_some(), "{best:#}");
    assert_eq!(baseline["gain_ci95"].as_f64(), Some(gain_ci));
    let text = infertune::export::gain_text(gain, Some(gain_ci));
    assert!(text.contains(" ± "), "{text}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains(&text), "{md}");
    let script = std::fs::read_to_string(dir.join("best.sh")).unwrap();
    assert!(
        script.contains(&text) && script.contains("n = 3"),
        "{script}"
    );
}

#[test]
fn a_figure_from_one_run_says_n_1_and_never_shows_a_zero_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("single");
    let mut space = space(SEED, 6);
    space.search.revalidate_top = 0;
    run_study(&space, &dir, false, true).unwrap();
    let best = read_json(&dir.join("best.json"));
    assert_eq!(best["objective"]["runs"], 1);
    assert!(best["objective"]["ci95"].is_null(), "{best:#}");
    assert!(best["baseline"]["ci95"].is_null(), "{best:#}");
    assert!(best["baseline"]["gain_ci95"].is_null(), "{best:#}");
    for file in ["report.md", "best.sh"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(
            text.contains("(n = 1)") && !text.contains("± 0.00"),
            "{file}: {text}"
        );
    }
}

#[test]
fn best_sh_is_executable_and_best_json_says_which_metrics_are_one_run() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("exec");
    let result = run_study(&space(SEED, 6), &dir, false, true).unwrap();
    let mode = std::fs::metadata(dir.join("best.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o755, 0o755, "best.sh mode {mode:o}");
    let winner = result.winner.unwrap().summary;
    let best = read_json(&dir.join("best.json"));
    assert_eq!(best["metrics_source"]["trial"], winner.number);
    assert_eq!(best["metrics_source"]["runs"], 1);
    let revalidated = &best["revalidated"];
    let trials: Vec<u64> = revalidated["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    assert_eq!(trials.len(), winner.runs);
    assert_eq!(trials[0], u64::from(winner.number));
    let throughput = &revalidated["metrics"]["output_throughput"];
    assert_eq!(throughput["runs"], winner.runs);
    assert!((throughput["mean"].as_f64().unwrap() - winner.mean).abs() < 1e-9);
    assert_eq!(throughput["ci95"].as_f64(), winner.ci95);
}

fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_load_search_never_counts_a_load_at_which_a_request_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut space = space(SEED, 6);
    space.objective.subject_to = infertune::record::parse_slos("ttft:p99<=1500ms").unwrap();
    space.objective.load_search = Some(infertune::space::objective::LoadSearchSpec {
        over: infertune::space::objective::LoadKnob::Concurrency,
        low: 1.0,
        high: 256.0,
        rounds: 12,
    });
    let mut rig = Rig::new(&space);
    rig.prober.fail_above = Some(10.0);
    let mut sampler = FakeSampler { seed: SEED };
    let options = options(tmp.path().join("ls"), false, true);
    let result = infertune::study::run(&space, &mut sampler, rig.backends(), &options).unwrap();
    let probed: Vec<_> = result
        .records
        .iter()
        .filter(|r| r.repeat_of().is_none() && matches!(r.outcome, Outcome::Feasible))
        .collect();
    assert!(probed.len() >= 2, "{:#?}", result.records);
    for r in probed {
        let capacity = (24_000.0 / model(&r.params).1).floor().min(10.0);
        assert_eq!(r.value, Some(capacity), "trial {}", r.id.number);
        assert_eq!(r.metrics["error_rate"], 0.0, "trial {}", r.id.number);
    }
}
