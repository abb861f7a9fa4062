//! Warm start: the trials of earlier studies of the same engine (`search.warm_start`,
//! `tune --warm-start`) read from their journals into the sampler's [`Prior`].
//!
//! Parameters are matched by name: a trial keeps only this study's parameters, and is dropped
//! when it lacks one this study always sets. A study continued later reads the same number of
//! records of each earlier study as when it started (journals only grow), so its sampler is
//! seeded alike and replays the same proposals.

use super::journal::{self, StudyMeta, META_FILE};
use crate::export::ReusedStudy;
use crate::record::TrialRecord;
use crate::sampler::{check_prior, Prior, PriorCheck};
use crate::space::error::Pos;
use crate::space::{ParamDef, ParamKind, StudySpec, WarmStartEntry};
use anyhow::bail;
use std::path::Path;

/// The seed of a study's sampler and what it was taken from.
#[derive(Debug, Default)]
pub struct WarmStart {
    /// The earlier trials, for the sampler.
    pub prior: Prior,
    /// What was taken from each earlier study, for `study.json` and the report.
    pub studies: Vec<ReusedStudy>,
}

/// The warm start of the study of `space` in `dir`: the trials of each study of
/// `space.search.warm_start`. Where `dir` already holds this study, each earlier study is read
/// only as far as it was when the study started.
pub fn load(space: &StudySpec, dir: &Path) -> anyhow::Result<WarmStart> {
    let started = journal::load_meta(dir)
        .map(|m| m.warm_start)
        .unwrap_or_default();
    let weight = space.search.transfer_weight;
    let mut out = WarmStart {
        prior: Prior {
            trials: Vec::new(),
            weight,
            refresh: None,
        },
        studies: Vec::new(),
    };
    for entry in &space.search.warm_start {
        let name = entry.study.display().to_string();
        let mut records = read_study(space, entry, dir)?;
        if let Some(before) = started.iter().find(|s| s.study == name) {
            records.truncate(before.read);
        }
        let read = records.len();
        let kept: Vec<TrialRecord> = records
            .into_iter()
            .filter_map(|r| matched(&space.parameters, r))
            .collect();
        out.studies.push(ReusedStudy {
            study: name,
            read,
            reused: kept.len(),
            dropped: read - kept.len(),
            failures: kept.iter().filter(|r| r.is_config_failure()).count(),
            weight,
        });
        out.prior.trials.extend(kept);
    }
    Ok(out)
}

/// What the report says of how `bo` weighs the warm start of the study `meta` in `dir` (space
/// `space`) against its own `records`, as at its next proposal; `None` without a warm start.
pub(crate) fn trust_text(
    space: &StudySpec,
    meta: &StudyMeta,
    dir: &Path,
    records: &[TrialRecord],
) -> Option<String> {
    let first = meta.warm_start.first()?;
    let mut reread = space.clone();
    reread.search.transfer_weight = first.weight;
    reread.search.warm_start = meta
        .warm_start
        .iter()
        .map(|s| WarmStartEntry {
            study: s.study.clone().into(),
            pos: Pos::default(),
        })
        .collect();
    Some(match load(&reread, dir) {
        Ok(warm) => check_prior(&reread, records, &warm.prior).to_string(),
        Err(e) => format!(
            "The earlier trials could not be read again to check them against this study's: \
             {e:#}."
        ),
    })
}

/// The note `tune` prints when the sampler's verdict on the warm start changes to `check`'s;
/// `twin_only` when the prior's trials are all the twin's predictions (`search.prior: twin`).
pub(crate) fn trust_note(check: &PriorCheck, twin_only: bool) -> String {
    let text = check.to_string();
    if twin_only {
        format!(
            "twin prior: {}",
            text.replace("the earlier trials", "the twin's predictions")
        )
    } else {
        format!("warm start: {text}")
    }
}

/// The records of the earlier study `entry`, refused with where the space names it when the
/// folder holds no study or a study of another engine.
fn read_study(
    space: &StudySpec,
    entry: &WarmStartEntry,
    this_study: &Path,
) -> anyhow::Result<Vec<TrialRecord>> {
    let dir = &entry.study;
    let (at, relative_to) = if entry.pos == Pos::default() {
        ("--warm-start".to_string(), "the current folder")
    } else {
        let p = entry.pos;
        let at = format!(
            "{}:{}:{}: search.warm_start",
            space.origin, p.line, p.column
        );
        (at, "the space file's folder")
    };
    if !dir.join(META_FILE).is_file() || !dir.join(journal::JOURNAL_FILE).is_file() {
        bail!(
            "{at}: {} holds no study (no {META_FILE} and {}); name a folder that `infertune \
             tune` wrote, e.g. results/<study>, relative to {relative_to}",
            dir.display(),
            journal::JOURNAL_FILE
        );
    }
    if same_folder(dir, this_study) {
        bail!(
            "{at}: {} is this study's own folder; name an earlier study, or continue this one \
             without it",
            dir.display()
        );
    }
    let meta = journal::load_meta(dir)?;
    if meta.engine != space.engine.kind {
        bail!(
            "{at}: {} is a study of engine {:?}, this space drives {:?}; a warm start learns \
             only from studies of the same engine",
            dir.display(),
            meta.engine,
            space.engine.kind
        );
    }
    journal::read_records(dir)
}

fn same_folder(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `record` with only the parameters of `params`, or `None` when it lacks one that this study
/// always searches (an unconditional parameter that is neither fixed nor derived).
fn matched(params: &[ParamDef], mut record: TrialRecord) -> Option<TrialRecord> {
    let searched = |p: &&ParamDef| {
        p.when.is_none() && !matches!(p.kind, ParamKind::Const { .. } | ParamKind::Derived { .. })
    };
    if params
        .iter()
        .filter(searched)
        .any(|p| !record.params.contains_key(&p.name))
    {
        return None;
    }
    record
        .params
        .retain(|name, _| params.iter().any(|p| &p.name == name));
    Some(record)
}

#[cfg(test)]
mod tests {
    use super::matched;
    use crate::record::{Outcome, Params, TrialRecord, Value};
    use crate::space::{ParamDef, ParamKind};

    fn record(params: &[(&str, i64)]) -> TrialRecord {
        let params: Params = params
            .iter()
            .map(|(k, v)| (k.to_string(), Value::Int(*v)))
            .collect();
        TrialRecord::new(0, params, Outcome::Feasible)
    }

    fn space() -> Vec<ParamDef> {
        let int = ParamKind::Int {
            low: 1,
            high: 9,
            step: None,
            log: false,
        };
        vec![
            ParamDef::new("seqs", int.clone()),
            ParamDef {
                when: Some("seqs > 2".into()),
                ..ParamDef::new("chunk", int)
            },
            ParamDef::new(
                "len",
                ParamKind::Const {
                    value: Value::Int(4),
                },
            ),
        ]
    }

    #[test]
    fn a_trial_keeps_only_this_studys_parameters() {
        let kept = matched(&space(), record(&[("seqs", 3), ("other", 1), ("len", 8)])).unwrap();
        let names: Vec<&str> = kept.params.keys().map(String::as_str).collect();
        assert_eq!(names, ["len", "seqs"]);
    }

    #[test]
    fn a_trial_without_a_searched_parameter_is_dropped() {
        assert!(matched(&space(), record(&[("other", 1)])).is_none());
        // Conditional, fixed and derived parameters may be missing.
        assert!(matched(&space(), record(&[("seqs", 1)])).is_some());
    }
}
