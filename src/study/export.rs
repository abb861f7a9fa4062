//! The study's side of its exports: it chooses the winner, rebuilds the winner's launch and hands
//! both, with the records, to `export` and `report`: after every trial, at the end of a study,
//! and for `infertune export` / `infertune report` on a study folder.

use super::journal::{self, StudyMeta};
use super::lock;
use crate::engine::{Engine, Slot};
use crate::exec::{LaunchSpec, TrialDir};
use crate::export::{self, Baseline, Best, Format, Stat, StudyFacts};
use crate::record::{Outcome, TrialRecord};
use crate::report::{self, StudyView, TwinPredictions};
use crate::score::select::{choose_winner, mean_ci95, Winner};
use crate::score::Objective;
use crate::space::{redact, StudySpec};
use crate::util::atomic::Access;
use anyhow::Context as _;
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Writes the exports of a study folder.
pub struct Exporter<'a> {
    space: &'a StudySpec,
    engine: &'a dyn Engine,
    meta: &'a StudyMeta,
    dir: &'a Path,
    version: OnceCell<Option<String>>,
}

impl<'a> Exporter<'a> {
    /// An exporter for the study in `dir`.
    pub fn new(
        space: &'a StudySpec,
        engine: &'a dyn Engine,
        meta: &'a StudyMeta,
        dir: &'a Path,
    ) -> Self {
        Exporter {
            space,
            engine,
            meta,
            dir,
            version: OnceCell::new(),
        }
    }

    /// Write `best.sh`, `best.json` (and the MindIE patch) for the current winner of `records`;
    /// returns the winner, or `None` (writing nothing) while no trial is feasible.
    pub fn write(&self, records: &[TrialRecord]) -> anyhow::Result<Option<Winner>> {
        self.with_best(
            self.space,
            None,
            records,
            |record| self.launch(record),
            |best| export::write_best(self.dir, best),
        )
    }

    /// Write the deployment files of `formats` (every one that applies to the engine when
    /// `None`) for the current winner of `records`; returns the winner and the paths written,
    /// or `None` (writing nothing) while no trial is feasible.
    pub fn write_deploy(
        &self,
        records: &[TrialRecord],
        formats: Option<&[Format]>,
    ) -> anyhow::Result<Option<(Winner, Vec<PathBuf>)>> {
        // A simulator study deploys as the engine the simulator modelled.
        let modelled = crate::sim::modelled_vllm(self.space);
        let (space, engine, tuned_on) = match &modelled {
            Some((space, note)) => (
                space,
                crate::engine::for_kind(space.engine.kind),
                Some(note.as_str()),
            ),
            None => (self.space, self.engine, None),
        };
        let kind = space.engine.kind;
        let has_image = engine.image(space.rules.platform.as_deref()).is_some();
        let applying: Vec<Format> = Format::ALL
            .into_iter()
            .filter(|f| f.applies_to(kind, has_image))
            .collect();
        let formats = formats.unwrap_or(&applying);
        if formats.is_empty() {
            let chosen = choose_winner(records, self.meta.objective.direction);
            return Ok(chosen.map(|w| (w, Vec::new())));
        }
        let deployment = OnceCell::new();
        let mut written = Vec::new();
        let chosen = self.with_best(
            space,
            tuned_on,
            records,
            |record| {
                let workdir = TrialDir::of(self.dir, record.id.number).absolute()?.path();
                let mut own = record.clone();
                if tuned_on.is_some() {
                    // What the modelled engine's space leaves out (a modelled NUMA binding).
                    own.params
                        .retain(|name, _| space.parameters.iter().any(|p| &p.name == name));
                }
                let mut built = super::deploy::deployment(space, engine, &own, workdir)?;
                if tuned_on.is_some() && built.devices.is_empty() {
                    // The modelled cards: one per tensor-parallel rank.
                    let ranks = record
                        .params
                        .get("tensor_parallel_size")
                        .and_then(|v| v.as_i64())
                        .unwrap_or(1);
                    built.devices = (0..u32::try_from(ranks).unwrap_or(1).max(1)).collect();
                }
                Ok(deployment.get_or_init(|| built).launch.clone())
            },
            |best| {
                let deployment = deployment.get().context("the deployment was just built")?;
                written = export::write_deploy(self.dir, best, deployment, formats)?;
                Ok(())
            },
        )?;
        Ok(chosen.map(|w| (w, written)))
    }

