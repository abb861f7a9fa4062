//! Warm start: a study seeded with an earlier study's trials avoids the start-up failure region
//! that study found, records what it reused in `study.json`, the report and `best.json`, and
//! resumes with the same seed of its sampler.

use crate::kit::study_fakes;

use infertune::record::{FailureKind, Outcome, TrialRecord};
use infertune::sampler::from_name_with_prior;
use infertune::space::error::Pos;
use infertune::space::{StudySpec, WarmStartEntry};
use infertune::study::{journal, warm, StudyResult};
use std::path::Path;
use study_fakes::*;

/// Seeds of the later studies, warm and cold alike.
const SEEDS: [u64; 4] = [3, 5, 9, 13];

/// The earlier study: random configs over the fake space, OOM above `OOM_ABOVE` seqs.
fn earlier(dir: &Path, trials: u32) {
    let mut space = space(1, trials);
    space.search.revalidate_top = 0;
    run_study(&space, dir, dir.exists(), false).unwrap();
}

/// The fake space searched by `bo`, warm-started from `from` (cold when empty).
fn later_space(seed: u64, trials: u32, from: &[&Path]) -> StudySpec {
    let mut space = space(seed, trials);
    space.search.sampler = "bo".into();
    space.search.revalidate_top = 0;
    space.search.warm_start = from
        .iter()
        .map(|dir| WarmStartEntry {
            study: dir.to_path_buf(),
            pos: Pos {
                line: 30,
                column: 5,
            },
        })
        .collect();
    space
}

/// Run (or resume) the study of `space` in `dir` with its warm start read as `tune` reads it.
fn run_warm(space: &StudySpec, dir: &Path, resume: bool) -> anyhow::Result<StudyResult> {
    run_warm_noted(space, dir, resume).map(|(result, _)| result)
}

/// [`run_warm`], with the notes the study told its observer.
fn run_warm_noted(
    space: &StudySpec,
    dir: &Path,
    resume: bool,
) -> anyhow::Result<(StudyResult, Vec<String>)> {
    let warm = warm::load(space, dir)?;
    let mut sampler = from_name_with_prior("bo", space.search.seed, warm.prior)?;
    let rig = Rig::new(space);
    let mut opts = options(dir.to_path_buf(), resume, false);
    opts.warm_start = warm.studies;
    let result = infertune::study::run(space, sampler.as_mut(), rig.backends(), &opts)?;
    let notes = rig.notes.0.lock().unwrap().clone();
    Ok((result, notes))
}

/// The notes of `notes` that tell what became of the warm start.
fn trust_notes(notes: &[String]) -> Vec<&str> {
    notes
        .iter()
        .filter(|n| n.starts_with("warm start:"))
        .map(String::as_str)
        .collect()
}

fn ooms(records: &[TrialRecord]) -> usize {
    records
        .iter()
        .filter(|r| {
            matches!(
                r.outcome,
                Outcome::Failed {
                    kind: FailureKind::Oom,
                    ..
                }
            )
        })
        .count()
}

#[test]
fn a_warm_study_avoids_the_earlier_studys_oom_region_where_a_cold_one_walks_into_it() {
    let tmp = tempfile::tempdir().unwrap();
    let before = tmp.path().join("earlier");
    // Dense enough that the OOM region above `OOM_ABOVE` seqs is mapped.
    earlier(&before, 80);
    let learnt = ooms(&journal::read_records(&before).unwrap());
    assert!(
        learnt >= 2,
        "the earlier study must have met the OOM region"
    );

    let (mut warm_ooms, mut cold_ooms) = (0, 0);
    for seed in SEEDS {
        let mut warm = later_space(seed, 12, &[&before]);
        // The same fake card and model: the earlier landscape is this one, so it is trusted
        // well (at the default 0.5 the sampler still tries the top corner late in the study).
        warm.search.transfer_weight = 0.8;
        let cold = later_space(seed, 12, &[]);
        let w = run_warm(&warm, &tmp.path().join(format!("warm-{seed}")), false).unwrap();
        let c = run_warm(&cold, &tmp.path().join(format!("cold-{seed}")), false).unwrap();
        warm_ooms += ooms(&w.records);
        cold_ooms += ooms(&c.records);
    }
    assert!(
        warm_ooms <= 1 && cold_ooms >= 4,
        "warm studies hit {warm_ooms} OOMs, cold ones {cold_ooms}"
    );
}

