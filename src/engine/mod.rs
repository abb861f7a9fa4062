//! Engine adapters: a config → the exact launch of that engine.

use crate::launch::LaunchSpec;
use crate::space::{Params, Space};
use std::path::PathBuf;

/// Resources allocated to one trial (port, devices, folder), so several can later run at once.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// Port the server must listen on.
    pub port: u16,
    /// Accelerator indices this trial may use (empty = engine default).
    pub devices: Vec<u32>,
    /// The trial's folder (logs, generated config files).
    pub workdir: PathBuf,
}

/// Renders a config into a launch for one engine.
pub trait Engine {
    /// Build the launch for `params` (a resolved config of `space`) in `slot`.
    fn launch_spec(
        &self,
        space: &Space,
        params: &Params,
        slot: &Slot,
    ) -> anyhow::Result<LaunchSpec>;
}

/// The adapter for an engine kind.
pub fn for_kind(kind: crate::space::EngineKind) -> anyhow::Result<Box<dyn Engine>> {
    anyhow::bail!("no adapter for {kind:?} yet")
}