    /// Run `write` on the current winner of `records` as [`Best`] of `space` (the study's, or
    /// the engine a simulator study stands for, `tuned_on` saying so), its launch built by
    /// `launch`; returns the winner, or `None` (running nothing) while no trial is feasible.
    fn with_best(
        &self,
        space: &StudySpec,
        tuned_on: Option<&str>,
        records: &[TrialRecord],
        launch: impl FnOnce(&TrialRecord) -> anyhow::Result<LaunchSpec>,
        write: impl FnOnce(&Best<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<Option<Winner>> {
        let Some(chosen) = choose_winner(records, self.meta.objective.direction) else {
            return Ok(None);
        };
        let winner = winner_of(&chosen, records)?;
        let launch = launch(winner.record)?;
        let version = self.version.get_or_init(|| self.space.engine_version());
        let best = Best {
            study: facts(self.meta),
            space,
            winner: &winner,
            launch: &launch,
            version: version.as_deref(),
            tuned_on,
        };
        write(&best)?;
        Ok(Some(chosen))
    }

    /// Write `report.md`, `report.html` and `plots/*.svg` of `records`; returns the paths of the
    /// two reports. The winner's command has the space's secrets masked.
    pub(crate) fn write_report(&self, records: &[TrialRecord]) -> anyhow::Result<WrittenReport> {
        let access = self.space.file_access();
        let trust = super::warm::trust_text(self.space, self.meta, self.dir, records);
        let twin = crate::exec::objective(self.space)
            .ok()
            .and_then(|objective| crate::prior::twin::check(self.space, &objective, records));
        write_report_of(
            self.dir,
            self.meta,
            records,
            access,
            trust,
            twin,
            |record| export::exec_line(&redact::launch(&self.launch(record)?, &self.space.secrets)),
        )
    }

    /// The launch of `record`, in its trial folder.
    fn launch(&self, record: &TrialRecord) -> anyhow::Result<LaunchSpec> {
        let number = record.id.number;
        let workdir = TrialDir::of(self.dir, number).absolute()?.path();
        let slot = Slot {
            port: self.space.launch.port,
            devices: Vec::new(),
            extra_ports: Vec::new(),
            workdir,
        };
        self.engine
            .launch_spec(self.space, &record.params, &slot)
            .with_context(|| format!("cannot rebuild the launch of trial {number}"))
    }
}

/// Write the report of the study folder `dir` from its journal and `study.json`; the winner's
/// launch line is rebuilt from the study's space file, and left out when that no longer loads
/// (the report is then readable by its owner only, since whether the space holds a secret is
/// unknown). Refused while a tuner runs the study (see [`lock`]).
pub(crate) fn write_report(dir: &Path) -> anyhow::Result<WrittenReport> {
    let meta = journal::load_meta(dir)?;
    let _lock = lock::acquire_shared(dir)?;
    let records = journal::read_records(dir)?;
    match StudySpec::load(Path::new(&meta.space_origin), crate::engine::rule_pack) {
        Ok(space) => {
            let engine = crate::engine::for_kind(space.engine.kind);
            Exporter::new(&space, engine, &meta, dir).write_report(&records)
        }
        Err(e) => write_report_of(dir, &meta, &records, Access::Owner, None, None, move |_| {
            Err(e.context("cannot load the study's space"))
        }),
    }
}

/// Write the report of `records` with `access` and what `warm_start_trust` says of the warm
/// start; `command` gives the winner's launch line (left out, with a note, when it fails).
fn write_report_of(
    dir: &Path,
    meta: &StudyMeta,
    records: &[TrialRecord],
    access: Access,
    warm_start_trust: Option<String>,
    twin: Option<TwinPredictions>,
    command: impl FnOnce(&TrialRecord) -> anyhow::Result<String>,
) -> anyhow::Result<WrittenReport> {
    let objective = Objective::new(&meta.objective)?;
    let winner = match choose_winner(records, meta.objective.direction) {
        Some(chosen) => Some(winner_of(&chosen, records)?),
        None => None,
    };
    let mut note = None;
    let command = winner.as_ref().and_then(|w| match command(w.record) {
        Ok(line) => Some(line),
        Err(e) => {
            note = Some(format!("the report leaves out the winner's command: {e:#}"));
            None
        }
    });
    let secondary = records
        .iter()
        .filter_map(|r| Some((r.id.number, objective.secondary_value(&r.metrics)?)))
        .collect();
    let partial = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Pruned { .. }))
        .filter_map(|r| {
            let metrics = crate::score::judged_metrics(&objective, &r.metrics, &r.stages);
            Some((r.id.number, objective.judge(metrics).value?))
        })
        .collect();
    let view = StudyView {
        study: facts(meta),
        records,
        winner,
        command,
        secondary,
        partial,
        warm_start_trust,
        twin,
        between_starts: crate::score::runs::measured_noise(records),
    };
    let (markdown, html) = report::write(dir, &view, access)?;
    Ok(WrittenReport {
        markdown,
        html,
        note,
    })
}

