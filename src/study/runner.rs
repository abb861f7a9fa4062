//! The tune loop: baseline first, then sampled trials until the trial or time budget is spent,
//! then re-validation of the top configs and the baseline; the journal and its views are updated
//! after every trial, the report at the end.

use super::export::Exporter;
use super::interrupt::StopFlag;
use super::journal::{Journal, StudyMeta};
use super::observer::{EarlyEnd, Phase, TrialProgress};
use super::select::{self, Winner};
use super::trial::{Backends, TrialId, TrialRun, TrialRunner};
use super::{baseline, fingerprint, lock, open, redact};
use crate::export::{self, Access, ReusedStudy};
use crate::record::TrialRecord;
use crate::sampler::Sampler;
use crate::space::overrides::baseline_config;
use crate::space::StudySpec;
use anyhow::{bail, Context as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How to run a study.
#[derive(Clone, Debug)]
pub struct StudyOptions {
    /// The study folder, e.g. `results/<study>`.
    pub dir: PathBuf,
    /// Continue the study already in `dir`.
    pub resume: bool,
    /// Stop probes early once an SLO is certainly broken.
    pub prune: bool,
    /// Raised to stop (Ctrl-C): the current teardown finishes and the study exits resumable.
    pub stop: StopFlag,
    /// The earlier studies that seeded the sampler ([`super::warm::load`]); kept in `study.json`.
    pub warm_start: Vec<ReusedStudy>,
}

/// How a study ended.
#[derive(Clone, Debug)]
pub struct StudyResult {
    /// Every record of the journal.
    pub records: Vec<TrialRecord>,
    /// The winner, when a trial met every SLO.
    pub winner: Option<Winner>,
    /// True when the study stopped on a stop request (resume to continue).
    pub interrupted: bool,
    /// How many of `records` the journal held before this run (a continued study's).
    pub earlier: usize,
}

/// Run (or resume) the study of `space` in `options.dir`.
pub fn run(
    space: &StudySpec,
    sampler: &mut dyn Sampler,
    backends: Backends<'_>,
    options: &StudyOptions,
) -> anyhow::Result<StudyResult> {
    if space.search.trials == 0 {
        bail!(
            "{}: search.trials is 0; a study needs at least 1 trial (the baseline)",
            space.origin
        );
    }
    if options.resume {
        open::check_resumable(&options.dir)?;
    }
    let objective = super::preflight::objective(space)?;
    let meta = StudyMeta {
        warm_start: options.warm_start.clone(),
        ..meta_for(space, &options.dir)
    };
    let access = Access::of(space);
    access.create_dir(&options.dir)?;
    let _lock = lock::acquire(&options.dir)?;
    // Before any port is chosen: servers that a killed earlier run of this study left running.
    for note in crate::launch::leftover::reclaim(&options.dir, space.launch.stop_grace) {
        backends.observer.note(&note);
    }
    let (journal, records) = open::open(
        &options.dir,
        space,
        &meta,
        options.resume,
        backends.observer,
    )?;
    let earlier = records.len();
    let originals_done = records.iter().filter(|r| r.repeat_of.is_none()).count() as u32;
    backends
        .observer
        .started(space.search.trials, originals_done);
    let mut study = Study {
        space,
        backends,
        sampler,
        runner: TrialRunner {
            space,
            backends,
            objective: &objective,
            dir: &options.dir,
            stop: options.stop.clone(),
            prune: options.prune,
        },
        exporter: Exporter::new(space, backends.engine, &meta, &options.dir),
        clock: Clock {
            spent_before: records.iter().map(|r| r.wall_s).sum(),
            start: Instant::now(),
            budget: space.search.budget,
        },
        journal,
        records,
        stop: options.stop.clone(),
    };
    let mut interrupted = !study.search()?;
    if !interrupted {
        interrupted = !study.revalidate()?;
    }
    if interrupted {
        // The interrupted trial is not recorded; its log is scrubbed all the same.
        let trial_dir = study.runner.trial_dir(study.next_number());
        redact::server_log(&trial_dir, &space.secrets)?;
    }
    backends.observer.finished();
    export::write_trials_csv(&options.dir, &study.records, access)?;
    let winner = study.exporter.write(&study.records)?;
    match study.exporter.write_report(&study.records) {
        Ok(written) => {
            if let Some(note) = &written.note {
                backends.observer.note(note);
            }
        }
        Err(e) => backends
            .observer
            .warning(&format!("cannot write the report: {e:#}")),
    }
    Ok(StudyResult {
        records: study.records,
        winner,
        interrupted,
        earlier,
    })
}

/// The identity of a study of `space` in `dir`.
pub(crate) fn meta_for(space: &StudySpec, dir: &Path) -> StudyMeta {
    StudyMeta {
        name: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| space.name.clone()),
        space_origin: space.origin.clone(),
        space_fingerprint: fingerprint::fingerprint(space),
        seed: space.search.seed,
        sampler: space.search.sampler.clone(),
        engine: space.engine.kind,
        objective: space.objective.clone(),
        warm_start: Vec::new(),
    }
}

struct Clock {
    spent_before: f64,
    start: Instant,
    budget: Option<Duration>,
}

impl Clock {
    fn elapsed(&self) -> f64 {
        self.spent_before + self.start.elapsed().as_secs_f64()
    }

