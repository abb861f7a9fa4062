//! Engine adapters: a config → the exact launch of that engine.

mod assemble;
pub mod catalogue;
mod custom;
mod flag_cli;
mod json_path;
mod llamacpp;
mod mindie;
mod numa;
mod render;
mod sglang;
mod sim;
mod vllm;

pub use custom::Custom;
pub use llamacpp::Llamacpp;
pub use mindie::Mindie;
pub use sglang::Sglang;
pub use sim::Sim;
pub use vllm::Vllm;

use crate::launch::LaunchSpec;
use crate::record::Params;
use crate::space::{EngineKind, StudySpec};
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
    /// Further ports reserved for the server ([`Engine::extra_ports`] of them), e.g. MindIE's
    /// inter-process communication port.
    pub extra_ports: Vec<u16>,
}

/// Renders a config into a launch for one engine.
pub trait Engine: Sync {
    /// Build the launch for `params` (a resolved config of `space`) in `slot`.
    fn launch_spec(
        &self,
        space: &StudySpec,
        params: &Params,
        slot: &Slot,
    ) -> anyhow::Result<LaunchSpec>;

    /// The Prometheus counter (on the server's `/metrics`) of output tokens the engine
    /// generated, when it has one; trials record its increase over the probe.
    fn output_token_counter(&self) -> Option<&'static str> {
        None
    }

    /// Ports the server needs besides its serving port, so trials in flight never share one.
    fn extra_ports(&self) -> usize {
        0
    }
}

/// The adapter for an engine kind.
pub fn for_kind(kind: EngineKind) -> anyhow::Result<Box<dyn Engine>> {
    Ok(match kind {
        EngineKind::Vllm => Box::new(Vllm),
        EngineKind::Sglang => Box::new(Sglang),
        EngineKind::Mindie => Box::new(Mindie),
        EngineKind::Llamacpp => Box::new(Llamacpp),
        EngineKind::Custom => Box::new(Custom),
        EngineKind::Sim => Box::new(Sim),
    })
}
