//! The study journal: `journal.jsonl`, one [`TrialRecord`] a line, append-only, synced per record,
//! and `study.json`, the identity of the study that `--resume` checks.

use super::observer::StudyObserver;
use crate::export::ReusedStudy;
use crate::record::TrialRecord;
use crate::space::objective::ObjectiveSpec;
use crate::space::{EngineKind, VerdictTarget};
use crate::util::atomic::{write_atomic, Access};
use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions, Permissions};
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// File name of the journal inside a study folder.
pub(crate) const JOURNAL_FILE: &str = "journal.jsonl";
/// File name of the study identity inside a study folder.
pub(crate) const META_FILE: &str = "study.json";

/// The format of a study folder's files (`study.json`, `journal.jsonl`, `pending.json`) that
/// this version writes and reads; a study of another format is refused.
pub const STUDY_FORMAT: u32 = 2;

/// What a study was started with; a resume must match it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudyMeta {
    /// [`STUDY_FORMAT`] of the version that wrote the study (0: written before formats were
    /// numbered).
    #[serde(default)]
    pub format: u32,
    /// Study name (the folder name).
    pub name: String,
    /// Where the space came from (its file path).
    pub space_origin: String,
    /// Fingerprint of everything in the space except the search budget (see [`StudySpec::fingerprint`](crate::space::StudySpec::fingerprint)).
    pub space_fingerprint: String,
    /// Sampler seed.
    pub seed: u64,
    /// Sampler name.
    pub sampler: String,
    /// Engine driven.
    pub engine: EngineKind,
    /// The objective, so views and reports need no space file.
    pub objective: ObjectiveSpec,
    /// The earlier studies that seeded the sampler (see [`super::warm`]); part of the study's
    /// identity, since a resumed study must replay the same proposals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warm_start: Vec<ReusedStudy>,
    /// The verdict's target (see
    /// [`SearchSettings::verdict_target`](crate::space::SearchSettings::verdict_target)), so the
    /// report can say why a gain is known less well; absent from studies written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<VerdictTarget>,
}

impl StudyMeta {
    /// Why `self` (a stored study) cannot be resumed with `now`; `None` when it can.
    pub(crate) fn mismatch(&self, now: &StudyMeta) -> Option<String> {
        if self.space_fingerprint != now.space_fingerprint {
            return Some(format!(
                "the search space changed since the study started (it was {}); resuming would mix results of two spaces. Restore the space, or start a new study with --study NAME",
                self.space_origin
            ));
        }
        if self.seed != now.seed {
            return Some(format!(
                "the study was started with seed {}, not {}; resume with --seed {}",
                self.seed, now.seed, self.seed
            ));
        }
        if !same_warm_start(&self.warm_start, &now.warm_start) {
            return Some(format!(
                "the study was warm-started from {}, not {}; resume with the same \
                 search.warm_start, transfer weight and --warm-start",
                warm_text(&self.warm_start),
                warm_text(&now.warm_start)
            ));
        }
        if self.sampler != now.sampler {
            return Some(format!(
                "the study was started with sampler `{}`, not `{}`; resume with --sampler {}",
                self.sampler, now.sampler, self.sampler
            ));
        }
        None
    }
}

/// True when two warm starts seed the sampler alike: the same studies, records and weights.
fn same_warm_start(a: &[ReusedStudy], b: &[ReusedStudy]) -> bool {
    let key = |s: &ReusedStudy| (s.study.clone(), s.read, s.weight.to_bits());
    a.iter().map(key).eq(b.iter().map(key))
}

/// The studies of a warm start, for messages.
fn warm_text(studies: &[ReusedStudy]) -> String {
    if studies.is_empty() {
        return "no earlier study".into();
    }
    let names: Vec<String> = studies
        .iter()
        .map(|s| format!("{} ({} trials, weight {})", s.study, s.read, s.weight))
        .collect();
    names.join(", ")
}