/// The report files written, and what the reader should know about them.
pub(crate) struct WrittenReport {
    /// `report.md`.
    pub markdown: PathBuf,
    /// `report.html`.
    pub html: PathBuf,
    /// Why something was left out, when it was.
    pub note: Option<String>,
}

/// The study's facts, as the exports state them.
fn facts(meta: &StudyMeta) -> StudyFacts<'_> {
    StudyFacts {
        name: &meta.name,
        engine: meta.engine,
        sampler: &meta.sampler,
        seed: meta.seed,
        objective: &meta.objective,
        warm_start: &meta.warm_start,
        verdict: meta.verdict,
    }
}

/// The chosen winner as the exports take it: its trial among `records` and its statistics.
fn winner_of<'r>(
    chosen: &Winner,
    records: &'r [TrialRecord],
) -> anyhow::Result<export::WinnerFacts<'r>> {
    let s = &chosen.summary;
    let record = records
        .iter()
        .find(|r| r.id.number == s.number)
        .context("the winner is missing from the journal")?;
    let runs: Vec<&TrialRecord> = std::iter::once(record)
        .chain(records.iter().filter(|r| r.repeat_of() == Some(s.number)))
        .collect();
    Ok(export::WinnerFacts {
        record,
        values: s.values.clone(),
        runs: s.runs,
        mean: s.mean,
        ci95: s.ci95,
        trials: runs.iter().map(|r| r.id.number).collect(),
        metrics: metric_stats(&runs),
        baseline: chosen.baseline.as_ref().map(|b| Baseline {
            trial: b.number,
            mean: b.mean,
            ci95: b.ci95,
            runs: b.values.len(),
        }),
        gain_pct: chosen.gain_pct,
        gain_ci95: chosen.gain_ci95,
        tied: chosen.tied.clone(),
    })
}

/// Every metric of the probed `runs`: its mean and 95% CI over the runs that measured it.
fn metric_stats(runs: &[&TrialRecord]) -> BTreeMap<String, Stat> {
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.value.is_some()) {
        for (name, v) in &run.metrics {
            values.entry(name.clone()).or_default().push(*v);
        }
    }
    values
        .into_iter()
        .map(|(name, v)| {
            let (mean, ci95) = mean_ci95(&v);
            let stat = Stat {
                mean,
                ci95,
                runs: v.len(),
            };
            (name, stat)
        })
        .collect()
}
