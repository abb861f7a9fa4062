//! Screening at low fidelity against fakes: every config but the baseline first runs a short
//! probe, those that pass run the full probe as a promotion, only full-probe runs win or are
//! re-validated, a screening run that can no longer go on is cut short, a resume promotes a
//! screening run that passed exactly once, and new configs are probed in full straight away
//! while screening does not pay.

use crate::kit::study_fakes;

use infertune::record::{Outcome, TrialRecord};
use infertune::space::{ScreeningSettings, StudySpec};
use infertune::study::screening::{awaiting_promotion, promotion_bar, screening_pays};
use infertune::study::{journal, StudyResult};
use std::path::Path;
use study_fakes::*;

const SEED: u64 = 5;

/// A study of `trials` configs with screening on (a quarter of the probe, the best third go on).
fn screened_space(trials: u32) -> StudySpec {
    screened_with(trials, ScreeningSettings::default())
}

/// A study of `trials` configs screened with `settings`.
fn screened_with(trials: u32, settings: ScreeningSettings) -> StudySpec {
    let mut space = space(SEED, trials);
    space.search.screening = Some(settings);
    space
}

/// Run `space` in `dir` with a prober whose short probes report `gain` times the throughput.
fn run(space: &StudySpec, dir: &Path, resume: bool, gain: Option<f64>) -> StudyResult {
    run_noting(space, dir, resume, gain).0
}

/// A study of `trials` configs screened, those that pass promoted in place.
fn in_place_space(trials: u32) -> StudySpec {
    let settings = ScreeningSettings {
        in_place: true,
        ..ScreeningSettings::default()
    };
    screened_with(trials, settings)
}

/// [`run`], and the notes the study gave.
fn run_noting(
    space: &StudySpec,
    dir: &Path,
    resume: bool,
    gain: Option<f64>,
) -> (StudyResult, Vec<String>) {
    let (result, rig) = run_on_rig(space, dir, resume, gain);
    let notes = rig.notes.0.lock().unwrap().clone();
    (result, notes)
}

/// [`run`], and the fakes it ran on.
fn run_on_rig(
    space: &StudySpec,
    dir: &Path,
    resume: bool,
    gain: Option<f64>,
) -> (StudyResult, Rig) {
    let mut rig = Rig::new(space);
    rig.prober.short_probe_gain = gain;
    let mut sampler = FakeSampler {
        seed: space.search.seed,
    };
    let options = options(dir.to_path_buf(), resume, true);
    let result = infertune::study::run(space, &mut sampler, rig.backends(), &options).unwrap();
    assert_eq!(rig.launcher.registry.live(), 0, "a server was left running");
    (result, rig)
}

/// The winner of `result` is a full-probe run of `records`: that run.
fn assert_a_full_probe_run_won<'r>(
    result: &StudyResult,
    records: &'r [TrialRecord],
) -> &'r TrialRecord {
    let winner = result.winner.as_ref().expect("a config met every SLO");
    let crowned = records
        .iter()
        .find(|r| r.number == winner.summary.number)
        .unwrap();
    assert!(crowned.is_full_probe(), "{crowned:?}");
    crowned
}

fn probe_seconds(records: &[TrialRecord]) -> f64 {
    records
        .iter()
        .filter_map(|r| r.metrics.get("duration_s"))
        .sum()
}

fn promotions_of(records: &[TrialRecord], screened: u32) -> usize {
    records
        .iter()
        .filter(|r| r.promoted_from == Some(screened))
        .count()
}

