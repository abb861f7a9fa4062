//! `infertune sim serve`: the simulated engine behind an OpenAI-compatible API; its start-up
//! log goes to stderr, as a real engine's would.

use super::sim_target::TargetArgs;
use crate::record::{Params, Value};
use crate::sim::serve::{self, ServeOptions};
use std::time::Duration;

/// `infertune sim serve`.
#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to bind.
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Name reported by /v1/models (default: the model profile name).
    #[arg(long)]
    served_model_name: Option<String>,
    /// Real seconds per modelled second (0.01 = a hundred times faster).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Override the modelled start-up time, e.g. "5s" (scaled by --time-scale).
    #[arg(long, value_parser = humantime::parse_duration)]
    startup_time: Option<Duration>,
    /// NUMA binding as numactl arguments ("-N 0 -m 0"), or "none".
    #[arg(long, allow_hyphen_values = true)]
    numa: Option<String>,
    #[command(flatten)]
    flags: EngineFlags,
}

/// vLLM-style (and MindIE-style) engine flags of `sim serve`.
#[derive(clap::Args, Debug)]
struct EngineFlags {
    /// Most requests scheduled at once (vLLM `--max-num-seqs`).
    #[arg(long)]
    max_num_seqs: Option<u32>,
    /// Token budget of one scheduler step (vLLM).
    #[arg(long)]
    max_num_batched_tokens: Option<u32>,
    /// KV-cache block size in tokens (vLLM).
    #[arg(long)]
    block_size: Option<u32>,
    /// Split long prompts over several steps (vLLM).
    #[arg(long, overrides_with = "no_enable_chunked_prefill")]
    enable_chunked_prefill: bool,
    /// Prefill each prompt in one step.
    #[arg(long)]
    no_enable_chunked_prefill: bool,
    /// Reuse the KV cache of shared prompt prefixes (vLLM).
    #[arg(long, overrides_with = "no_enable_prefix_caching")]
    enable_prefix_caching: bool,
    /// Turn prefix caching off.
    #[arg(long)]
    no_enable_prefix_caching: bool,
    /// Share of the card's memory the engine may use, 0–1 (vLLM).
    #[arg(long)]
    gpu_memory_utilization: Option<f64>,
    /// Longest prompt plus output in tokens (vLLM).
    #[arg(long)]
    max_model_len: Option<u32>,
    /// Run without CUDA graphs: slower decode steps (vLLM).
    #[arg(long)]
    enforce_eager: bool,
    /// KV-cache element type, e.g. auto or fp8 (vLLM).
    #[arg(long)]
    kv_cache_dtype: Option<String>,
    /// Weight and activation type, e.g. auto, bfloat16 (vLLM).
    #[arg(long)]
    dtype: Option<String>,
    /// Most requests in a batch (MindIE `maxBatchSize`).
    #[arg(long = "maxBatchSize")]
    max_batch_size: Option<u32>,
    /// Token budget of one prefill batch (MindIE).
    #[arg(long = "maxPrefillTokens")]
    max_prefill_tokens: Option<u32>,
    /// Most requests in a prefill batch (MindIE).
    #[arg(long = "maxPrefillBatchSize")]
    max_prefill_batch_size: Option<u32>,
    /// KV-cache block size in tokens (MindIE).
    #[arg(long = "cacheBlockSize")]
    cache_block_size: Option<u32>,
    /// Longest prompt plus output in tokens (MindIE).
    #[arg(long = "maxSeqLen")]
    max_seq_len: Option<u32>,
    /// KV-cache GiB per card, -1 = automatic (MindIE `npuMemSize`).
    #[arg(long = "npuMemSize")]
    npu_mem_size: Option<f64>,
}

impl EngineFlags {
    fn into_params(self, params: &mut Params) {
        let mut put = |name: &str, v: Option<Value>| {
            if let Some(v) = v {
                params.insert(name.to_string(), v);
            }
        };
        let int = |v: Option<u32>| v.map(|n| Value::Int(i64::from(n)));
        let flag = |on: bool, off: bool| (on || off).then_some(Value::Bool(on && !off));
        put("max_num_seqs", int(self.max_num_seqs));
        put("max_num_batched_tokens", int(self.max_num_batched_tokens));
        put("block_size", int(self.block_size));
        put(
            "enable_chunked_prefill",
            flag(self.enable_chunked_prefill, self.no_enable_chunked_prefill),
        );
        put(
            "enable_prefix_caching",
            flag(self.enable_prefix_caching, self.no_enable_prefix_caching),
        );
        put(
            "gpu_memory_utilization",
            self.gpu_memory_utilization.map(Value::Float),
        );
        put("max_model_len", int(self.max_model_len));
        put(
            "enforce_eager",
            self.enforce_eager.then_some(Value::Bool(true)),
        );
        put("kv_cache_dtype", self.kv_cache_dtype.map(Value::Str));
        put("dtype", self.dtype.map(Value::Str));
        put("maxBatchSize", int(self.max_batch_size));
        put("maxPrefillTokens", int(self.max_prefill_tokens));
        put("maxPrefillBatchSize", int(self.max_prefill_batch_size));
        put("cacheBlockSize", int(self.cache_block_size));
        put("maxSeqLen", int(self.max_seq_len));
        put("npuMemSize", self.npu_mem_size.map(Value::Float));
    }
}

/// Runs `infertune sim serve` until SIGINT/SIGTERM.
pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    let mut params: Params = args.target.set.iter().cloned().collect();
    args.flags.into_params(&mut params);
    if let Some(numa) = args.numa {
        params.insert("numa".into(), Value::Str(numa));
    }
    let options = ServeOptions {
        host: args.host,
        port: args.port,
        deployment: args.target.deployment(&params),
        served_model_name: args.served_model_name,
        params,
        seed: args.target.seed,
        time_scale: args.time_scale,
        startup_time: args.startup_time,
    };
    serve::run(options, &|line| eprintln!("{line}"))
}
