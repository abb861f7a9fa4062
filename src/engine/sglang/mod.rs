//! SGLang: `python3 -m sglang.launch_server --model-path MODEL --host H --port P …`.

mod expert;
mod rules;

use crate::engine::flag_cli::{CliShape, ModelArg};
use crate::engine::render::BoolStyle;
use crate::engine::Description;
use crate::launch::classify::LogPatterns;
use crate::launch::{v_tag, ContainerImage};

/// The SGLang adapter. Booleans are `store_true` flags: true → `--x`, false → omitted.
pub(crate) const LAUNCH: CliShape = CliShape {
    label: "SGLang",
    default_command: &["python3", "-m", "sglang.launch_server"],
    model: ModelArg::Flag("--model-path"),
    served_name_flag: "--served-model-name",
    always_name: false,
    required_flags: &[],
    bools: BoolStyle::StoreTrue,
    output_token_counter: None,
    image: |_| {
        Some(ContainerImage {
            repository: "lmsysorg/sglang",
            tag: v_tag,
            program: "python3",
        })
    },
};

/// What marks a failure in the log: SGLang's (PyTorch's).
static LOG: LogPatterns = LogPatterns {
    oom: &["CUDA out of memory", "OutOfMemoryError"],
    arg_refusals: &[],
    config_checks: &[],
};

/// What infertune knows of this engine.
pub(crate) static ENGINE: Description = Description {
    launch: &LAUNCH,
    rules: &rules::PACK,
    log: &LOG,
    catalogues: &[("sglang-0.5.23.json", include_str!("sglang-0.5.23.json"))],
    expert: &[expert::SETTINGS],
};
