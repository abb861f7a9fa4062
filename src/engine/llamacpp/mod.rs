//! llama.cpp: `llama-server -m MODEL --host H --port P --alias NAME … --metrics`.

mod expert;
mod rules;

use crate::engine::flag_cli::{CliShape, ModelArg};
use crate::engine::render::BoolStyle;
use crate::engine::Description;
use crate::launch::classify::LogPatterns;
use crate::launch::ContainerImage;

/// The llama.cpp server adapter. The served name always goes in `--alias` (without it
/// `/v1/models` lists the GGUF's own name); `--metrics` is always on, so trials can read
/// `llamacpp:tokens_predicted_total`. Booleans are `store_true` flags (name a parameter
/// `no_kv_offload` to tune `--no-kv-offload`). Readiness needs no special case: `/health`
/// answers 503 while the model loads and 200 once it serves.
pub(crate) const LAUNCH: CliShape = CliShape {
    label: "llama.cpp",
    default_command: &["llama-server"],
    model: ModelArg::Flag("-m"),
    served_name_flag: "--alias",
    always_name: true,
    required_flags: &["--metrics"],
    bools: BoolStyle::StoreTrue,
    output_token_counter: Some("llamacpp:tokens_predicted_total"),
    // The server image has one tag; the version is in its build.
    image: |_| {
        Some(ContainerImage {
            repository: "ghcr.io/ggml-org/llama.cpp",
            tag: |_| "server".into(),
            program: "/app/llama-server",
        })
    },
};

/// What marks a failure in the log: llama.cpp's: its allocator, its own argument parser and its context-parameter checks.
static LOG: LogPatterns = LogPatterns {
    oom: &["cudaMalloc failed: out of memory"],
    arg_refusals: &["error: invalid argument"],
    config_checks: &["llama_init_from_model: "],
};

/// What infertune knows of this engine.
pub(crate) static ENGINE: Description = Description {
    launch: &LAUNCH,
    rules: &rules::PACK,
    log: &LOG,
    catalogues: &[(
        "llamacpp-0.5.0-dev.json",
        include_str!("llamacpp-0.5.0-dev.json"),
    )],
    expert: &[expert::SETTINGS],
};
