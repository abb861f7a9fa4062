//! Integration tests of `e2e`, one module per concern, in one binary (one link).

#[path = "../kit/mod.rs"]
mod kit;

mod agent_sim;
mod deploy_exports;
mod energy_sim;
mod llamacpp;
mod plan_sim;
mod real_engine;
mod report_render;
mod secrets;
mod sim;
mod twin_prior;
mod vllm;
mod warm_start_sim;
mod xinference;
