//! `infertune topo`.

/// Arguments of `infertune topo`.
#[derive(clap::Args, Debug)]
pub struct TopoArgs {}

/// Runs `infertune topo`.
pub fn run(_args: TopoArgs) -> anyhow::Result<i32> {
    anyhow::bail!("`topo` is not available yet")
}
