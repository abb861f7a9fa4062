//! SGLang: `python3 -m sglang.launch_server --model-path MODEL --host H --port P …`.

use super::flag_cli::{build, CliShape, ModelArg};
use super::render::BoolStyle;
use super::{Engine, Slot};
use crate::launch::LaunchSpec;
use crate::record::Params;
use crate::space::StudySpec;

/// The SGLang adapter. Booleans are `store_true` flags: true → `--x`, false → omitted.
pub struct Sglang;

const SHAPE: CliShape = CliShape {
    label: "SGLang",
    default_command: &["python3", "-m", "sglang.launch_server"],
    model: ModelArg::Flag("--model-path"),
    served_name_flag: "--served-model-name",
    always_name: false,
    required_flags: &[],
    bools: BoolStyle::StoreTrue,
};

impl Engine for Sglang {
    fn launch_spec(
        &self,
        space: &StudySpec,
        params: &Params,
        slot: &Slot,
    ) -> anyhow::Result<LaunchSpec> {
        build(&SHAPE, space, params, slot)
    }
}