/// Read `study.json` of `dir`.
pub fn load_meta(dir: &Path) -> anyhow::Result<StudyMeta> {
    let (path, text) = read_study_file(dir, META_FILE)?;
    let format = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .map(|v| {
            v.get("format")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        });
    if let Some(format) = format.filter(|f| *f != u64::from(STUDY_FORMAT)) {
        bail!(
            "{} is a study of format {format}, and this infertune reads format {STUDY_FORMAT} \
             only: start a new study (--study NAME), or use the infertune that wrote it",
            path.display()
        );
    }
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a valid study file", path.display()))
}

/// Write `study.json` of `dir` atomically.
pub(crate) fn save_meta(dir: &Path, meta: &StudyMeta) -> anyhow::Result<()> {
    write_atomic(
        &dir.join(META_FILE),
        &serde_json::to_string_pretty(meta)?,
        Access::Shared,
    )
}

/// The journal, open for appending.
pub(crate) struct Journal {
    path: PathBuf,
    file: File,
}

impl Journal {
    /// Open (or create) the journal of `dir` and return the records it holds. A torn last line
    /// (a crash during an append) is a warning to `observer` and is cut off, so the next append
    /// starts on a clean line. With [`Access::Owner`], the journal is (made) readable by its
    /// owner only.
    pub fn open(
        dir: &Path,
        access: Access,
        observer: &dyn StudyObserver,
    ) -> anyhow::Result<(Journal, Vec<TrialRecord>)> {
        let path = dir.join(JOURNAL_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let parsed = parse(&text, &path)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(access.file_mode())
            .open(&path)
            .with_context(|| format!("cannot open {} for appending", path.display()))?;
        if access == Access::Owner {
            file.set_permissions(Permissions::from_mode(access.file_mode()))
                .with_context(|| format!("cannot make {} private", path.display()))?;
        }
        if let Some(torn) = &parsed.torn {
            observer.warning(&format!(
                "{}:{}: ignoring an incomplete last record (the tuner stopped while writing it): {}",
                path.display(),
                torn.line,
                excerpt(&torn.text)
            ));
            file.set_len(parsed.valid_len as u64)
                .with_context(|| format!("cannot cut the torn line off {}", path.display()))?;
            file.sync_all()?;
        }
        Ok((Journal { path, file }, parsed.records))
    }

    /// Append one record and sync it to disk before returning. Returns the record as a reader
    /// of the journal will see it (floats round-tripped through JSON), so a resumed study and an
    /// uninterrupted one hold identical records. A failed append (a full disk) is cut off
    /// again, so the journal never keeps part of a record.
    pub fn append(&mut self, record: &TrialRecord) -> anyhow::Result<TrialRecord> {
        let mut line = serde_json::to_string(record)?;
        let stored = serde_json::from_str(&line)?;
        line.push('\n');
        let before = self.file.metadata().map(|m| m.len());
        let appended = self
            .file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data());
        if let Err(e) = appended {
            // Shrinking needs no space; should it fail too, the next open cuts the torn line.
            if let Ok(len) = before {
                let _ = self.file.set_len(len);
            }
            return Err(e).with_context(|| format!("cannot append to {}", self.path.display()));
        }
        Ok(stored)
    }
}

/// Read the records of the journal in `dir` without modifying it (a torn last line is skipped).
pub fn read_records(dir: &Path) -> anyhow::Result<Vec<TrialRecord>> {
    let (path, text) = read_study_file(dir, JOURNAL_FILE)?;
    Ok(parse(&text, &path)?.records)
}

/// The path and text of the study file `name` in `dir`.
fn read_study_file(dir: &Path, name: &str) -> anyhow::Result<(PathBuf, String)> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {} (is {} a study folder?)",
            path.display(),
            dir.display()
        )
    })?;
    Ok((path, text))
}

struct Torn {
    line: usize,
    text: String,
}

struct Parsed {
    records: Vec<TrialRecord>,
    valid_len: usize,
    torn: Option<Torn>,
}

