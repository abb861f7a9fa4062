//! What an XInference expert sets first for its llama.cpp engine: llama.cpp's own advice,
//! which XInference passes on (its defaults: `n_parallel` min(8, CPUs), `n_threads` every
//! logical CPU).

use crate::engine::expert::{Platform, Rule, Setting};

const CORE: &str = "xorbitsai/inference xinference/model/llm/llama_cpp/core.py";

/// XInference's settings to try first.
pub(super) static SETTINGS: &[Setting] = &[
    Setting {
        names: &["n_parallel"],
        rule: Rule::HoldClients,
        platform: Platform::Any,
        source: CORE,
    },
    Setting {
        // Its default counts hyper-threads; llama.cpp wants physical cores (PR #934).
        names: &["n_threads"],
        rule: Rule::AllCores { auto: None },
        platform: Platform::Any,
        source: "ggml-org/llama.cpp PR #934",
    },
];