    fn left(&self) -> Option<Duration> {
        self.budget
            .map(|b| Duration::from_secs_f64((b.as_secs_f64() - self.elapsed()).max(0.0)))
    }

    /// True when less than `reserve` seconds of the budget are left.
    fn exhausted(&self, reserve: f64) -> bool {
        self.left()
            .is_some_and(|left| left.as_secs_f64() <= reserve)
    }
}

struct Study<'a> {
    space: &'a StudySpec,
    backends: Backends<'a>,
    sampler: &'a mut dyn Sampler,
    runner: TrialRunner<'a>,
    exporter: Exporter<'a>,
    clock: Clock,
    journal: Journal,
    records: Vec<TrialRecord>,
    stop: StopFlag,
}

impl Study<'_> {
    /// The search phase; false when interrupted.
    fn search(&mut self) -> anyhow::Result<bool> {
        let search = &self.space.search;
        loop {
            let originals = select::originals(&self.records);
            if originals.len() as u32 >= search.trials {
                return Ok(true);
            }
            if self.stop.is_raised() {
                return Ok(false);
            }
            let configs = search.revalidate_top + u32::from(search.baseline);
            let reserve = self.mean_launched_wall() * f64::from(configs * search.repeats);
            if self.clock.exhausted(reserve) {
                self.backends
                    .observer
                    .ended_early(&EarlyEnd::BudgetSpent(Phase::Search));
                return Ok(true);
            }
            let needs_baseline = search.baseline && !originals.iter().any(|r| r.baseline);
            let queued = originals.iter().filter(|r| !r.baseline).count();
            let proposed = if needs_baseline {
                baseline_config(self.space)
            } else if let Some(overlay) = search.enqueue.get(queued) {
                let mut config = baseline_config(self.space);
                config.extend(overlay.clone());
                config
            } else {
                match self.sampler.ask(self.backends.check, &originals) {
                    Ok(p) => p,
                    Err(e) => {
                        self.backends
                            .observer
                            .ended_early(&EarlyEnd::SamplerFailed(format!("{e:#}")));
                        return Ok(true);
                    }
                }
            };
            let id = TrialId {
                number: self.next_number(),
                baseline: needs_baseline,
                repeat_of: None,
            };
            let record = match self.backends.check.resolve(&proposed) {
                Err(r) => self.runner.rejected(id, proposed, r.rule, r.message),
                Ok(params) => match self.runner.run(id, params)? {
                    TrialRun::Done(record) => *record,
                    TrialRun::Interrupted => return Ok(false),
                },
            };
            if id.baseline {
                baseline::check_started(&record, &self.runner.trial_dir(id.number))?;
            }
            self.append(record)?;
        }
    }

    /// Re-run the top configs and the baseline `repeats` times each; false when interrupted.
    fn revalidate(&mut self) -> anyhow::Result<bool> {
        let search = &self.space.search;
        if search.revalidate_top == 0 || search.repeats == 0 {
            return Ok(true);
        }
        let numbers = select::to_revalidate(&self.records, search.revalidate_top as usize);
        let configs: Vec<TrialRecord> = numbers
            .iter()
            .filter_map(|n| self.records.iter().find(|r| r.number == *n).cloned())
            .collect();
        for original in configs {
            let done = self
                .records
                .iter()
                .filter(|r| r.repeat_of == Some(original.number))
                .count() as u32;
            for _ in done..search.repeats {
                if self.stop.is_raised() {
                    return Ok(false);
                }
                if self.clock.exhausted(0.0) {
                    self.backends
                        .observer
                        .ended_early(&EarlyEnd::BudgetSpent(Phase::Revalidation));
                    return Ok(true);
                }
                let id = TrialId {
                    number: self.next_number(),
                    baseline: false,
                    repeat_of: Some(original.number),
                };
                match self.runner.run(id, original.params.clone())? {
                    TrialRun::Done(record) => self.append(*record)?,
                    TrialRun::Interrupted => return Ok(false),
                }
            }
        }
        Ok(true)
    }

    /// Journal `record` (its secrets masked, and its server log's), then update the views.
    fn append(&mut self, record: TrialRecord) -> anyhow::Result<()> {
        let secrets = &self.space.secrets;
        let record = redact::record(record, secrets);
        redact::server_log(&self.runner.trial_dir(record.number), secrets)?;
        let stored = self.journal.append(&record)?;
        self.records.push(stored);
        let dir = self.runner.dir;
        export::write_trials_csv(dir, &self.records, Access::of(self.space))?;
        if let Err(e) = self.exporter.write(&self.records) {
            self.backends
                .observer
                .warning(&format!("cannot export the current best: {e:#}"));
        }
        let best = select::ranked(&self.records).first().and_then(|r| r.value);
        let last = self.records.last().context("a record was just appended")?;
        self.backends.observer.trial(&TrialProgress {
            record: last,
            metric: &self.space.objective.metric,
            best,
            budget_left: self.clock.left(),
        });
        Ok(())
    }

    fn next_number(&self) -> u32 {
        self.records.iter().map(|r| r.number + 1).max().unwrap_or(0)
    }

    fn mean_launched_wall(&self) -> f64 {
        let walls: Vec<f64> = self
            .records
            .iter()
            .filter(|r| r.ready_s.is_some())
            .map(|r| r.wall_s)
            .collect();
        if walls.is_empty() {
            0.0
        } else {
            walls.iter().sum::<f64>() / walls.len() as f64
        }
    }
}
