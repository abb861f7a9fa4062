//! Integration tests of `launch`, one module per concern, in one binary (one link).

#[path = "../kit/mod.rs"]
mod kit;

mod classify;
mod engine_adapters;
mod engine_mindie;
mod hostile;
mod overrides;
mod supervisor;
