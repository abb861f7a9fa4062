//! Integration tests of `space`, one module per concern, in one binary (one link).

#[path = "../kit/mod.rs"]
mod kit;

mod catalogue;
mod check_cli;
mod errors;
mod fuzz;
mod hostile;
mod llamacpp_rules;
mod parser_words;
mod resolve;
mod seed004;
mod twin_default;
mod warm_start;
mod workload_file;
