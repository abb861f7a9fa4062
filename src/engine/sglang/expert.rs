//! What an SGLang expert sets first for throughput (SGLang's hyperparameter-tuning guide).

use crate::engine::expert::{Fixed, Platform, Rule, Setting};

const TUNING: &str = "sgl-project/sglang docs/advanced_features/hyperparameter_tuning.md";

/// SGLang's settings to try first.
pub(super) static SETTINGS: &[Setting] = &[
    Setting {
        names: &["--max-running-requests", "max_running_requests"],
        rule: Rule::HoldClients,
        platform: Platform::Any,
        source: TUNING,
    },
    Setting {
        // 8192 is SGLang's own size on H100/H200; smaller only to avoid running out of memory.
        names: &["--chunked-prefill-size", "chunked_prefill_size"],
        rule: Rule::PromptBudget { floor: 8192 },
        platform: Platform::Gpu,
        source: TUNING,
    },
    Setting {
        // "If the workload has many shared prefixes, try --schedule-policy lpm".
        names: &["--schedule-policy", "schedule_policy"],
        rule: Rule::WithPrefixReuse(Fixed::Word("lpm")),
        platform: Platform::Any,
        source: TUNING,
    },
];
