//! The executor a study's space asks for (`executor.kind`), matched once here, with what an
//! earlier run of the study left behind cleaned up first.

use super::backends::Backends;
use super::executor::TrialExecutor;
use super::interrupt::StopFlag;
use super::local::{EarlyStops, LocalExecutor};
use super::slurm::{Jobs, SlurmExecutor};
use crate::score::Objective;
use crate::space::executor::ExecutorKind;
use crate::space::StudySpec;
use crate::topo::Topology;
use std::path::Path;

/// The executor of `space`'s study in `dir`, its trials judged by `objective`, stopped by
/// `stop`. Slurm jobs and servers an earlier run left behind are cancelled and stopped first,
/// each told to the observer of `backends`.
pub fn build<'a>(
    space: &'a StudySpec,
    dir: &'a Path,
    backends: Backends<'a>,
    objective: &'a Objective,
    stop: StopFlag,
    early: EarlyStops,
) -> anyhow::Result<Box<dyn TrialExecutor + 'a>> {
    let executor: Box<dyn TrialExecutor + 'a> = match space.executor.kind {
        ExecutorKind::Local => Box::new(
            LocalExecutor::new(space, backends, objective, dir, stop, early)
                .on_host(pinned_topology(space)),
        ),
        ExecutorKind::Slurm => {
            let jobs = Jobs::of(space, dir, early)?;
            // Jobs a killed earlier run left are cancelled first, so none still runs a trial.
            for note in jobs.cancel_leftovers() {
                backends.observer.note(&note);
            }
            Box::new(SlurmExecutor::new(jobs, slurm_slots(space), stop))
        }
    };
    // Before any port is chosen: servers that a killed earlier run of this study left running.
    for note in crate::launch::leftover::reclaim(dir, space.launch.stop_grace) {
        backends.observer.note(&note);
    }
    Ok(executor)
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
