//! XInference start-up checks: what its engines would refuse or silently serve badly, with
//! their own texts where they have one (read in XInference 4.1.0's sources).
//!
//! The llama.cpp settings keep xllamacpp's names (`n_parallel`, `n_threads`, `n_ctx`); a
//! config without `model_engine` is taken to run llama.cpp, the engine of a GGUF model.

use crate::space::rules::{Ctx, Rule, RulePack};
use crate::space::version::VersionRange;
use crate::space::EngineKind;

/// The least KV cache a token of context costs in any real model (the 2-layer tiny test model
/// costs 1 KiB in f16; a 7B Llama 512 KiB).
const MIN_KV_BYTES_PER_TOKEN: u64 = 1024;

/// XInference's rule pack: its rules and its usual platform. Its version is not asked: the
/// CLI has no `--version` that runs without a server.
pub(crate) static PACK: RulePack = RulePack {
    engine: EngineKind::Xinference,
    rules: RULES,
    platform: "cuda",
    version_query: None,
    // n_parallel is per replica, and XInference caps each replica's requests itself.
    batch_caps: &[],
};

static RULES: &[Rule] = &[
    Rule {
        // model/llm/vllm/core.py VLLMModel.match_json.
        id: "xinference.vllm_needs_gpu",
        versions: VersionRange::ALL,
        platforms: Some(&["cpu"]),
        check: |c| {
            (engine(c) == "vllm").then(|| {
                "vLLM requires CUDA or MLU GPUs or VACC GPUs or MUSA GPUs (XInference's vLLM \
                 engine does not run on a CPU host)"
                    .to_string()
            })
        },
        repair: None,
    },
    Rule {
        // Each replica runs its own llama.cpp with n_threads threads (default: every CPU).
        id: "xinference.replica_threads_within_cores",
        versions: VersionRange::ALL,
        platforms: Some(&["cpu"]),
        check: |c| {
            let cores = host_cores();
            threads_over(c, cores).map(|(replicas, threads)| {
                format!(
                    "replica ({replicas}) × n_threads ({threads}) = {} threads on {cores} cores: \
                     each XInference replica runs its own llama.cpp with n_threads threads \
                     (default: all cores), so the replicas would fight over the cores; lower \
                     n_threads to {} or fewer",
                    replicas * threads,
                    (cores / replicas).max(1)
                )
            })
        },
        repair: None,
    },
    Rule {
        // An oversized context is not refused: the replica is killed for memory later.
        id: "xinference.n_ctx_fits_memory",
        versions: VersionRange::ALL,
        platforms: Some(&["cpu"]),
        check: |c| {
            let memory = host_memory_bytes()?;
            kv_floor_over(c, memory).map(|need| {
                format!(
                    "n_ctx ({}) × replica ({}) needs at least {} GiB of KV cache, more than this \
                     host's {} GiB of memory: XInference does not refuse it, the kernel kills \
                     the replica for memory (lower n_ctx)",
                    c.int("n_ctx").unwrap_or(0),
                    replicas(c),
                    need >> 30,
                    memory >> 30
                )
            })
        },
        repair: None,
    },
];

/// The model engine, lower case; `llama.cpp` when the config does not choose one.
fn engine(c: &Ctx) -> String {
    c.text("model_engine")
        .unwrap_or_else(|| "llama.cpp".into())
        .to_lowercase()
}

fn replicas(c: &Ctx) -> i64 {
    c.int("replica").unwrap_or(1).max(1)
}

/// `(replicas, threads)` when llama.cpp replicas would run more threads than `cores`.
fn threads_over(c: &Ctx, cores: i64) -> Option<(i64, i64)> {
    if engine(c) != "llama.cpp" {
        return None;
    }
    let threads = match c.int("n_threads") {
        Some(t) if t > 0 => t,
        _ => cores,
    };
    let replicas = replicas(c);
    (replicas * threads > cores).then_some((replicas, threads))
}

/// The least KV cache the config needs, when it is more than `memory` bytes.
fn kv_floor_over(c: &Ctx, memory: u64) -> Option<u64> {
    let n_ctx = u64::try_from(c.int("n_ctx")?).ok()?;
    let need = n_ctx
        .saturating_mul(replicas(c) as u64)
        .saturating_mul(MIN_KV_BYTES_PER_TOKEN);
    (need > memory).then_some(need)
}

/// The CPUs this process may run on.
fn host_cores() -> i64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as i64)
}

/// `MemTotal` of /proc/meminfo, in bytes.
fn host_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Params, Value};

    fn params(pairs: &[(&str, Value)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn refusal(pairs: &[(&str, Value)]) -> Option<String> {
        PACK.check(Some("4.1.0"), Some("cpu"), &params(pairs))
            .err()
            .map(|r| r.rule)
    }

    #[test]
    fn replicas_times_threads_past_the_cores_is_refused() {
        let cores = host_cores();
        let ctx_of = |p: &Params| {
            threads_over(
                &Ctx {
                    params: p,
                    version: None,
                    platform: "cpu",
                },
                4,
            )
        };
        let two_by_two = params(&[("replica", Value::Int(2)), ("n_threads", Value::Int(2))]);
        assert_eq!(ctx_of(&two_by_two), None);
        let two_by_three = params(&[("replica", Value::Int(2)), ("n_threads", Value::Int(3))]);
        assert_eq!(ctx_of(&two_by_three), Some((2, 3)));
        // Without n_threads every replica takes all cores.
        assert_eq!(ctx_of(&params(&[("replica", Value::Int(2))])), Some((2, 4)));
        assert_eq!(ctx_of(&params(&[("replica", Value::Int(1))])), None);
        let other = params(&[
            ("replica", Value::Int(2)),
            ("model_engine", Value::Str("Transformers".into())),
        ]);
        assert_eq!(ctx_of(&other), None);
        assert_eq!(
            refusal(&[
                ("replica", Value::Int(cores + 1)),
                ("n_threads", Value::Int(1))
            ])
            .as_deref(),
            Some("xinference.replica_threads_within_cores")
        );
        assert_eq!(
            refusal(&[("replica", Value::Int(1)), ("n_threads", Value::Int(1))]),
            None
        );
    }

    #[test]
    fn a_context_no_memory_holds_is_refused_and_a_small_one_passes() {
        let gib = 1u64 << 30;
        let ctx = |n_ctx: i64, replica: i64| {
            let p = params(&[
                ("n_ctx", Value::Int(n_ctx)),
                ("replica", Value::Int(replica)),
            ]);
            kv_floor_over(
                &Ctx {
                    params: &p,
                    version: None,
                    platform: "cpu",
                },
                8 * gib,
            )
        };
        assert_eq!(ctx(4096, 2), None);
        assert_eq!(ctx(8 << 20, 1), None);
        assert_eq!(ctx(8 << 20, 2), Some(16 * gib));
        assert_eq!(
            refusal(&[("n_ctx", Value::Int(2_000_000_000))]).as_deref(),
            Some("xinference.n_ctx_fits_memory")
        );
    }

    #[test]
    fn the_vllm_engine_is_refused_on_a_cpu_host_only() {
        let vllm = [("model_engine", Value::Str("vLLM".into()))];
        assert_eq!(refusal(&vllm).as_deref(), Some("xinference.vllm_needs_gpu"));
        assert!(PACK
            .check(Some("4.1.0"), Some("cuda"), &params(&vllm))
            .is_ok());
    }
}
