//! Integration tests of `probe`, one module per concern, in one binary (one link).

#[path = "../kit/mod.rs"]
mod kit;

mod bench_sweep;
mod cli;
mod dataset;
mod errors;
mod precision;
mod shared_prefix;
mod stages;
mod trace;
