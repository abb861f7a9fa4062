//! `infertune sim eval|serve`.

use super::config::Deployment;
use super::serve::{self, ServeOptions};
use crate::probe::{DatasetSpec, WorkloadSpec};
use crate::record::{Params, Value};
use crate::space::EngineKind;
use anyhow::Context;
use std::path::PathBuf;
use std::time::Duration;

/// `infertune sim` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum SimCommand {
    /// Evaluate configs in virtual time.
    Eval(Box<EvalArgs>),
    /// Serve an OpenAI-compatible API with modelled timings.
    Serve(Box<ServeArgs>),
}

/// The simulated engine, card and model.
#[derive(clap::Args, Debug, Clone)]
pub struct TargetArgs {
    /// Card profile (H100, H200, A100-40, A100-80, A6000, L40S, T4, V100, Ascend-910B4, MXC500).
    #[arg(long)]
    pub(super) card: String,
    /// Model profile, e.g. Qwen2.5-7B (a leading `org/` and `-Instruct` aliases are accepted).
    #[arg(long)]
    pub(super) model: String,
    /// Tensor-parallel size (cards).
    #[arg(long, visible_alias = "tensor-parallel-size", default_value_t = 1)]
    pub(super) tp: u32,
    /// Engine modelled: vllm or mindie.
    #[arg(long, value_parser = parse_engine)]
    pub(super) engine: Option<EngineKind>,
    /// Engine version; vLLM below 0.8 uses the V0 scheduler.
    #[arg(long)]
    pub(super) engine_version: Option<String>,
    /// Engine parameter NAME=VALUE (vLLM names like max_num_seqs, or MindIE names like maxBatchSize).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_assignment)]
    pub(super) set: Vec<(String, Value)>,
    /// Seed of the engine noise.
    #[arg(long, default_value_t = 0)]
    pub(super) seed: u64,
}

impl TargetArgs {
    /// The deployment for `params` (MindIE when a MindIE-style name is set and no --engine).
    pub(super) fn deployment(&self, params: &Params) -> Deployment {
        let mindie_names = params
            .keys()
            .any(|k| k.chars().any(|c| c.is_ascii_uppercase()));
        let engine = self.engine.unwrap_or(if mindie_names {
            EngineKind::Mindie
        } else {
            EngineKind::Vllm
        });
        Deployment {
            engine,
            version: self.engine_version.clone(),
            card: self.card.clone(),
            model: self.model.clone(),
            tp: self.tp,
        }
    }
}

/// `infertune sim eval`.
#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    #[command(flatten)]
    pub(super) target: TargetArgs,
    /// Workload file (a probe WorkloadSpec in YAML); overrides the inline workload flags.
    #[arg(long)]
    pub(super) workload: Option<PathBuf>,
    /// Inline workload: prompt tokens.
    #[arg(long, default_value_t = 1024)]
    pub(super) input_len: u32,
    /// Inline workload: output tokens.
    #[arg(long, default_value_t = 128)]
    pub(super) output_len: u32,
    /// Inline workload: lengths vary uniformly by ± this fraction.
    #[arg(long, default_value_t = 0.0)]
    pub(super) range_ratio: f64,
    /// Inline workload: tokens of a prefix shared by every prompt.
    #[arg(long, default_value_t = 0)]
    pub(super) prefix_len: u32,
    /// Inline workload: concurrent clients (closed loop).
    #[arg(long, default_value_t = 16)]
    pub(super) concurrency: u32,
    /// Inline workload: measured requests.
    #[arg(long, default_value_t = 200)]
    pub(super) requests: u32,
    /// Evaluate each line of this JSON-lines file (one params object a line) on top of `--set`.
    #[arg(long)]
    pub(super) configs: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(super) json: bool,
}

/// `infertune sim serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
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
    #[arg(long)]
    max_num_seqs: Option<u32>,
    #[arg(long)]
    max_num_batched_tokens: Option<u32>,
    #[arg(long)]
    block_size: Option<u32>,
    #[arg(long, overrides_with = "no_enable_chunked_prefill")]
    enable_chunked_prefill: bool,
    #[arg(long)]
    no_enable_chunked_prefill: bool,
    #[arg(long, overrides_with = "no_enable_prefix_caching")]
    enable_prefix_caching: bool,
    #[arg(long)]
    no_enable_prefix_caching: bool,
    #[arg(long)]
    gpu_memory_utilization: Option<f64>,
    #[arg(long)]
    max_model_len: Option<u32>,
    #[arg(long)]
    enforce_eager: bool,
    #[arg(long)]
    kv_cache_dtype: Option<String>,
    #[arg(long)]
    dtype: Option<String>,
    #[arg(long = "maxBatchSize")]
    max_batch_size: Option<u32>,
    #[arg(long = "maxPrefillTokens")]
    max_prefill_tokens: Option<u32>,
    #[arg(long = "maxPrefillBatchSize")]
    max_prefill_batch_size: Option<u32>,
    #[arg(long = "cacheBlockSize")]
    cache_block_size: Option<u32>,
    #[arg(long = "maxSeqLen")]
    max_seq_len: Option<u32>,
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

/// Runs `infertune sim`.
pub fn run(cmd: SimCommand) -> anyhow::Result<i32> {
    match cmd {
        SimCommand::Eval(args) => super::cli_eval::run(&args),
        SimCommand::Serve(args) => {
            let args = *args;
            let mut params: Params = args.target.set.iter().cloned().collect();
            args.flags.into_params(&mut params);
            if let Some(numa) = args.numa {
                params.insert("numa".into(), Value::Str(numa));
            }
            serve::run(ServeOptions {
                host: args.host,
                port: args.port,
                deployment: args.target.deployment(&params),
                served_model_name: args.served_model_name,
                params,
                seed: args.target.seed,
                time_scale: args.time_scale,
                startup_time: args.startup_time,
            })
        }
    }
}

impl EvalArgs {
    /// The workload: the file when given, else the inline flags.
    pub(super) fn workload(&self) -> anyhow::Result<WorkloadSpec> {
        if let Some(path) = &self.workload {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read workload file {}", path.display()))?;
            return serde_saphyr::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{}: not a valid workload: {e}", path.display()));
        }
        let mut workload = WorkloadSpec::closed_random(
            self.input_len,
            self.output_len,
            self.concurrency,
            self.requests,
        );
        if let DatasetSpec::Random {
            range_ratio,
            prefix_len,
            ..
        } = &mut workload.dataset
        {
            *range_ratio = self.range_ratio;
            *prefix_len = self.prefix_len;
        }
        Ok(workload)
    }
}

fn parse_engine(text: &str) -> Result<EngineKind, String> {
    match text.to_ascii_lowercase().as_str() {
        "vllm" => Ok(EngineKind::Vllm),
        "mindie" => Ok(EngineKind::Mindie),
        other => Err(format!(
            "`{other}`: the simulator models `vllm` and `mindie`"
        )),
    }
}

/// `NAME=VALUE` with VALUE read as bool, integer, float, or text.
fn parse_assignment(text: &str) -> Result<(String, Value), String> {
    let (name, raw) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}`: expected NAME=VALUE, e.g. max_num_seqs=128"))?;
    let value = match raw {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => raw
            .parse::<i64>()
            .map(Value::Int)
            .or_else(|_| raw.parse::<f64>().map(Value::Float))
            .unwrap_or_else(|_| Value::Str(raw.to_string())),
    };
    Ok((name.trim().to_string(), value))
}
