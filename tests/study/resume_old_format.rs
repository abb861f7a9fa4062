//! A study written by an earlier version (violations stored as text, the space fingerprinted
//! from `Debug` output) still resumes: nothing journaled changes, its violations read typed, and
//! the study continues with the same space file.

use assert_cmd::Command;
use infertune::record::{Outcome, Violation};
use infertune::study::journal;
use std::path::Path;

const FIXTURE: &str = "tests/fixtures/old-study";

#[test]
fn a_study_of_the_earlier_format_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("old-unfinished");
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["journal.jsonl", "study.json"] {
        std::fs::copy(Path::new(FIXTURE).join(file), dir.join(file)).unwrap();
    }
    let old_journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();

    let old = journal::read_records(&dir).unwrap();
    assert_eq!(old.len(), 3);
    assert!(matches!(old[2].outcome, Outcome::Pruned { .. }));
    assert_eq!(
        old[2].violations[0],
        Violation::Slo {
            slo: "ttft:p99<=800ms".parse().unwrap(),
            measured: Some(1053.0)
        }
    );

    let out = Command::cargo_bin("infertune")
        .unwrap()
        .args(["tune", "--resume", "--trials", "4", "--sampler", "random"])
        .args(["--study", "old-unfinished"])
        .arg("--space")
        .arg(Path::new(FIXTURE).join("space.yaml"))
        .arg("--results")
        .arg(tmp.path())
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "resume refused or failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let journal_text = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    assert!(
        journal_text.starts_with(&old_journal),
        "the journaled trials changed"
    );
    let records = journal::read_records(&dir).unwrap();
    assert!(records.len() > old.len(), "nothing was added");
    assert_eq!(&records[..3], &old[..]);
    let meta = journal::load_meta(&dir).unwrap();
    assert!(
        meta.space_fingerprint.starts_with("json-"),
        "the fingerprint was not upgraded: {}",
        meta.space_fingerprint
    );
}
