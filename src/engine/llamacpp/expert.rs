//! What a llama.cpp expert sets first for throughput, each with where llama.cpp's own
//! documentation, pull requests or issues say it.

use crate::engine::expert::{Fixed, Platform, Rule, Setting};

const SERVER_README: &str = "ggml-org/llama.cpp tools/server/README.md";

/// llama-server's settings to try first.
pub(super) static SETTINGS: &[Setting] = &[
    Setting {
        // A request that finds every slot busy waits for one.
        names: &["--parallel", "-np", "parallel", "n_parallel"],
        rule: Rule::HoldClients,
        platform: Platform::Any,
        source: SERVER_README,
    },
    Setting {
        // `--ctx-size` is the total context, divided among the slots.
        names: &["--ctx-size", "-c", "ctx_size", "n_ctx"],
        rule: Rule::ContextForSlots("--parallel"),
        platform: Platform::Any,
        source: "ggml-org/llama.cpp PR #17767 (server docs: ctx-size per slot)",
    },
    Setting {
        // "Use num physical cores by default… Hyperthreading is bad"; -1 is that default.
        names: &["--threads", "-t", "threads", "n_threads"],
        rule: Rule::AllCores { auto: Some(-1) },
        platform: Platform::Any,
        source: "ggml-org/llama.cpp PR #934",
    },
    Setting {
        // Prompt processing is compute-bound and scales with cores.
        names: &["--threads-batch", "-tb", "threads_batch", "n_threads_batch"],
        rule: Rule::AllCores { auto: Some(-1) },
        platform: Platform::Any,
        source: "ggml-org/llama.cpp PR #2534",
    },
    Setting {
        names: &["--batch-size", "-b", "batch_size", "n_batch"],
        rule: Rule::PromptBudget { floor: 2048 },
        platform: Platform::Any,
        source: "ggml-org/llama.cpp PR #6017 (logical batch, default 2048)",
    },
    Setting {
        // On a GPU a physical batch as large as the logical one speeds up prompt processing.
        names: &["--ubatch-size", "-ub", "ubatch_size", "n_ubatch"],
        rule: Rule::SameAs("--batch-size"),
        platform: Platform::Gpu,
        source: "ggml-org/llama.cpp PR #6017",
    },
    Setting {
        // On CPU-only hosts flash attention has halved prompt throughput (Arm, x86).
        names: &["--flash-attn", "-fa", "flash_attn"],
        rule: Rule::Always(Fixed::Word("off")),
        platform: Platform::Cpu,
        source: "ggml-org/llama.cpp issue #27086; mozilla-ai/llamafile issue #975",
    },
    Setting {
        names: &["--flash-attn", "-fa", "flash_attn"],
        rule: Rule::Always(Fixed::Word("on")),
        platform: Platform::Gpu,
        source: "ggml-org/llama.cpp PR #5021",
    },
    Setting {
        names: &["--cont-batching", "-cb", "cont_batching"],
        rule: Rule::Always(Fixed::Bool(true)),
        platform: Platform::Any,
        source: SERVER_README,
    },
];
