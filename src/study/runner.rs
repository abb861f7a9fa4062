//! The tune loop: baseline first, then sampled trials until the trial or time budget is spent,
//! then re-validation of the top configs and the baseline; the journal and its views are updated
//! after every trial, the report at the end.

use super::clock::Clock;
use super::dispatch::Study;
use super::export::Exporter;
use super::flights::Flights;
use super::interrupt::StopFlag;
use super::journal::StudyMeta;
use super::remote::Jobs;
use super::select::counts_as_config;
use super::select::Winner;
use super::slot_numa::NumaHome;
use super::trial::{Backends, TrialRunner};
use super::{fingerprint, lock, open, pending};
use crate::exec::DevicePool;
use crate::export::{self, Access, ReusedStudy};
use crate::record::TrialRecord;
use crate::sampler::Sampler;
use crate::space::executor::ExecutorKind;
use crate::space::StudySpec;
use crate::topo::Topology;
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
    // Jobs a killed earlier run left are cancelled first, so none still runs a trial below.
    let study_slots = match space.executor.kind {
        ExecutorKind::Local => space.search.parallel,
        ExecutorKind::Slurm => slurm_slots(space),
    };
    let topology = pinned_topology(space);
    let flights = match space.executor.kind {
        ExecutorKind::Local => Flights::new(
            space.search.parallel,
            DevicePool::of(space.placement.devices.as_deref(), topology.as_ref()),
            None,
        ),
        ExecutorKind::Slurm => {
            let jobs = Jobs::of(space, &options.dir)?;
            for note in jobs.cancel_leftovers() {
                backends.observer.note(&note);
            }
            Flights::new(slurm_slots(space), DevicePool::new(Vec::new()), Some(jobs))
        }
    };
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
    let journaled: Vec<u32> = records.iter().map(|r| r.number).collect();
    // Search trials in flight when an earlier run stopped run again first, as they were; a
    // re-validation repeat is counted again instead.
    let (reruns, repeats): (Vec<_>, Vec<_>) = pending::left_in_flight(&options.dir, &journaled)
        .into_iter()
        .partition(|p| p.repeat_of.is_none());
    for repeat in repeats {
        pending::clear(&options.dir.join(format!("trial-{}", repeat.number)));
    }
    let originals_done = records.iter().filter(|r| counts_as_config(r)).count() as u32;
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
            numa_home: match space.executor.kind {
                ExecutorKind::Local => NumaHome::of(space, topology),
                ExecutorKind::Slurm => None,
            },
        },
        exporter: Exporter::new(space, backends.engine, &meta, &options.dir),
        clock: Clock {
            // Trials overlap when several run at once.
            spent_before: records.iter().map(|r| r.wall_s).sum::<f64>()
                / f64::from(study_slots.max(1)),
            start: Instant::now(),
            budget: space.search.budget,
        },
        journal,
        records,
        stop: options.stop.clone(),
        flights,
        reruns,
        lost_in_a_row: 0,
        prior_trust: None,
    };
    let mut interrupted = !study.search()?;
    if !interrupted {
        interrupted = !study.revalidate()?;
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

/// Jobs queued or running at once: `executor.max_jobs`, else `search.parallel` when it asks
/// for more than one, else 8.
fn slurm_slots(space: &StudySpec) -> u32 {
    space
        .executor
        .max_jobs
        .unwrap_or(match space.search.parallel {
            0 | 1 => 8,
            n => n,
        })
}

/// The host topology when trials of `space` are pinned to accelerators (`launch.devices`, or
/// several trials at once: every accelerator of the host); `None` otherwise (trials unpinned).
fn pinned_topology(space: &StudySpec) -> Option<Topology> {
    if space.placement.devices.is_none() && space.search.parallel <= 1 {
        return None;
    }
    Topology::discover().ok()
}
