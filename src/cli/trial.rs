//! `infertune trial run`: one trial of a study, run where it is started (inside a Slurm job the
//! tuner submitted); the tuner journals the record it writes into the study folder.

use crate::exec::interrupt;
use crate::exec::{Backends, HttpProber, Silent};
use crate::launch::ProcessLauncher;
use crate::space::StudySpec;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Subcommands of `infertune trial`.
#[derive(Subcommand, Debug)]
pub(crate) enum TrialCommand {
    /// Run one trial that the tuner marked in flight in the study folder, on the devices the
    /// Slurm job holds, and write its record there (used by the Slurm executor).
    Run(TrialRunArgs),
}

/// Arguments of `infertune trial run`.
#[derive(Args, Debug)]
pub(crate) struct TrialRunArgs {
    /// The study's search space file.
    #[arg(long)]
    pub space: PathBuf,
    /// The study folder (on a filesystem the tuner shares).
    #[arg(long)]
    pub dir: PathBuf,
    /// The trial's number.
    #[arg(long)]
    pub number: u32,
    /// The slot the tuner gave the trial.
    #[arg(long, default_value_t = 0)]
    pub slot: u32,
}

/// Runs `infertune trial …`.
pub(crate) fn run(command: TrialCommand) -> anyhow::Result<i32> {
    let TrialCommand::Run(args) = command;
    let (space, _notes) = StudySpec::load_for_host(&args.space, crate::engine::rule_pack)?;
    let stop = interrupt::on_stop_signal()?;
    let engine = crate::engine::for_kind(space.engine.kind);
    let prober = HttpProber::new()?;
    let launcher = ProcessLauncher::new(crate::engine::log_patterns());
    let backends: Backends = Backends {
        check: &space,
        engine,
        launcher: &launcher,
        prober: &prober,
        observer: &Silent,
    };
    let recorded =
        crate::exec::run_in_job(&space, backends, &args.dir, args.number, args.slot, stop)?;
    Ok(if recorded { 0 } else { 3 })
}