#[test]
fn screened_configs_record_their_fidelity_and_a_flattering_short_probe_never_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("screened");
    let space = screened_space(12);
    // Short probes report three times the throughput: counted, a screening run would win.
    let result = run(&space, &dir, false, Some(3.0));
    let records = journal::read_records(&dir).unwrap();
    assert_eq!(records, result.records);

    let configs: Vec<&TrialRecord> = records
        .iter()
        .filter(|r| r.repeat_of.is_none() && r.promoted_from.is_none())
        .collect();
    assert_eq!(
        configs.len(),
        12,
        "promotions counted against search.trials"
    );
    assert!(configs[0].baseline && configs[0].fidelity.is_none());
    for r in configs
        .iter()
        .filter(|r| !r.baseline && r.ready_s.is_some())
    {
        assert_eq!(
            r.fidelity,
            Some(0.25),
            "trial {} was not screened",
            r.number
        );
    }
    let promotions: Vec<&TrialRecord> = records
        .iter()
        .filter(|r| r.promoted_from.is_some())
        .collect();
    assert!(!promotions.is_empty(), "no screening run was promoted");
    for p in &promotions {
        let from = records
            .iter()
            .find(|r| Some(r.number) == p.promoted_from)
            .unwrap();
        assert_eq!(from.fidelity, Some(0.25));
        assert_eq!((p.fidelity, &p.params), (None, &from.params));
        assert!(p.number > from.number);
        assert_eq!(promotions_of(&records, from.number), 1);
    }
    let settings = space.search.screening.unwrap();
    assert!(
        awaiting_promotion(&settings, &space.objective.slos(), &records).is_empty(),
        "a screening run that passed never ran the full probe"
    );

    let crowned = assert_a_full_probe_run_won(&result, &records);
    let winner_mean = result.winner.as_ref().unwrap().summary.mean;
    let best_screened = records
        .iter()
        .filter(|r| !r.is_full_probe() && r.is_feasible())
        .filter_map(|r| r.value)
        .fold(0.0, f64::max);
    assert!(
        best_screened > winner_mean,
        "the case must tempt: screened {best_screened} vs winner {}",
        winner_mean
    );
    for repeat in records.iter().filter_map(|r| r.repeat_of) {
        let original = records.iter().find(|r| r.number == repeat).unwrap();
        assert!(
            original.is_full_probe(),
            "screening run {repeat} re-validated"
        );
    }
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["trial"].as_u64(), Some(u64::from(crowned.number)));

    let mut csv = csv::Reader::from_path(dir.join("trials.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (fidelity, promoted_from) = (column("fidelity"), column("promoted_from"));
    for (row, r) in csv.records().map(Result::unwrap).zip(&records) {
        let expected = r.fidelity.map(|f| f.to_string()).unwrap_or_default();
        assert_eq!(row[fidelity], expected);
        let expected = r.promoted_from.map(|n| n.to_string()).unwrap_or_default();
        assert_eq!(row[promoted_from], expected);
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let screened = configs.iter().filter(|r| r.fidelity.is_some()).count();
    assert!(
        report.contains("## Screening")
            && report.contains(&format!("{screened} config(s) screened with a short probe"))
            && report.contains(&format!("{} promoted to the full probe", promotions.len())),
        "{report}"
    );
}

/// Requests of a screening run of the fake space (a quarter of `PLANNED`).
const SCREENING_REQUESTS: f64 = 50.0;

#[test]
fn a_screening_run_that_can_no_longer_go_on_is_cut_short_and_keeps_its_value() {
    let tmp = tempfile::tempdir().unwrap();
    let space = screened_space(16);
    let records = run(&space, tmp.path(), false, None).records;
    let slos = space.objective.slos();
    let mut cut = 0;
    for r in records.iter().filter(|r| !r.is_full_probe()) {
        // Trials run one at a time here: those numbered before it had landed when it started.
        let before: Vec<TrialRecord> = records
            .iter()
            .filter(|o| o.number < r.number)
            .cloned()
            .collect();
        let bar = promotion_bar(&ScreeningSettings::default(), &slos, &before);
        let (in_full, _) = model(&r.params);
        if r.was_outranked() {
            cut += 1;
            let bar = bar.unwrap_or_else(|| panic!("trial {} cut without a bar", r.number));
            assert!(
                in_full < bar,
                "trial {} could still go on: {in_full} ≥ {bar}",
                r.number
            );
            assert!(r.metrics["completed"] < SCREENING_REQUESTS, "{r:?}");
            assert!(r.value.is_some() && r.score.is_some(), "{r:?}");
            assert_eq!(promotions_of(&records, r.number), 0);
        } else if let (Some(bar), Outcome::Feasible | Outcome::Infeasible) = (bar, &r.outcome) {
            assert!(
                in_full >= bar,
                "trial {} ran on below the bar {bar}",
                r.number
            );
        }
    }
    assert!(cut >= 2, "{cut} screening runs cut short in {records:#?}");
}

#[test]
fn screening_spends_fewer_probe_seconds_than_the_same_study_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let screened = run(&screened_space(12), &tmp.path().join("s"), false, None);
    let full = run(&space(SEED, 12), &tmp.path().join("f"), false, None);
    let (short, long) = (
        probe_seconds(&screened.records),
        probe_seconds(&full.records),
    );
    assert!(short < long, "{short} s screened vs {long} s in full");
}

#[test]
fn once_most_screened_configs_go_on_new_configs_are_probed_in_full_straight_away() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("all-go-on");
    // Every screening run goes on: each costs its probe on top of the full one.
    let settings = ScreeningSettings {
        keep: 1.0,
        ..ScreeningSettings::default()
    };
    let space = screened_with(30, settings);
    let (result, notes) = run_noting(&space, &dir, false, None);
    let records = &result.records;
    let settings = space.search.screening.unwrap();
    let slos = space.objective.slos();
    let mut straight_away = 0;
    let mut switches = Vec::new();
    let mut screened_last = true;
    for (i, r) in records.iter().enumerate() {
        if !r.is_launched_search_config() {
            continue;
        }
        let pays = screening_pays(&settings, &slos, &records[..i]);
        assert_eq!(r.fidelity.is_some(), pays, "trial {}", r.number);
        straight_away += usize::from(!pays);
        if pays != screened_last {
            switches.push(if pays { "resumed" } else { "paused" });
        }
        screened_last = pays;
    }
    // One note each time screening pauses or resumes.
    let noted: Vec<&str> = notes
        .iter()
        .filter_map(|n| n.strip_prefix("screening "))
        .filter_map(|n| n.split(':').next())
        .collect();
    assert_eq!(noted, switches, "{notes:#?}");
    assert!(
        straight_away >= 3,
        "{straight_away} configs probed in full straight away in {records:#?}"
    );
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("{straight_away} probed in full straight away")),
        "{report}"
    );
}

