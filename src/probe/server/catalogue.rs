//! The engines' own names for what a trial records, first match wins. An engine (or version)
//! that serves none of a quantity's names leaves that figure out of the record.

/// vLLM, SGLang and llama.cpp names (`llama-server --metrics`); the accelerator gauges are
/// NVIDIA DCGM exporter's, which `sim serve` serves as well.
pub(crate) const PREEMPTIONS: &[&str] = &["vllm:num_preemptions_total", "vllm:num_preemptions"];
/// KV-cache usage, a fraction.
pub(crate) const KV_USAGE: &[&str] = &[
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:token_usage",
    "llamacpp:kv_cache_usage_ratio",
];
/// Requests waiting in the queue.
pub(crate) const WAITING: &[&str] = &[
    "vllm:num_requests_waiting",
    "sglang:num_queue_reqs",
    "llamacpp:requests_deferred",
];
/// Requests running (the batch).
pub(crate) const RUNNING: &[&str] = &[
    "vllm:num_requests_running",
    "sglang:num_running_reqs",
    "llamacpp:requests_processing",
];
/// Output tokens generated.
pub(crate) const OUTPUT_TOKENS: &[&str] = &[
    "vllm:generation_tokens_total",
    "sglang:generation_tokens_total",
    "llamacpp:tokens_predicted_total",
];
/// Prompt tokens processed (llama.cpp's excludes those its cache served).
pub(crate) const PROMPT_TOKENS: &[&str] = &[
    "vllm:prompt_tokens_total",
    "sglang:prompt_tokens_total",
    "llamacpp:prompt_tokens_total",
];
/// Prefix-cache counters (hits, queries) in tokens: vLLM's pair.
pub(crate) const PREFIX_HITS_QUERIES: (&str, &str) = (
    "vllm:prefix_cache_hits_total",
    "vllm:prefix_cache_queries_total",
);
/// llama.cpp's prompt tokens reused from a slot's cache (the rest are `PROMPT_TOKENS`).
pub(crate) const PROMPT_TOKENS_CACHED: &str = "llamacpp:prompt_tokens_cached_total";
/// SGLang's own hit-rate gauge.
pub(crate) const CACHE_HIT_RATE: &str = "sglang:cache_hit_rate";
/// Wall seconds per modelled second of a time-scaled simulator (infertune's own; absent from
/// a real engine): its energy is modelled, so power is energy over the modelled span.
pub(crate) const TIME_SCALE: &str = "infertune_sim_time_scale";
/// Accelerator power, watts (DCGM).
pub(crate) const POWER_W: &str = "DCGM_FI_DEV_POWER_USAGE";
/// Accelerator energy since boot, millijoules (DCGM).
pub(crate) const ENERGY_MJ: &str = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";
/// Accelerator memory in use, MiB (DCGM).
pub(crate) const MEMORY_USED_MIB: &str = "DCGM_FI_DEV_FB_USED";
/// Accelerator utilisation, percent (DCGM).
pub(crate) const UTILIZATION_PCT: &str = "DCGM_FI_DEV_GPU_UTIL";