fn parse(text: &str, path: &Path) -> anyhow::Result<Parsed> {
    let mut records = Vec::new();
    let mut offset = 0;
    let mut lines = text.split_inclusive('\n').enumerate().peekable();
    while let Some((index, raw)) = lines.next() {
        let is_last = lines.peek().is_none();
        let complete = raw.ends_with('\n');
        let body = raw.trim_end();
        if body.is_empty() && complete {
            offset += raw.len();
            continue;
        }
        let parsed = serde_json::from_str::<TrialRecord>(body);
        // Only the last line can lack its newline; a crash mid-append leaves exactly that.
        if !complete || (is_last && parsed.is_err()) {
            return Ok(Parsed {
                records,
                valid_len: offset,
                torn: Some(Torn {
                    line: index + 1,
                    text: body.to_string(),
                }),
            });
        }
        match parsed {
            Ok(record) => records.push(record),
            Err(e) => bail!(
                "{}:{}: not a trial record ({e}); the journal is damaged in the middle: remove or repair that line, then resume",
                path.display(),
                index + 1
            ),
        }
        offset += raw.len();
    }
    Ok(Parsed {
        records,
        valid_len: offset,
        torn: None,
    })
}

fn excerpt(text: &str) -> String {
    let cut: String = text.chars().take(80).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Silent;
    use crate::record::Outcome;

    #[test]
    fn a_study_of_another_format_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let meta = serde_json::json!({
            "name": "old", "space_origin": "x.yaml", "space_fingerprint": "json-0",
            "seed": 0, "sampler": "bo", "engine": "vllm",
            "objective": {"metric": "output_throughput"},
        });
        std::fs::write(dir.path().join(META_FILE), meta.to_string()).unwrap();
        let e = load_meta(dir.path()).unwrap_err().to_string();
        assert!(e.contains("a study of format 0"), "{e}");
        assert!(e.contains("start a new study"), "{e}");
        let mut current = meta;
        current["format"] = STUDY_FORMAT.into();
        std::fs::write(dir.path().join(META_FILE), current.to_string()).unwrap();
        assert_eq!(load_meta(dir.path()).unwrap().format, STUDY_FORMAT);
    }

    #[test]
    fn a_record_names_its_kind_and_a_repeat_its_original() {
        use crate::record::{TrialId, TrialKind};
        let id = TrialId {
            number: 7,
            kind: TrialKind::Repeat { of: 3 },
        };
        let repeat = TrialRecord::of(id, Default::default(), Outcome::Feasible);
        let json = serde_json::to_value(&repeat).unwrap();
        assert_eq!(
            (json["kind"].as_str(), json["of"].as_u64()),
            (Some("repeat"), Some(3))
        );
        let back: TrialRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back.id, id);
        let mut baseline = record(0);
        baseline.id.kind = TrialKind::Baseline;
        let baseline = serde_json::to_value(baseline).unwrap();
        assert_eq!(baseline["kind"], "baseline");
        assert!(baseline.get("of").is_none());
    }

    fn record(number: u32) -> TrialRecord {
        TrialRecord {
            value: Some(1.5),
            score: Some(1.5),
            ..TrialRecord::new(number, Default::default(), Outcome::Feasible)
        }
    }

    #[test]
    fn a_torn_last_line_is_cut_off_before_the_next_append() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut j, none) = Journal::open(tmp.path(), Access::Shared, &Silent).unwrap();
        assert!(none.is_empty());
        j.append(&record(0)).unwrap();
        drop(j);
        let path = tmp.path().join(JOURNAL_FILE);
        let good = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{good}\n{{\"number\":1,\"par")).unwrap();
        assert_eq!(read_records(tmp.path()).unwrap(), vec![record(0)]);
        let (mut j, records) = Journal::open(tmp.path(), Access::Shared, &Silent).unwrap();
        assert_eq!(records, vec![record(0)]);
        j.append(&record(1)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert_eq!(
            read_records(tmp.path()).unwrap(),
            vec![record(0), record(1)]
        );
    }

    #[test]
    fn a_complete_but_unreadable_last_line_is_also_tolerated() {
        let tmp = tempfile::tempdir().unwrap();
        let line = serde_json::to_string(&record(0)).unwrap();
        std::fs::write(tmp.path().join(JOURNAL_FILE), format!("{line}\ngarbage\n")).unwrap();
        let (_, records) = Journal::open(tmp.path(), Access::Shared, &Silent).unwrap();
        assert_eq!(records, vec![record(0)]);
        let text = std::fs::read_to_string(tmp.path().join(JOURNAL_FILE)).unwrap();
        assert_eq!(text, format!("{line}\n"));
    }
}
