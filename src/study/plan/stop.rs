//! Why a study stops running trials, typed (argmin's `TerminationReason` is the model), and
//! the two rules that stop it on a trial that ended: a baseline that cannot start, and Slurm
//! jobs lost in a row.

use crate::record::{FailureKind, Outcome, TrialRecord};
use std::fmt;

/// Trials lost in a row after which the study stops: the cluster, not the configs, is failing.
pub(super) const MOST_LOST_IN_A_ROW: u32 = 6;

/// Why a study stopped running trials.
#[derive(Clone, Debug, PartialEq)]
pub enum StopReason {
    /// Every trial of the plan ran: the search's and the re-validation's.
    TrialsDone,
    /// The time budget is spent: a phase ended before its plan was through.
    BudgetSpent,
    /// The sampler could not propose another config (its error): the search ended there.
    SamplerFailed(String),
    /// Trials were lost to failed Slurm jobs `lost` times in a row, the last for `last`.
    JobsLost {
        /// How many in a row.
        lost: u32,
        /// Why the last one was lost.
        last: String,
    },
    /// The baseline (the engine's defaults) failed at start for a reason other than memory,
    /// so every config would.
    BaselineCannotStart {
        /// Its failure class.
        kind: FailureKind,
        /// Its root-cause line.
        message: String,
    },
    /// A stop was requested (Ctrl-C or SIGTERM): the study is resumable.
    Interrupted,
}

impl StopReason {
    /// True for the reasons a study fails with: it cannot go on as it is, whatever runs next.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            StopReason::JobsLost { .. } | StopReason::BaselineCannotStart { .. }
        )
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::TrialsDone => f.write_str("every trial of the plan ran"),
            StopReason::BudgetSpent => f.write_str("the time budget is spent"),
            StopReason::SamplerFailed(error) => {
                write!(f, "the sampler could not propose another config: {error}")
            }
            StopReason::JobsLost { lost, last } => write!(
                f,
                "{lost} Slurm jobs in a row failed as jobs, the last: {last}; check the \
                 cluster and the executor section, then resume"
            ),
            StopReason::BaselineCannotStart { kind, message } => write!(
                f,
                "the baseline (the engine's defaults) failed at start, so every config would: \
                 {kind}: {message}\nthe engine or the space is broken (a parameter or flag \
                 name, launch.command, extra_args, the model path), not the config; fix it and \
                 run the same command again"
            ),
            StopReason::Interrupted => {
                f.write_str("interrupted; continue with the same command and --resume")
            }
        }
    }
}

impl std::error::Error for StopReason {}

/// The stop when `record`, the baseline's, failed at start for a reason other than memory
/// (the defaults may not fit the card while smaller configs do); `None` otherwise.
pub(super) fn baseline_cannot_start(record: &TrialRecord) -> Option<StopReason> {
    let Outcome::Failed { kind, message } = &record.outcome else {
        return None;
    };
    if !record.is_baseline() || record.ready_s.is_some() || *kind == FailureKind::Oom {
        return None;
    }
    Some(StopReason::BaselineCannotStart {
        kind: *kind,
        message: message.clone(),
    })
}
