//! SGLang's start-up checks (python/sglang/srt/server_args.py), with SGLang's messages.

use crate::record::Value;
use crate::space::rules::{Rule, RulePack, VersionQuery};
use crate::space::version::VersionRange;
use crate::space::{BatchCap, EngineKind};

const SCHEDULE_POLICIES: [&str; 5] = ["lpm", "random", "fcfs", "dfs-weight", "lof"];

/// SGLang's rule pack: its rules, its usual platform and how to ask its version.
pub(crate) static PACK: RulePack = RulePack {
    engine: EngineKind::Sglang,
    rules: RULES,
    platform: "cuda",
    version_query: Some(VersionQuery {
        binary: "python3",
        args: &["-c", "import sglang; print(sglang.__version__)"],
    }),
    batch_caps: &[BatchCap {
        cap: "max_running_requests",
        step_tokens: None,
    }],
};

/// SGLang's rules.
static RULES: &[Rule] = &[
    Rule {
        id: "sglang.schedule_policy_choices",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let p = c.text("schedule_policy")?;
            (!SCHEDULE_POLICIES.contains(&p.as_str())).then(|| {
                format!(
                    "argument --schedule-policy: invalid choice: '{p}' (choose from 'lpm', \
                     'random', 'fcfs', 'dfs-weight', 'lof')"
                )
            })
        },
        repair: None,
    },
    Rule {
        id: "sglang.chunked_prefill_size_divisible_by_page_size",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let size = c.int("chunked_prefill_size")?;
            let page = c.int("page_size").unwrap_or(1).max(1);
            (size > 0 && size % page != 0)
                .then(|| "chunked_prefill_size must be divisible by page_size".to_string())
        },
        repair: Some(|c| {
            let page = c.int("page_size").unwrap_or(1).max(1);
            let size = c.int("chunked_prefill_size").unwrap_or(page);
            c.set(
                "chunked_prefill_size",
                Value::Int((size / page).max(1) * page),
            )
        }),
    },
    Rule {
        id: "sglang.schedule_conservativeness_ge_0",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let x = c.float("schedule_conservativeness")?;
            (x < 0.0).then(|| format!("schedule_conservativeness ({x}) must be >= 0"))
        },
        repair: Some(|c| c.set("schedule_conservativeness", Value::Float(0.0))),
    },
    Rule {
        id: "sglang.mem_fraction_static_range",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let x = c.float("mem_fraction_static")?;
            (x <= 0.0 || x >= 1.0).then(|| format!("mem_fraction_static ({x}) must be in (0, 1)"))
        },
        repair: None,
    },
];

#[cfg(test)]
mod tests {
    use super::PACK;
    use crate::record::{Params, Value};

    #[test]
    fn chunk_must_be_a_page_multiple_unless_disabled() {
        let cfg = |chunk: i64| {
            Params::from([
                ("chunked_prefill_size".to_string(), Value::Int(chunk)),
                ("page_size".to_string(), Value::Int(16)),
            ])
        };
        assert!(PACK.check(Some("0.4.6"), None, &cfg(4096)).is_ok());
        assert!(PACK.check(Some("0.4.6"), None, &cfg(-1)).is_ok());
        let err = PACK.check(Some("0.4.6"), None, &cfg(4100)).unwrap_err();
        assert_eq!(
            err.message,
            "chunked_prefill_size must be divisible by page_size"
        );
    }
}
