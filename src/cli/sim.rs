//! `infertune sim eval|serve|validate|calibrate`.

use super::sim_calibrate::{self, CalibrateArgs};
use super::sim_eval::{self, EvalArgs};
use super::sim_serve::{self, ServeArgs};
use super::sim_validate::{self, ValidateArgs};

/// `infertune sim` subcommands.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum SimCommand {
    /// Evaluate configs in virtual time.
    Eval(Box<EvalArgs>),
    /// Serve an OpenAI-compatible API with modelled timings.
    Serve(Box<ServeArgs>),
    /// Compare the simulator with measurements (a truth CSV) row by row.
    Validate(Box<ValidateArgs>),
    /// Fit a card profile's compute, bandwidth and host speed to measurements (a truth CSV).
    Calibrate(Box<CalibrateArgs>),
}

/// Runs `infertune sim`.
pub fn run(cmd: SimCommand) -> anyhow::Result<i32> {
    match cmd {
        SimCommand::Eval(args) => sim_eval::run(&args),
        SimCommand::Serve(args) => sim_serve::run(*args),
        SimCommand::Validate(args) => sim_validate::run(&args),
        SimCommand::Calibrate(args) => sim_calibrate::run(&args),
    }
}
