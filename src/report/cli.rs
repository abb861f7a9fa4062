//! `infertune report`.

/// Arguments of `infertune report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {}

/// Runs `infertune report`.
pub fn run(_args: ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("`report` is not available yet")
}
