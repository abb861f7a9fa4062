//! `infertune check`.

/// Arguments of `infertune check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {}

/// Runs `infertune check`.
pub fn run(_args: CheckArgs) -> anyhow::Result<i32> {
    anyhow::bail!("`check` is not available yet")
}