/// A screened study of 10 configs without re-validation, run to its end in `dir`, and its
/// first promotion.
fn reference_study(dir: &Path) -> (StudySpec, StudyResult, TrialRecord) {
    let mut space = screened_space(10);
    space.search.revalidate_top = 0;
    let reference = run(&space, dir, false, None);
    let promotion = reference
        .records
        .iter()
        .find(|r| r.promoted_from.is_some())
        .expect("a promotion")
        .clone();
    (space, reference, promotion)
}

#[test]
fn a_resume_promotes_a_screening_run_that_passed_before_its_promotion_started_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (space, reference, promotion) = reference_study(&tmp.path().join("ref"));
    let screened = promotion.promoted_from.unwrap();

    // Killed after the screening run was journaled, before its promotion started.
    let dir = tmp.path().join("killed");
    copy_before(&tmp.path().join("ref"), &dir, promotion.number);
    let before = journal::read_records(&dir).unwrap();
    let settings = space.search.screening.unwrap();
    let waiting: Vec<u32> = awaiting_promotion(&settings, &space.objective.slos(), &before)
        .iter()
        .map(|r| r.number)
        .collect();
    assert!(waiting.contains(&screened), "{waiting:?}");

    let resumed = run(&space, &dir, true, None);
    assert_eq!(&resumed.records[..before.len()], &before[..]);
    for number in waiting {
        assert_eq!(promotions_of(&resumed.records, number), 1, "trial {number}");
    }
    assert_eq!(
        resumed.records[before.len()].promoted_from,
        Some(screened),
        "the promotion runs before any new config"
    );
    assert_eq!(
        search_configs(&resumed.records),
        search_configs(&reference.records)
    );
}

#[test]
fn a_promotion_in_flight_runs_again_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let (space, reference, promotion) = reference_study(&tmp.path().join("ref"));

    // Killed while the promotion ran: its folder holds pending.json, its record is missing.
    let dir = tmp.path().join("killed");
    copy_before(&tmp.path().join("ref"), &dir, promotion.number);
    let trial_dir = dir.join(format!("trial-{}", promotion.number));
    std::fs::create_dir_all(&trial_dir).unwrap();
    let pending = serde_json::json!({
        "number": promotion.number,
        "promoted_from": promotion.promoted_from,
        "params": promotion.params,
    });
    std::fs::write(trial_dir.join("pending.json"), pending.to_string()).unwrap();

    let resumed = run(&space, &dir, true, None);
    let rerun = resumed
        .records
        .iter()
        .find(|r| r.number == promotion.number)
        .unwrap();
    assert_eq!(
        (rerun.promoted_from, rerun.fidelity, &rerun.params),
        (promotion.promoted_from, None, &promotion.params)
    );
    assert_eq!(
        promotions_of(&resumed.records, promotion.promoted_from.unwrap()),
        1
    );
    assert_eq!(
        search_configs(&resumed.records),
        search_configs(&reference.records)
    );
}

