//! What a vLLM expert sets first for throughput, each with where vLLM's docs or recipes say it.

use crate::engine::expert::{Fixed, Platform, Rule, Setting};

const OPTIMIZATION: &str = "vllm-project/vllm docs/configuration/optimization.md";
const RECIPE: &str = "vllm-project/recipes OpenAI/GPT-OSS.md";

/// vLLM's settings to try first; the simulator reads the same names.
pub(crate) static SETTINGS: &[Setting] = &[
    Setting {
        // "setting this to a smaller number matching the max concurrency may improve the
        // performance"; fewer than the clients leaves requests queued.
        names: &["--max-num-seqs", "max_num_seqs"],
        rule: Rule::HoldClients,
        platform: Platform::Any,
        source: RECIPE,
    },
    Setting {
        // "For optimal throughput, we recommend setting max_num_batched_tokens > 8192".
        names: &["--max-num-batched-tokens", "max_num_batched_tokens"],
        rule: Rule::PromptBudget { floor: 8192 },
        platform: Platform::Gpu,
        source: OPTIMIZATION,
    },
    Setting {
        names: &["--max-model-len", "max_model_len"],
        rule: Rule::RequestTokens,
        platform: Platform::Any,
        source: RECIPE,
    },
    Setting {
        names: &["--enable-prefix-caching", "enable_prefix_caching"],
        rule: Rule::WithPrefixReuse(Fixed::Bool(true)),
        platform: Platform::Any,
        source: "vllm-project/vllm docs/features/automatic_prefix_caching.md",
    },
    Setting {
        names: &["--async-scheduling", "async_scheduling"],
        rule: Rule::Always(Fixed::Bool(true)),
        platform: Platform::Gpu,
        source: RECIPE,
    },
];
