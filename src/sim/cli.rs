//! `infertune sim eval|serve`.

/// `infertune sim` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum SimCommand {
    /// Evaluate configs in virtual time.
    Eval,
    /// Serve an OpenAI-compatible API with modelled timings.
    Serve,
}

/// Runs `infertune sim`.
pub fn run(_cmd: SimCommand) -> anyhow::Result<i32> {
    anyhow::bail!("`sim` is not available yet")
}
