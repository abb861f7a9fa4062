//! `infertune plan`: how a model is served on a number of GPUs for a target load — the
//! tensor-parallel size of each server, how many servers (replicas) and each server's scheduler
//! knobs — searched on the twin (`sim`), ranked, exported as the chosen plan's launches and, on
//! request, checked by running the best plans on the real engine.
//!
//! Not the study's planner (`study::plan`, what trial runs next) nor the winner's deployment
//! files (`export`): a fleet is the set of servers a plan puts on the GPUs.

pub mod choice;
mod export;
mod figures;
mod knobs;
mod report;
mod search;
mod twin;
mod verify;
mod workload;

pub use export::write_exports;
pub use figures::{Figures, Plan, Ranking, Shape, Slos};
pub use report::{plan_row, write_report};
pub use search::{plan, PlanRequest, Planned};
pub use verify::{verify, Verified};
pub use workload::{replica_workload, TargetLoad};
