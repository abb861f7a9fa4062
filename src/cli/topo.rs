//! `infertune topo`: shows NUMA nodes, accelerators and the binding candidates.

use crate::topo::render::{self, DeviceCandidates};
use crate::topo::{FixtureRunner, Topology};
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::PathBuf;

/// Arguments of `infertune topo`.
#[derive(clap::Args, Debug)]
pub(crate) struct TopoArgs {
    /// Print JSON (topology and candidates) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Read a captured host instead of this one: a folder holding `sys/…` and `proc/self/status`,
    /// and optionally `commands/` with tool transcripts (`$ <command>` first line, then its output).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Everything `infertune topo --json` prints.
#[derive(Serialize)]
struct Report<'a> {
    topology: &'a Topology,
    candidates: Vec<DeviceCandidates>,
}

/// Runs `infertune topo`.
pub fn run(args: TopoArgs) -> Result<i32> {
    let topo = match &args.root {
        None => Topology::discover()?,
        Some(root) => {
            anyhow::ensure!(root.is_dir(), "--root {}: not a folder", root.display());
            let commands = root.join("commands");
            let runner = if commands.is_dir() {
                FixtureRunner::from_dir(&commands)?
            } else {
                FixtureRunner::new()
            };
            Topology::from_root(root, &runner)
                .with_context(|| format!("reading the captured host under {}", root.display()))?
        }
    };
    let candidates = per_device(&topo)?;
    if args.json {
        let report = Report {
            topology: &topo,
            candidates,
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render::text(&topo, &candidates));
    }
    Ok(0)
}

/// `numa: auto` candidates for each accelerator, or once for the host when it has none.
fn per_device(topo: &Topology) -> Result<Vec<DeviceCandidates>> {
    if topo.accelerators.is_empty() {
        return Ok(vec![DeviceCandidates {
            device: None,
            node: None,
            candidates: topo.candidates(None, None)?,
        }]);
    }
    topo.accelerators
        .iter()
        .map(|a| {
            Ok(DeviceCandidates {
                device: Some(a.index),
                node: a.numa_node,
                candidates: topo.candidates(a.numa_node, None)?,
            })
        })
        .collect()
}
