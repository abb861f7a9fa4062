//! vLLM: `vllm serve MODEL --host H --port P --max-num-seqs 256 --no-enable-prefix-caching …`.

pub(crate) mod expert;
mod rules;

pub(crate) use rules::BATCH;

use crate::engine::flag_cli::{CliShape, ModelArg};
use crate::engine::render::BoolStyle;
use crate::engine::Description;
use crate::launch::classify::LogPatterns;
use crate::launch::{v_tag, ContainerImage};

/// vLLM's counter of generated tokens on `/metrics`.
pub(crate) const OUTPUT_TOKENS: &str = "vllm:generation_tokens_total";

/// The vLLM adapter. Flags are spelled as vLLM's argument parser reads them; booleans use
/// `--x` / `--no-x`. With a `launch.command` that does not end in `serve` (e.g.
/// `python -m vllm.entrypoints.openai.api_server`) the model goes in `--model`.
pub(crate) const LAUNCH: CliShape = CliShape {
    label: "vLLM",
    default_command: &["vllm", "serve"],
    model: ModelArg::PositionalAfterServe("--model"),
    served_name_flag: "--served-model-name",
    always_name: false,
    required_flags: &[],
    bools: BoolStyle::Negatable,
    output_token_counter: Some(OUTPUT_TOKENS),
    image,
};

/// vLLM's image, or vLLM Ascend's on NPUs.
fn image(platform: Option<&str>) -> Option<ContainerImage> {
    let repository = if platform == Some("npu") {
        "quay.io/ascend/vllm-ascend"
    } else {
        "vllm/vllm-openai"
    };
    Some(ContainerImage {
        repository,
        tag: v_tag,
        program: "vllm",
    })
}

/// What marks a failure in the log: vLLM's (PyTorch's, its KV-cache sizing's).
static LOG: LogPatterns = LogPatterns {
    oom: &[
        "CUDA out of memory",
        "OutOfMemoryError",
        "No available memory for the cache blocks",
        "larger than the available KV cache memory",
        "larger than the maximum number of tokens that can be stored in KV cache",
        "less than desired",
    ],
    arg_refusals: &[],
    config_checks: &[],
};

/// What infertune knows of this engine.
pub(crate) static ENGINE: Description = Description {
    launch: &LAUNCH,
    rules: &rules::PACK,
    log: &LOG,
    catalogues: &[("vllm-0.32.0.json", include_str!("vllm-0.32.0.json"))],
    expert: &[expert::SETTINGS],
};
