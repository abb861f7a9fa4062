//! Studies: the tune loop, its journal, objective and SLOs, budget, re-validation and export.

pub mod cli;
pub mod objective;
pub mod record;

pub use record::{Outcome, TrialRecord};
