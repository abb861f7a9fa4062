//! The tune loop: baseline first, then sampled trials until the trial or time budget is spent,
//! then re-validation of the top configs and the baseline; the journal and its views are updated
//! after every trial, the report at the end.

use super::clock::Clock;
use super::dispatch::{dispatch, DispatchSink as _};
use super::export::Exporter;
use super::journal::StudyMeta;
use super::observer::StudyObserver;
use super::plan::{PlanSpec, Planner, StopReason};
use super::running::RunningStudy;
use super::{lock, open};
use crate::engine::expert::{ExpertConfig, NoExpert};
use crate::exec::{pending, Backends, EarlyStops, StopFlag, TrialDir, TrialObserver};
use crate::export::{self, ReusedStudy};
use crate::record::{Params, TrialRecord};
use crate::sampler::Sampler;
use crate::score::select::{counts_as_config, Winner};
use crate::space::{Feasibility, StudySpec};
use anyhow::bail;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How to run a study.
#[derive(Clone, Debug)]
pub struct StudyOptions {
    /// The study folder, e.g. `results/<study>`.
    pub dir: PathBuf,
    /// Continue the study already in `dir`.
    pub resume: bool,
    /// Stop probes early once an SLO is certainly broken.
    pub prune: bool,
    /// Stop probes early on a server signal (thrashing, KV cache pinned full, fatal log).
    pub server_stop: bool,
    /// Raised to stop (Ctrl-C): the current teardown finishes and the study exits resumable.
    pub stop: StopFlag,
    /// The earlier studies that seeded the sampler ([`super::warm::load`]); kept in `study.json`.
    pub warm_start: Vec<ReusedStudy>,
    /// Configs the twin ranks best ([`crate::prior::twin::view`]), run after the expert settings.
    pub twin_first: Vec<Params>,
}

/// How a study ended.
#[derive(Clone, Debug)]
pub struct StudyResult {
    /// Every record of the journal.
    pub records: Vec<TrialRecord>,
    /// The winner, when a trial met every SLO.
    pub winner: Option<Winner>,
    /// Why the study stopped running trials ([`StopReason::Interrupted`]: resume to continue).
    pub stopped: StopReason,
    /// How many of `records` the journal held before this run (a continued study's).
    pub earlier: usize,
}

/// The expert config of `space` that runs first after its baseline, for this host with its
/// cores and memory shared by `slots` trials; or why there is none.
pub fn expert_config(
    space: &StudySpec,
    check: &dyn Feasibility,
    slots: u32,
) -> Result<ExpertConfig, NoExpert> {
    crate::engine::expert_config(space, check, &crate::topo::slot_share(slots))
}

/// What an expert config sets, in one line.
pub fn expert_note(expert: &ExpertConfig) -> String {
    let set: Vec<String> = expert
        .choices
        .iter()
        .map(|c| format!("{}={}", c.param, c.value))
        .collect();
    format!(
        "expert config (search.prior: expert), run after the baseline: {}",
        set.join(" ")
    )
}

/// Run (or resume) the study of `space` in `options.dir`.
pub fn run(
    space: &StudySpec,
    sampler: &mut dyn Sampler,
    backends: Backends<'_, dyn StudyObserver>,
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
    let objective = crate::exec::objective(space)?;
    let meta = StudyMeta {
        warm_start: options.warm_start.clone(),
        ..meta_for(space, &options.dir)
    };
    let access = space.file_access();
    access.create_dir(&options.dir)?;
    let _lock = lock::acquire(&options.dir)?;
    let early = EarlyStops {
        slo: options.prune,
        server: options.server_stop,
    };
    let trial_observer: &dyn TrialObserver = backends.observer;
    let executor = crate::exec::build(
        space,
        &options.dir,
        backends.with_observer(trial_observer),
        &objective,
        options.stop.clone(),
        early,
    )?;
    let (journal, records) = open::open(
        &options.dir,
        space,
        &meta,
        options.resume,
        backends.observer,
    )?;
    let earlier = records.len();
    let journaled: Vec<u32> = records.iter().map(|r| r.id.number).collect();
    // Search trials in flight when an earlier run stopped run again first, as they were; a
    // re-validation repeat is counted again instead.
    let (reruns, repeats): (Vec<_>, Vec<_>) = pending::left_in_flight(&options.dir, &journaled)
        .into_iter()
        .partition(|p| p.id.kind.repeat_of().is_none());
    for repeat in repeats {
        pending::clear(&TrialDir::of(&options.dir, repeat.id.number));
    }
    let originals_done = records.iter().filter(|r| counts_as_config(r)).count() as u32;
    backends
        .observer
        .started(space.search.trials, originals_done);
    let mut experts = match expert_config(space, backends.check, executor.slots()) {
        Ok(expert) => {
            backends.observer.note(&expert_note(&expert));
            vec![expert.params]
        }
        Err(_) => Vec::new(),
    };
    experts.extend(options.twin_first.iter().cloned());
    let mut planner = Planner::new(
        PlanSpec::of(space, experts),
        sampler,
        backends.check,
        reruns.clone(),
    );
    let mut study = RunningStudy {
        space,
        backends,
        dir: &options.dir,
        exporter: Exporter::new(space, backends.engine, &meta, &options.dir),
        clock: Clock {
            // Trials overlap when several run at once.
            spent_before: records.iter().map(|r| r.wall_s).sum::<f64>()
                / f64::from(executor.slots()),
            start: Instant::now(),
            budget: space.search.budget,
        },
        journal,
        records,
        prior_trust: None,
    };
    // A trial whose Slurm job finished after the tuner stopped is journaled as it ended.
    for rerun in &reruns {
        let number = rerun.id.number;
        if let Some(record) = executor.finished_record(&TrialDir::of(&options.dir, number)) {
            backends.observer.note(&format!(
                "trial {number}: adopted the record its Slurm job wrote after the tuner stopped"
            ));
            planner.forget_rerun(number);
            study.append(record, &planner)?;
        }
    }
    let stopped = dispatch(&mut planner, executor.as_ref(), &options.stop, &mut study)?;
    backends.observer.finished();
    export::write_trials_csv(&options.dir, &study.records, access)?;
    let winner = study.exporter.write(&study.records)?;
    if let Err(e) = study.exporter.write_deploy(&study.records, None) {
        backends
            .observer
            .warning(&format!("cannot write the deployment files: {e:#}"));
    }
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
        stopped,
        earlier,
    })
}

/// The identity of a study of `space` in `dir`.
pub(crate) fn meta_for(space: &StudySpec, dir: &Path) -> StudyMeta {
    StudyMeta {
        format: super::journal::STUDY_FORMAT,
        name: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| space.name.clone()),
        space_origin: space.origin.clone(),
        space_fingerprint: space.fingerprint(),
        seed: space.search.seed,
        sampler: space.search.sampler.clone(),
        engine: space.engine.kind,
        objective: space.objective.clone(),
        warm_start: Vec::new(),
        verdict: space.search.verdict_target(),
    }
}
