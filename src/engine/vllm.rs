//! vLLM: `vllm serve MODEL --host H --port P --max-num-seqs 256 --no-enable-prefix-caching …`.

use super::flag_cli::{build, CliShape, ModelArg};
use super::render::BoolStyle;
use super::{Engine, Slot};
use crate::launch::LaunchSpec;
use crate::record::Params;
use crate::space::StudySpec;

/// The vLLM adapter. Flags are spelled as vLLM's argument parser reads them; booleans use
/// `--x` / `--no-x`. With a `launch.command` that does not end in `serve` (e.g.
/// `python -m vllm.entrypoints.openai.api_server`) the model goes in `--model`.
pub struct Vllm;

const SHAPE: CliShape = CliShape {
    label: "vLLM",
    default_command: &["vllm", "serve"],
    model: ModelArg::PositionalAfterServe("--model"),
    served_name_flag: "--served-model-name",
    always_name: false,
    required_flags: &[],
    bools: BoolStyle::Negatable,
};

impl Engine for Vllm {
    fn launch_spec(
        &self,
        space: &StudySpec,
        params: &Params,
        slot: &Slot,
    ) -> anyhow::Result<LaunchSpec> {
        build(&SHAPE, space, params, slot)
    }

    fn output_token_counter(&self) -> Option<&'static str> {
        Some("vllm:generation_tokens_total")
    }
}
