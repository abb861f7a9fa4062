//! What a vLLM expert sets first for throughput, each with where vLLM's docs or recipes say it.

use crate::engine::expert::{Fixed, Platform, Rule, Setting};

const OPTIMIZATION: &str = "vllm-project/vllm docs/configuration/optimization.md";
const RECIPE: &str = "vllm-project/recipes OpenAI/GPT-OSS.md";
const CPU_DOCS: &str = "vllm-project/vllm docs/getting_started/installation/cpu.md";
const PREFIX_CACHING: &str =
    "vllm-project/vllm docs/design/prefix_caching.md, vllm/v1/core/block_pool.py";

/// Fewest compute cores at which a core is kept for the front end. vLLM's CPU docs recommend
/// keeping 1-2 cores for the serving framework in online serving (their example: 32 cores)
/// and, with one rank, keeping one by hand (auto binding keeps none then); they name no core
/// count below which that stops paying. Keeping one of `n` cores takes `1/n` of the compute:
/// half of it on 2 cores, where computing on both gave the larger gain (issue 58); from 8 cores
/// on it is at most an eighth, small beside the front end's contention with many clients.
const RESERVE_FROM: u32 = 8;

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
        // Prefix caching hashes and reuses whole KV-cache blocks only ("a cached block is a
        // full block with a block hash"), so the tokens of a shared prompt after its last full
        // block are computed again for every request: up to 127 with the CPU backend's
        // 128-token default blocks (GPU backends default to 16).
        names: &["--block-size", "block_size"],
        rule: Rule::FinestWithPrefixReuse,
        platform: Platform::Cpu,
        source: PREFIX_CACHING,
    },
    Setting {
        names: &["--async-scheduling", "async_scheduling"],
        rule: Rule::Always(Fixed::Bool(true)),
        platform: Platform::Gpu,
        source: RECIPE,
    },
    Setting {
        // `VLLM_CPU_OMP_THREADS_BIND`: "the CPU cores dedicated to the OpenMP threads", a CPU
        // list, `auto` (the default: each rank's threads on one NUMA node's cores) or `nobind`;
        // "bind only one OpenMP thread on each physical CPU core" on hyper-threaded hosts, and a
        // rank's threads on one NUMA node "to avoid cross NUMA node memory access".
        names: &["VLLM_CPU_OMP_THREADS_BIND", "omp_threads_bind"],
        rule: Rule::BindCores {
            auto: Some("auto"),
            reserve_from: RESERVE_FROM,
        },
        platform: Platform::Cpu,
        source: CPU_DOCS,
    },
    Setting {
        // `VLLM_CPU_NUM_OF_RESERVED_CPU`: cores "not dedicated to the OpenMP threads for each
        // rank", read only under `auto` binding; with an explicit list the cores it leaves out
        // are the reserved ones, so both settings follow one rule.
        names: &[
            "VLLM_CPU_NUM_OF_RESERVED_CPU",
            "reserved_cpus",
            "num_of_reserved_cpu",
        ],
        rule: Rule::ReserveCore { from: RESERVE_FROM },
        platform: Platform::Cpu,
        source: CPU_DOCS,
    },
    Setting {
        // `VLLM_CPU_KVCACHE_SPACE` (whole GiB): "larger setting will allow vLLM to run more
        // requests in parallel"; a rank's memory is its weights and this space, and beyond the
        // NUMA node's capacity the worker is killed. 90% is vLLM's default memory fraction
        // (`--gpu-memory-utilization`), which its CPU worker applies to the node's memory
        // (vllm/v1/worker/cpu_worker.py); the 4 GiB cover the API server, engine core and
        // worker processes with torch loaded.
        names: &["VLLM_CPU_KVCACHE_SPACE", "kv_cache_space"],
        rule: Rule::KvCache {
            unit: 1 << 30,
            percent: 90,
            runtime_gib: 4,
        },
        platform: Platform::Cpu,
        source: CPU_DOCS,
    },
    Setting {
        // The same space in bytes (vLLM's flag; the CPU platform also fills it from the
        // environment variable, so a space sets one of the two).
        names: &["--kv-cache-memory-bytes", "kv_cache_memory_bytes"],
        rule: Rule::KvCache {
            unit: 1,
            percent: 90,
            runtime_gib: 4,
        },
        platform: Platform::Cpu,
        source: CPU_DOCS,
    },
];

#[cfg(test)]
mod tests;
