//! `infertune launch`.

/// Arguments of `infertune launch`.
#[derive(clap::Args, Debug)]
pub struct LaunchArgs {}

/// Runs `infertune launch`.
pub fn run(_args: LaunchArgs) -> anyhow::Result<i32> {
    anyhow::bail!("`launch` is not available yet")
}
