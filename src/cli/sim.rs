//! `infertune sim eval|serve`.

use super::sim_eval::{self, EvalArgs};
use super::sim_serve::{self, ServeArgs};

/// `infertune sim` subcommands.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum SimCommand {
    /// Evaluate configs in virtual time.
    Eval(Box<EvalArgs>),
    /// Serve an OpenAI-compatible API with modelled timings.
    Serve(Box<ServeArgs>),
}

/// Runs `infertune sim`.
pub fn run(cmd: SimCommand) -> anyhow::Result<i32> {
    match cmd {
        SimCommand::Eval(args) => sim_eval::run(&args),
        SimCommand::Serve(args) => sim_serve::run(*args),
    }
}
