//! Device memory at start-up: weights, activation reserve, KV-cache blocks, and the
//! out-of-memory failures the engines report; plus the modelled start-up time.

use super::config::{EngineConfig, SimFailure};
use crate::space::EngineKind;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// Memory taken outside the framework allocator (CUDA context, NCCL buffers), GiB per card.
const NON_TORCH_GIB: f64 = 0.5;
/// Activation bytes per token of the profiling batch, per hidden unit.
const ACTIVATION_BYTES_PER_HIDDEN: f64 = 24.0;

/// The KV cache the engine ends up with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KvCapacity {
    /// Blocks in the cache.
    pub blocks: u32,
    /// Tokens the cache holds.
    pub tokens: u64,
    /// Cache size per card, GiB.
    pub gib_per_card: f64,
}

/// Size the KV cache for `cfg`, or fail the way the engine fails when memory is short.
pub(crate) fn kv_capacity(cfg: &EngineConfig) -> Result<KvCapacity, SimFailure> {
    let total = cfg.card.memory_gib;
    let weights = cfg.model.weight_bytes() / f64::from(cfg.tp) / GIB;
    if weights + NON_TORCH_GIB > total {
        return Err(SimFailure::oom(load_oom_message(cfg, weights, total)));
    }
    let activations = cfg.engine.activation_reserve_gib
        + f64::from(cfg.max_num_batched_tokens)
            * f64::from(cfg.model.hidden)
            * ACTIVATION_BYTES_PER_HIDDEN
            / f64::from(cfg.tp)
            / GIB
        + f64::from(cfg.max_num_seqs) * f64::from(cfg.model.vocab) * 4.0 / GIB;
    let available = total * cfg.memory_utilization - weights - activations - NON_TORCH_GIB;
    let kv_gib = match cfg.kv_cache_gib {
        Some(fixed) if fixed <= available.max(0.0) + 1e-9 => fixed,
        Some(fixed) => {
            return Err(SimFailure::oom(format!(
                "NPU out of memory: npuMemSize ({fixed} GB) does not fit beside the weights \
                 ({weights:.2} GiB) and activations ({activations:.2} GiB) on a {total} GiB card; \
                 decrease npuMemSize or maxBatchSize, or increase worldSize"
            )))
        }
        None => available,
    };
    if kv_gib <= 0.0 {
        return Err(SimFailure::oom(no_room_message(cfg)));
    }
    let block_bytes = f64::from(cfg.block_size) * cfg.kv_bytes_per_token_per_card();
    let blocks = (kv_gib * GIB / block_bytes).floor() as u32;
    let tokens = u64::from(blocks) * u64::from(cfg.block_size);
    if blocks == 0 {
        return Err(SimFailure::oom(no_room_message(cfg)));
    }
    if tokens < u64::from(cfg.max_model_len) {
        return Err(SimFailure::oom(too_small_message(cfg, kv_gib, tokens)));
    }
    Ok(KvCapacity {
        blocks,
        tokens,
        gib_per_card: kv_gib,
    })
}

fn load_oom_message(cfg: &EngineConfig, weights: f64, total: f64) -> String {
    let device = if cfg.card.platform == "npu" {
        "NPU"
    } else {
        "CUDA"
    };
    format!(
        "torch.OutOfMemoryError: {device} out of memory. Tried to allocate {:.0} MiB. GPU 0 has a \
         total capacity of {total:.2} GiB; the model weights need {weights:.2} GiB per card \
         (tensor_parallel_size={}). Use more cards (tensor parallel) or a smaller model.",
        (weights + NON_TORCH_GIB - total).max(0.0) * 1024.0 + 256.0,
        cfg.tp
    )
}

fn no_room_message(cfg: &EngineConfig) -> String {
    match cfg.kind {
        EngineKind::Mindie => "NPU out of memory: no memory left for the KV cache blocks; \
             decrease maxPrefillTokens or maxBatchSize, or increase worldSize"
            .into(),
        _ => "ValueError: No available memory for the cache blocks. Try increasing \
              `gpu_memory_utilization` when initializing the engine."
            .into(),
    }
}

