//! Integration tests of `study`, one module per concern, in one binary (one link).

#[path = "../kit/mod.rs"]
mod kit;

mod cli;
mod crash;
mod disk;
mod engine_version;
mod no_gain;
mod parallel;
mod per_device;
mod resume;
mod slurm_cluster;
mod slurm_cluster_faults;
mod start_gate;
mod terminate;
mod tune_loop;
mod upgrade;
mod verdict;
mod warm_start;
