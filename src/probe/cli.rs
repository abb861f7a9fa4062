//! `infertune bench`.

/// Arguments of `infertune bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {}

/// Runs `infertune bench`.
pub fn run(_args: BenchArgs) -> anyhow::Result<i32> {
    anyhow::bail!("`bench` is not available yet")
}
