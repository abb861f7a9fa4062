//! What a MindIE expert sets first (MindIE-LLM's service parameter guide).

use crate::engine::expert::{Platform, Rule, Setting};

const PARAMETERS: &str =
    "MindIE-LLM docs user_guide/user_manual/service_parameter_configuration.md";

/// MindIE's settings to try first.
pub(crate) static SETTINGS: &[Setting] = &[
    Setting {
        names: &["maxBatchSize"],
        rule: Rule::HoldClients,
        platform: Platform::Any,
        source: PARAMETERS,
    },
    Setting {
        // 0 or maxBatchSize "unless the prefill batch must be limited".
        names: &["maxPrefillBatchSize"],
        rule: Rule::SameAs("maxBatchSize"),
        platform: Platform::Any,
        source: PARAMETERS,
    },
    Setting {
        // At least maxInputTokenLen; 8192 by default.
        names: &["maxPrefillTokens"],
        rule: Rule::PromptBudget { floor: 8192 },
        platform: Platform::Any,
        source: PARAMETERS,
    },
    Setting {
        names: &["maxSeqLen"],
        rule: Rule::RequestTokens,
        platform: Platform::Any,
        source: PARAMETERS,
    },
    Setting {
        // The global output cap: a smaller one cuts outputs short.
        names: &["maxIterTimes"],
        rule: Rule::OutputTokens,
        platform: Platform::Any,
        source: PARAMETERS,
    },
];
