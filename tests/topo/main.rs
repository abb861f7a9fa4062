//! Integration tests of `topo`, one module per concern, in one binary (one link).

#[path = "../kit/mod.rs"]
mod kit;

mod candidates;
mod cli;
mod discovery;
