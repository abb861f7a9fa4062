//! `infertune tune` and `infertune export`.

/// Arguments of `infertune tune`.
#[derive(clap::Args, Debug)]
pub struct TuneArgs {}

/// Arguments of `infertune export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {}

/// Runs `infertune tune`.
pub fn tune(_args: TuneArgs) -> anyhow::Result<i32> {
    anyhow::bail!("`tune` is not available yet")
}

/// Runs `infertune export`.
pub fn export(_args: ExportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("`export` is not available yet")
}