#[test]
fn a_resume_with_other_screening_settings_is_refused_and_an_old_study_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    run(&screened_space(3), &dir, false, None);
    let mut other = screened_space(3);
    other.search.screening = Some(ScreeningSettings {
        fraction: 0.5,
        keep: 0.5,
        in_place: false,
    });
    for changed in [other, space(SEED, 3)] {
        let rig = Rig::new(&changed);
        let mut sampler = FakeSampler { seed: SEED };
        let e = infertune::study::run(
            &changed,
            &mut sampler,
            rig.backends(),
            &options(dir.clone(), true, true),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("screening (fraction 0.25, keep 0.333")
                && e.contains("resume with the same search.screening"),
            "{e}"
        );
    }

    // A study written before screening existed has no `screening` in study.json.
    let old = tmp.path().join("old");
    run(&space(SEED, 3), &old, false, None);
    let meta = std::fs::read_to_string(old.join("study.json")).unwrap();
    assert!(!meta.contains("screening"), "{meta}");
    let resumed = run(&space(SEED, 4), &old, true, None);
    assert_eq!(search_configs(&resumed.records).len(), 4);
}

/// Copy the study `from` into `to` as a tuner killed before trial `number` started left it:
/// the journal's records before it, their trial folders, and `study.json`.
fn copy_before(from: &Path, to: &Path, number: u32) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(from.join("study.json"), to.join("study.json")).unwrap();
    let kept: Vec<TrialRecord> = journal::read_records(from)
        .unwrap()
        .into_iter()
        .filter(|r| r.number < number)
        .collect();
    let lines: Vec<String> = kept
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    std::fs::write(to.join("journal.jsonl"), lines.join("\n") + "\n").unwrap();
    for r in &kept {
        let name = format!("trial-{}", r.number);
        let (src, dst) = (from.join(&name), to.join(&name));
        if src.exists() {
            std::fs::create_dir_all(&dst).unwrap();
            for entry in std::fs::read_dir(&src).unwrap() {
                let entry = entry.unwrap();
                std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
            }
        }
    }
}

#[test]
fn in_place_a_config_that_passes_goes_on_on_its_screening_server_with_the_rest_of_the_probe() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in-place");
    let space = in_place_space(12);
    let (result, rig) = run_on_rig(&space, &dir, false, None);
    let records = journal::read_records(&dir).unwrap();
    assert_eq!(records, result.records);

    let promotions: Vec<&TrialRecord> = records
        .iter()
        .filter(|r| r.promoted_from.is_some())
        .collect();
    assert!(!promotions.is_empty(), "no screening run passed");
    let completed = |r: &TrialRecord| r.metrics.get("completed").map_or(0, |n| *n as u64);
    let mut shared_requests = 0;
    for full in &promotions {
        assert!(
            full.continued,
            "trial {} started a server again",
            full.number
        );
        let screened = records
            .iter()
            .find(|r| Some(r.number) == full.promoted_from)
            .unwrap();
        assert_eq!((screened.fidelity, full.fidelity), (Some(0.25), None));
        assert_eq!(full.params, screened.params);
        assert!(full.number > screened.number);
        assert_eq!(full.folder_number(), screened.number);
        assert_eq!((screened.ready_s.is_some(), full.ready_s), (true, None));
        assert_eq!(
            (completed(screened), completed(full)),
            (PLANNED / 4, PLANNED)
        );
        shared_requests += completed(screened);
    }
    // Each server started once; a promotion sent only the rest of the probe's requests.
    let launched = records
        .iter()
        .filter(|r| !r.continued && !matches!(r.outcome, Outcome::Rejected { .. }))
        .count();
    assert_eq!(rig.launcher.registry.started(), launched);
    let counted: u64 = records.iter().map(completed).sum();
    assert_eq!(
        rig.prober
            .requests_sent
            .load(std::sync::atomic::Ordering::SeqCst) as u64,
        counted - shared_requests
    );
    assert_a_full_probe_run_won(&result, &records);
}

#[test]
fn in_place_with_slots_in_parallel_each_promotion_follows_its_own_screening_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in-place-parallel");
    let mut space = in_place_space(16);
    space.search.parallel = 3;
    let (result, _) = run_on_rig(&space, &dir, false, None);
    let records = &result.records;
    let mut numbers: Vec<u32> = records.iter().map(|r| r.number).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (0..records.len() as u32).collect::<Vec<_>>());
    let in_place: Vec<&TrialRecord> = records.iter().filter(|r| r.continued).collect();
    assert!(!in_place.is_empty(), "no promotion in place");
    for full in in_place {
        let screened = records
            .iter()
            .find(|r| Some(r.number) == full.promoted_from)
            .unwrap();
        assert_eq!(
            (&screened.params, screened.fidelity),
            (&full.params, Some(0.25))
        );
        assert_eq!(screened.slot, full.slot, "went on on another slot");
        assert_eq!(promotions_of(records, screened.number), 1);
    }
    assert_a_full_probe_run_won(&result, records);
}
