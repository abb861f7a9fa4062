//! MindIE's documented constraints on config.json (`BackendConfig.ScheduleConfig`,
//! `BackendConfig.ModelDeployConfig`, `BackendConfig.npuDeviceIds/worldSize`). Parameters are
//! named by their last path segment (`maxBatchSize`, `maxPrefillTokens`, ...). MindIE refuses
//! to start on a config outside these bounds; the messages state the documented constraint.

use crate::record::Value;
use crate::space::rules::{Rule, RulePack};
use crate::space::version::VersionRange;
use crate::space::EngineKind;

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
};

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
    Rule {
        id: "mindie.max_prefill_batch_size_le_max_batch_size",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let (p, b) = (c.int("maxPrefillBatchSize")?, c.int("maxBatchSize")?);
            (p > b).then(|| format!("maxPrefillBatchSize ({p}) must be in [1, maxBatchSize ({b})]"))
        },
        repair: Some(|c| {
            c.set(
                "maxPrefillBatchSize",
                Value::Int(c.int("maxBatchSize").unwrap_or(1)),
            )
        }),
    },
    Rule {
        id: "mindie.max_iter_times_le_max_seq_len",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let (t, s) = (c.int("maxIterTimes")?, c.int("maxSeqLen")?);
            (t > s).then(|| format!("maxIterTimes ({t}) must be in [1, maxSeqLen ({s})]"))
        },
        repair: Some(|c| c.set("maxIterTimes", Value::Int(c.int("maxSeqLen").unwrap_or(1)))),
    },
    Rule {
        id: "mindie.max_input_token_len_le_max_seq_len",
        versions: VersionRange::ALL,
        platforms: None,
        check: |c| {
            let (i, s) = (c.int("maxInputTokenLen")?, c.int("maxSeqLen")?);
            (i > s).then(|| format!("maxInputTokenLen ({i}) must be in [1, maxSeqLen ({s})]"))
        },
        repair: Some(|c| {
            c.set(
                "maxInputTokenLen",
                Value::Int(c.int("maxSeqLen").unwrap_or(1)),
            )
        }),
    },
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

    #[test]
    fn counts_device_ids_in_any_list_form() {
        assert_eq!(device_count("[[0,1,2,3]]"), 4);
        assert_eq!(device_count("4, 5"), 2);
        assert_eq!(device_count(""), 0);
    }
}
