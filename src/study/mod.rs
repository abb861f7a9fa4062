//! Studies: the planner, the dispatch loop over an executor's slots, the journal, re-validation,
//! warm start and the winner's exports.
//!
//! [`run`] drives one study: baseline first, then sampled configs until the trial or time budget
//! is spent, then re-validation of the top configs. Trials run through the executor layer
//! ([`crate::exec`]); every side effect sits behind a trait ([`crate::exec::Backends`] and the
//! [`StudyObserver`]), so the loop runs against fakes in tests and never writes to the terminal
//! itself.

mod clock;
pub(crate) mod deploy;
pub mod dispatch;
pub mod export;
pub mod journal;
pub mod lock;
pub mod observer;
mod open;
pub mod plan;
mod run;
mod running;
pub mod warm;

pub use observer::StudyObserver;
pub use run::{expert_config, expert_note, run, StudyOptions, StudyResult};
