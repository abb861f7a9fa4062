//! A digital twin of a serving engine: `sim eval` (virtual time) and `sim serve` (HTTP, real
//! time).
//!
//! **This is a model, not a measurement.** It reproduces the mechanisms that make an engine's
//! launch flags matter — continuous batching under `max_num_seqs` and a token budget, chunked
//! vs whole-prompt prefill, prefix caching, a KV cache of `block_size` blocks with preemption
//! and recompute, a roofline step time with tensor-parallel all-reduces, per-step host overhead
//! changed by NUMA binding, start-up time and start-up failures — with constants calibrated to
//! published measurements (seeds 000, 002, 003, 004). Absolute numbers are estimates; the
//! shape of the landscape is what it is for. Assumptions: `src/sim/MODEL.md`; measured errors:
//! `docs/benchmarks.md`.

pub mod cache;
pub mod calibrate;
pub mod chat;
pub mod closed_loop;
pub mod config;
pub mod core;
pub mod cost;
pub mod eval;
pub(crate) mod knobs;
pub mod memory;
pub mod numa;
pub(crate) mod power;
pub(crate) mod profiles;
pub mod requests;
pub mod scheduler;
pub mod serve;
mod stands_for;
mod track;
pub mod validate;

pub use config::Deployment;
pub use profiles::CardScale;
pub use stands_for::modelled_vllm;

pub use eval::{eval, evaluate, Evaluation};
