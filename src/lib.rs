//! infertune: finds the best launch configuration for an LLM inference server.
//!
//! Data flow: `cli` → validated [`space::StudySpec`] → `study` loop: planner (sampler, space
//! check) → `exec` executor: engine launch spec → supervisor → probe → objective → back to the
//! study's journal. See README.md.

pub mod cli;
pub mod engine;
pub mod exec;
pub mod export;
pub mod fleet;
pub mod launch;
pub mod prior;
pub mod probe;
pub mod record;
pub mod report;
pub mod sampler;
pub mod score;
pub mod sim;
pub mod space;
pub mod study;
pub mod topo;
pub mod util;
