//! Executors: where a trial runs. The local executor runs it on this host's slots (devices,
//! ports, NUMA); the Slurm executor submits it as a job that runs it on a node. The study's
//! executor kind is matched once, in [`build`]; the dispatch loop sees only the trait.

mod local;
pub mod slurm;

use super::slot_numa::NumaHome;
use super::trial::{Assignment, TrialRun, TrialRunner};
use crate::exec::DevicePool;
use crate::record::{Params, TrialId, TrialRecord};
use crate::space::executor::ExecutorKind;
use crate::space::StudySpec;
use crate::topo::Topology;
use std::path::Path;

/// Runs trials of one study.
pub(crate) trait TrialExecutor: Sync {
    /// Trials it runs at once.
    fn slots(&self) -> u32;

    /// The accelerators its trials share (empty: trials are not pinned to devices).
    fn device_pool(&self) -> DevicePool;

    /// Run trial `id` of `params` (a resolved config) on `assignment` to its end; called on a thread
    /// of its own, several at once.
    fn run(&self, id: TrialId, params: Params, assignment: &Assignment)
        -> anyhow::Result<TrialRun>;

    /// The record a trial left in flight by an earlier run of the tuner finished with after
    /// that run stopped, if any (a Slurm job runs on without its tuner).
    fn finished_record(&self, _trial_dir: &Path) -> Option<TrialRecord> {
        None
    }
}

/// The executor of `space`'s study in `dir`, running trials with `runner`; `notes` hears of
/// what it cleaned up from an earlier run (Slurm jobs left behind).
pub(crate) fn build<'a>(
    space: &'a StudySpec,
    dir: &Path,
    runner: TrialRunner<'a>,
    notes: &dyn Fn(&str),
) -> anyhow::Result<Box<dyn TrialExecutor + 'a>> {
    Ok(match space.executor.kind {
        ExecutorKind::Local => {
            let topology = pinned_topology(space);
            let pool = DevicePool::of(space.placement.devices.as_deref(), topology.as_ref());
            let runner = TrialRunner {
                numa_home: NumaHome::of(space, topology),
                ..runner
            };
            Box::new(local::LocalExecutor::new(
                runner,
                space.search.parallel,
                pool,
            ))
        }
        ExecutorKind::Slurm => {
            let jobs = slurm::Jobs::of(space, dir)?;
            // Jobs a killed earlier run left are cancelled first, so none still runs a trial.
            for note in jobs.cancel_leftovers() {
                notes(&note);
            }
            Box::new(slurm::SlurmExecutor::new(
                jobs,
                slurm_slots(space),
                runner.stop.clone(),
            ))
        }
    })
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