fn too_small_message(cfg: &EngineConfig, kv_gib: f64, tokens: u64) -> String {
    let needed = f64::from(cfg.max_model_len) * cfg.kv_bytes_per_token_per_card() / GIB;
    if cfg.engine.name == "vllm-v1" {
        format!(
            "ValueError: To serve at least one request with the models's max seq len ({}), \
             ({needed:.2} GiB KV cache is needed, which is larger than the available KV cache \
             memory ({kv_gib:.2} GiB). Based on the available memory, the estimated maximum \
             model length is {tokens}. Try increasing `gpu_memory_utilization` or decreasing \
             `max_model_len` when initializing the engine.",
            cfg.max_model_len
        )
    } else {
        format!(
            "ValueError: The model's max seq len ({}) is larger than the maximum number of tokens \
             that can be stored in KV cache ({tokens}). Try increasing `gpu_memory_utilization` \
             or decreasing `max_model_len` when initializing the engine.",
            cfg.max_model_len
        )
    }
}

/// Modelled seconds from process start to serving.
pub(crate) fn startup_seconds(cfg: &EngineConfig) -> f64 {
    let compile = if cfg.enforce_eager {
        0.0
    } else {
        cfg.engine.graph_capture_s
    };
    load_done_seconds(cfg) + compile
}

/// Modelled seconds until the weights are loaded (when a memory failure shows).
pub(crate) fn load_done_seconds(cfg: &EngineConfig) -> f64 {
    let per_card_gb = cfg.model.weight_bytes() / f64::from(cfg.tp) / 1e9;
    cfg.engine.import_s + per_card_gb / cfg.engine.load_gbps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{FailureKind, Params, Value};
    use crate::sim::config::Deployment;

    fn config(card: &str, model: &str, tp: u32, params: &[(&str, Value)]) -> EngineConfig {
        let d = Deployment::vllm(card, model, tp);
        let p: Params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        EngineConfig::resolve(&d, &p).unwrap()
    }

    #[test]
    fn kv_capacity_follows_memory_utilization() {
        let low = kv_capacity(&config(
            "H100",
            "Qwen2.5-7B",
            1,
            &[("gpu_memory_utilization", Value::Float(0.5))],
        ))
        .unwrap();
        let high = kv_capacity(&config("H100", "Qwen2.5-7B", 1, &[])).unwrap();
        assert!(high.tokens > 2 * low.tokens, "{low:?} {high:?}");
        assert_eq!(high.tokens % 16, 0);
    }

    #[test]
    fn too_big_models_and_tight_memory_fail_with_oom() {
        let e = kv_capacity(&config("H100", "Qwen2.5-72B", 1, &[])).unwrap_err();
        assert_eq!(e.kind, FailureKind::Oom);
        assert!(e.message.contains("CUDA out of memory"), "{e}");
        let e = kv_capacity(&config(
            "H100",
            "Qwen2.5-32B",
            1,
            &[("gpu_memory_utilization", Value::Float(0.82))],
        ))
        .unwrap_err();
        assert!(
            e.message.contains("max seq len (32768)") || e.message.contains("No available memory"),
            "{e}"
        );
        assert!(kv_capacity(&config("H100", "Qwen2.5-72B", 4, &[])).is_ok());
    }

    #[test]
    fn startup_grows_with_weights_and_shrinks_without_graphs() {
        let small = config("H100", "Qwen2.5-0.5B", 1, &[]);
        let big = config("H100", "Qwen2.5-14B", 1, &[]);
        let eager = config(
            "H100",
            "Qwen2.5-14B",
            1,
            &[("enforce_eager", Value::Bool(true))],
        );
        assert!(startup_seconds(&big) > startup_seconds(&small));
        assert!(startup_seconds(&eager) < startup_seconds(&big));
    }
}
