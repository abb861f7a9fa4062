//! Studies: the tune loop, its journal, objective and SLOs, budget, pruning, re-validation and
//! export of the winner.
//!
//! [`run`] drives one study: baseline first, then sampled configs until the trial or time budget
//! is spent, then re-validation of the top configs. Every side effect sits behind a trait
//! ([`Backends`]: space check, engine, launcher, prober, observer), so the loop runs against fakes
//! in tests and never writes to the terminal itself.

mod baseline;
mod clock;
pub mod compare;
mod deploy;
mod dispatch;
mod executor;
mod exit;
pub mod export;
pub mod fingerprint;
pub(crate) mod interrupt;
pub mod journal;
pub mod lock;
pub mod observer;
mod open;
mod pending;
pub mod plan;
pub mod preflight;
pub mod prober;
pub mod prune;
pub(crate) mod redact;
mod run;
pub mod select;
mod slot_numa;
mod slots;
pub mod trial;
pub mod warm;
pub(crate) mod watch;

pub use interrupt::StopFlag;
pub use observer::Silent;
pub use observer::StudyObserver;
pub(crate) use prober::HttpProber;
pub use prober::Prober;

pub use executor::slurm::run_in_job;
pub use run::{expert_config, expert_note, run, StudyOptions, StudyResult};
pub use trial::Backends;