#[test]
fn the_study_file_the_report_and_best_json_name_the_reused_study() {
    let tmp = tempfile::tempdir().unwrap();
    let before = tmp.path().join("earlier");
    earlier(&before, 10);
    let dir = tmp.path().join("warm");
    run_warm(&later_space(3, 6, &[&before]), &dir, false).unwrap();

    let meta = journal::load_meta(&dir).unwrap();
    let [reused] = meta.warm_start.as_slice() else {
        panic!("one earlier study expected: {:?}", meta.warm_start)
    };
    let name = before.display().to_string();
    assert_eq!(reused.study, name);
    assert_eq!(reused.read, 10);
    assert_eq!(reused.reused + reused.dropped, 10);
    assert!(reused.reused >= 8, "{reused:?}");
    let oom_before = ooms(&journal::read_records(&before).unwrap());
    assert!(
        reused.failures <= oom_before && reused.failures >= 1,
        "{reused:?}"
    );
    assert_eq!(reused.weight, 0.5);

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("## Warm start"), "{report}");
    assert!(report.contains(&name), "{report}");
    // The same fake card and model: the study's own trials bear the earlier ones out.
    assert!(
        report.contains("a model of the earlier trials alone ranks them with Kendall's τ")
            && report.contains("they are confirmed"),
        "{report}"
    );
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["warm_start"][0]["study"], name.as_str());
}

#[test]
fn the_study_tells_each_change_of_its_verdict_on_the_warm_start_and_a_cold_one_tells_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let before = tmp.path().join("earlier");
    earlier(&before, 10);
    let dir = tmp.path().join("warm");
    let (_, notes) = run_warm_noted(&later_space(3, 12, &[&before]), &dir, false).unwrap();
    // What the verdict earned: the sentence's part after the τ.
    let verdicts: Vec<&str> = trust_notes(&notes)
        .iter()
        .filter_map(|n| n.split_once("; ").map(|(_, verdict)| verdict))
        .collect();
    assert!(!verdicts.is_empty(), "{notes:#?}");
    assert!(
        verdicts.windows(2).all(|pair| pair[0] != pair[1]),
        "a verdict told twice in a row: {notes:#?}"
    );
    // The same fake card and model: confirmed first, and the last verdict told is the report's.
    assert!(verdicts[0].contains("they are confirmed"), "{notes:#?}");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let last = verdicts.last().unwrap();
    assert!(report.contains(last), "{last} is not in\n{report}");

    let (_, notes) =
        run_warm_noted(&later_space(3, 12, &[]), &tmp.path().join("cold"), false).unwrap();
    assert!(trust_notes(&notes).is_empty(), "{notes:#?}");
}

#[test]
fn a_resumed_warm_study_proposes_what_an_uninterrupted_one_does() {
    let tmp = tempfile::tempdir().unwrap();
    let before = tmp.path().join("earlier");
    earlier(&before, 10);
    let reference = run_warm(
        &later_space(5, 9, &[&before]),
        &tmp.path().join("ref"),
        false,
    )
    .unwrap()
    .records;

    let dir = tmp.path().join("resumed");
    run_warm(&later_space(5, 5, &[&before]), &dir, false).unwrap();
    // The earlier study goes on meanwhile; the resumed one reads it only as far as it did.
    earlier(&before, 14);
    let resumed = run_warm(&later_space(5, 9, &[&before]), &dir, true).unwrap();
    assert_eq!(search_configs(&resumed.records), search_configs(&reference));

    let cold = later_space(5, 12, &[]);
    let err = run_warm(&cold, &dir, true).unwrap_err().to_string();
    assert!(
        err.contains("warm-started from") && err.contains("no earlier study"),
        "{err}"
    );
}
