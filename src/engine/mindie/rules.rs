//! MindIE's documented constraints on config.json (`BackendConfig.ScheduleConfig`,
//! `BackendConfig.ModelDeployConfig`, `BackendConfig.npuDeviceIds/worldSize`). Parameters are
//! named by their last path segment (`maxBatchSize`, `maxPrefillTokens`, ...). MindIE refuses
//! to start on a config outside these bounds; the messages state the documented constraint.

use crate::record::Value;
use crate::space::rules::{Rule, RulePack};
use crate::space::version::VersionRange;
use crate::space::{BatchCap, EngineKind};

/// Documented value ranges: (parameter, lowest, highest).
const RANGES: [(&str, i64, i64); 7] = [
    ("maxBatchSize", 1, 5000),
    ("maxPrefillBatchSize", 1, 5000),
    ("maxPrefillTokens", 1, 409_600),
    ("cacheBlockSize", 1, 128),
    ("maxQueueDelayMicroseconds", 500, 1_000_000),
    ("prefillTimeMsPerReq", 0, 1000),
    ("decodeTimeMsPerReq", 0, 1000),
];

/// MindIE's rule pack: its rules and its usual platform (it has no version query).
pub(crate) static PACK: RulePack = RulePack {
    engine: EngineKind::Mindie,
    rules: RULES,
    platform: "npu",
    version_query: None,
    batch_caps: &[BATCH],
};

/// The running batch's cap; prefill runs in batches of its own (`maxPrefillBatchSize`).
pub(crate) const BATCH: BatchCap = BatchCap {
    cap: "maxBatchSize",
    step_tokens: None,
};

/// The rule `$id` that `$small` lies in `[1, $big]`, repaired by lowering `$small` to `$big`.
macro_rules! at_most {
    ($id:literal, $small:literal, $big:literal) => {
        Rule {
            id: $id,
            versions: VersionRange::ALL,
            platforms: None,
            check: |c| {
                let (small, big) = (c.int($small)?, c.int($big)?);
                (small > big).then(|| {
                    format!(
                        concat!($small, " ({}) must be in [1, ", $big, " ({})]"),
                        small, big
                    )
                })
            },
            repair: Some(|c| c.set($small, Value::Int(c.int($big).unwrap_or(1)))),
        }
    };
}

/// MindIE's rules.
static RULES: &[Rule] = &[
    Rule {
        id: "mindie.documented_ranges",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            RANGES.iter().find_map(|(name, lo, hi)| {
                let v = c.int(name)?;
                (v < *lo || v > *hi).then(|| format!("{name} ({v}) is out of range [{lo}, {hi}]"))
            })
        },
        repair: Some(|c| {
            RANGES
                .iter()
                .filter_map(|(name, lo, hi)| {
                    let v = c.int(name)?;
                    Some((name.to_string(), Value::Int(v.clamp(*lo, *hi))))
                })
                .collect()
        }),
    },
    Rule {
        id: "mindie.max_prefill_tokens_ge_max_input_token_len",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let (p, i) = (c.int("maxPrefillTokens")?, c.int("maxInputTokenLen")?);
            (p < i).then(|| {
                format!("maxPrefillTokens ({p}) must be greater than or equal to maxInputTokenLen ({i})")
            })
        },
        repair: Some(|c| {
            c.set(
                "maxPrefillTokens",
                Value::Int(c.int("maxInputTokenLen").unwrap_or(1)),
            )
        }),
    },
    at_most!(
        "mindie.max_prefill_batch_size_le_max_batch_size",
        "maxPrefillBatchSize",
        "maxBatchSize"
    ),
    at_most!(
        "mindie.max_iter_times_le_max_seq_len",
        "maxIterTimes",
        "maxSeqLen"
    ),
    at_most!(
        "mindie.max_input_token_len_le_max_seq_len",
        "maxInputTokenLen",
        "maxSeqLen"
    ),
    Rule {
        id: "mindie.world_size_matches_npu_device_ids",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let w = c.int("worldSize")?;
            let ids = c.text("npuDeviceIds")?;
            let n = device_count(&ids);
            (w != n as i64).then(|| {
                format!("worldSize ({w}) must equal the number of npuDeviceIds ({n} in {ids})")
            })
        },
        repair: Some(|c| {
            let n = device_count(&c.text("npuDeviceIds").unwrap_or_default());
            c.set("worldSize", Value::Int(n as i64))
        }),
    },
];

/// Number of device ids in a list written as `[[0,1,2,3]]`, `0,1,2,3` or `0 1`.
fn device_count(ids: &str) -> usize {
    ids.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::rules::Ctx;

    #[test]
    fn counts_device_ids_in_any_list_form() {
        assert_eq!(device_count("[[0,1,2,3]]"), 4);
        assert_eq!(device_count("4, 5"), 2);
        assert_eq!(device_count(""), 0);
    }

    #[test]
    fn an_at_most_rule_names_both_parameters_and_lowers_the_first() {
        let rule = RULES
            .iter()
            .find(|r| r.id == "mindie.max_iter_times_le_max_seq_len")
            .unwrap();
        let params = crate::record::params_of(&[
            ("maxIterTimes", Value::Int(4096)),
            ("maxSeqLen", Value::Int(2048)),
        ]);
        let c = Ctx {
            params: &params,
            version: None,
            platform: "npu",
        };
        assert_eq!(
            (rule.check)(&c).unwrap(),
            "maxIterTimes (4096) must be in [1, maxSeqLen (2048)]"
        );
        let repaired = (rule.repair.unwrap())(&c);
        assert_eq!(repaired["maxIterTimes"], Value::Int(2048));
        let within = crate::record::params_of(&[
            ("maxIterTimes", Value::Int(2048)),
            ("maxSeqLen", Value::Int(2048)),
        ]);
        let c = Ctx {
            params: &within,
            ..c
        };
        assert!((rule.check)(&c).is_none());
    }
}
