//! llama.cpp: `llama-server -m MODEL --host H --port P --alias NAME … --metrics`.

use super::flag_cli::{build, CliShape, ModelArg};
use super::render::BoolStyle;
use super::{Engine, Slot};
use crate::launch::LaunchSpec;
use crate::record::Params;
use crate::space::StudySpec;

/// The llama.cpp server adapter. The served name always goes in `--alias` (without it
/// `/v1/models` lists the GGUF's own name); `--metrics` is always on, so trials can read
/// `llamacpp:tokens_predicted_total`. Booleans are `store_true` flags (name a parameter
/// `no_kv_offload` to tune `--no-kv-offload`). Readiness needs no special case: `/health`
/// answers 503 while the model loads and 200 once it serves.
pub struct Llamacpp;

const SHAPE: CliShape = CliShape {
    label: "llama.cpp",
    default_command: &["llama-server"],
    model: ModelArg::Flag("-m"),
    served_name_flag: "--alias",
    always_name: true,
    required_flags: &["--metrics"],
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

    fn output_token_counter(&self) -> Option<&'static str> {
        Some("llamacpp:tokens_predicted_total")
    }
}
