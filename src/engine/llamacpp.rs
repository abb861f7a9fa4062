//! llama.cpp: `llama-server -m MODEL --host H --port P …`.

use super::flag_cli::{build, CliShape, ModelArg};
use super::render::BoolStyle;
use super::{Engine, Slot};
use crate::launch::LaunchSpec;
use crate::record::Params;
use crate::space::StudySpec;

/// The llama.cpp server adapter. The served name goes in `--alias`; booleans are
/// `store_true` flags (name a parameter `no_mmap` to tune `--no-mmap`).
pub struct Llamacpp;

const SHAPE: CliShape = CliShape {
    label: "llama.cpp",
    default_command: &["llama-server"],
    model: ModelArg::Flag("-m"),
    served_name_flag: "--alias",
    bools: BoolStyle::StoreTrue,
};

impl Engine for Llamacpp {
    fn launch_spec(
        &self,
        space: &StudySpec,
        params: &Params,
        slot: &Slot,
    ) -> anyhow::Result<LaunchSpec> {
        build(&SHAPE, space, params, slot)
    }
}
