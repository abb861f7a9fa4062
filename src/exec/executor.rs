//! Executors: where a trial runs. The local executor runs it on this host's slots (devices,
//! ports, NUMA); the Slurm executor submits it as a job that runs it on a node. The dispatch
//! loop above sees only the trait.

use super::devices::DevicePool;
use super::trial_dir::TrialDir;
use crate::record::{InFlight, TrialRecord};

/// Runs trials of one study.
pub trait TrialExecutor: Sync {
    /// Trials it runs at once.
    fn slots(&self) -> u32;

    /// The accelerators its trials share (empty: trials are not pinned to devices).
    fn device_pool(&self) -> DevicePool;

    /// Run `in_flight` (its config resolved) on `assignment` to its end; called on a thread of
    /// its own, several at once.
    fn run(&self, in_flight: InFlight, assignment: &Assignment) -> anyhow::Result<TrialRun>;

    /// Called by the dispatch loop when it starts nothing more until one of `in_flight`
    /// finishes. Executors of real trials need do nothing; one that runs trials in virtual time
    /// ([`super::FakeExecutor`]) finishes the earliest of them then.
    fn idle(&self, _in_flight: &[InFlight]) {}

    /// The record a trial left in flight by an earlier run of the tuner finished with after
    /// that run stopped, if any (a Slurm job runs on without its tuner).
    fn finished_record(&self, _trial: &TrialDir) -> Option<TrialRecord> {
        None
    }
}

/// What became of a trial.
pub enum TrialRun {
    /// It ran to a record.
    Done(Box<TrialRecord>),
    /// The user interrupted it; nothing is recorded and a resume reruns it.
    Interrupted,
    /// Its Slurm job failed twice (node failure, time limit, preemption, cancelled, refused):
    /// nothing is recorded, since the config is not to blame.
    Lost(String),
}

/// Where a trial runs: its slot and the accelerators it was given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assignment {
    /// Slot number, from 0 (one per trial in flight).
    pub slot: u32,
    /// Accelerator indices (empty: the engine's default).
    pub devices: Vec<u32>,
}
