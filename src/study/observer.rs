//! What a study tells its caller while it runs: progress, notes and warnings. The study never
//! writes to the terminal; the command line renders these events (a bar, one line per trial).

use crate::exec::{Silent, TrialObserver};
use crate::record::{Params, TrialId, TrialRecord};
use std::time::Duration;

/// Watches a study; its trials' notes and warnings come through [`TrialObserver`]. Every
/// method has a no-op default, so an observer implements only what it shows.
pub trait StudyObserver: TrialObserver {
    /// The search begins: `planned` search trials in all, `done` of them already in the journal.
    fn started(&self, _planned: u32, _done: u32) {}

    /// A trial was handed to the executor (its server is about to start).
    fn trial_started(&self, _id: TrialId, _params: &Params) {}

    /// A trial was recorded in the journal.
    fn trial(&self, _progress: &TrialProgress<'_>) {}

    /// A phase ended before its plan was through.
    fn ended_early(&self, _why: &EarlyEnd) {}

    /// The study stops running trials (finished or interrupted).
    fn finished(&self) {}
}

impl StudyObserver for Silent {}

/// Where a study stands after a trial.
#[derive(Clone, Copy, Debug)]
pub struct TrialProgress<'a> {
    /// The record just appended.
    pub record: &'a TrialRecord,
    /// The objective's metric name.
    pub metric: &'a str,
    /// The best value so far, when a trial met every SLO.
    pub best: Option<f64>,
    /// What is left of the time budget, when there is one.
    pub budget_left: Option<Duration>,
}

/// The phases of a study.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Baseline, queued and sampled configs.
    Search,
    /// Repeats of the top configs.
    Revalidation,
}

/// Why a phase ended before its plan was through.
#[derive(Clone, Debug, PartialEq)]
pub enum EarlyEnd {
    /// The time budget is spent.
    BudgetSpent(Phase),
    /// The sampler could not propose another config (its error, causes included); the search
    /// ends.
    SamplerFailed(String),
}
