//! `infertune bench`: load-tests a running OpenAI-compatible server.

use super::bench_progress::BenchBar;
use crate::probe::csv_out::CsvOut;
use crate::probe::workload::{Api, DatasetSpec, LoadSpec, WorkloadSpec};
use crate::probe::{summary, EarlyStop, ProbeReport, RequestRecord, RunOptions, Target};
use anyhow::{bail, Context, Result};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `infertune bench` (boxed: they are many).
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    options: Box<BenchOptions>,
}

/// The options of `infertune bench`.
#[derive(clap::Args, Debug)]
struct BenchOptions {
    /// Base URL of the server.
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    url: String,
    /// Endpoint: `chat` (/v1/chat/completions) or `completions` (/v1/completions).
    #[arg(long, value_enum, default_value = "chat")]
    api: ApiArg,
    /// Model name sent with each request.
    #[arg(long)]
    model: String,
    /// Bearer token; never printed or written.
    #[arg(long, env = "INFERTUNE_API_KEY", hide_env_values = true)]
    api_key: Option<Secret>,
    /// Closed loop: concurrent requests, one run per value (e.g. 1,8,64).
    #[arg(long, value_delimiter = ',', conflicts_with = "rate")]
    concurrency: Vec<u32>,
    /// Measured requests per run, aligned with --concurrency (e.g. 10,80,640).
    #[arg(long, value_delimiter = ',')]
    requests: Vec<u32>,
    /// Open loop: mean requests per second, sent at scheduled times.
    #[arg(long)]
    rate: Option<f64>,
    /// Open loop: gamma shape of the gaps (1 = Poisson, < 1 burstier).
    #[arg(long, default_value_t = 1.0, requires = "rate")]
    burstiness: f64,
    /// Open loop: most requests in flight.
    #[arg(long, requires = "rate")]
    max_concurrency: Option<u32>,
    /// Stop issuing requests after this long (e.g. 60s); instead of, or with, --requests.
    #[arg(long, value_parser = humantime::parse_duration)]
    duration: Option<Duration>,
    /// Requests sent first and left out of the statistics.
    #[arg(long, default_value_t = 0)]
    warmup: u32,
    /// Prompt source.
    #[arg(long, value_enum, default_value = "random")]
    dataset: DatasetArg,
    /// random: prompt tokens.
    #[arg(long, default_value_t = 256)]
    input_len: u32,
    /// Output tokens (`max_tokens`); same as --max-tokens.
    #[arg(long)]
    output_len: Option<u32>,
    /// random: lengths vary uniformly by ± this fraction.
    #[arg(long, default_value_t = 0.0)]
    range_ratio: f64,
    /// random: tokens of a prefix shared by every prompt.
    #[arg(long, default_value_t = 0)]
    prefix_len: u32,
    /// random: local tokenizer.json for exact lengths (else a word is a token).
    #[arg(long)]
    tokenizer: Option<PathBuf>,
    /// jsonl / sharegpt: the dataset file.
    #[arg(long)]
    dataset_path: Option<PathBuf>,
    /// jsonl: field holding the prompt (default: question, prompt or messages).
    #[arg(long)]
    prompt_field: Option<String>,
    /// `max_tokens` of each request (default 128 for random, 256 for jsonl, the reference
    /// answer's length for sharegpt).
    #[arg(long)]
    max_tokens: Option<u32>,
    /// `min_tokens` of each request.
    #[arg(long)]
    min_tokens: Option<u32>,
    /// Ask the server to ignore EOS.
    #[arg(long)]
    ignore_eos: bool,
    /// JSON object merged into every request body, e.g. '{"temperature":0}'.
    #[arg(long)]
    extra_body: Option<String>,
    /// Do not stream (TTFT, TPOT and ITL become unavailable).
    #[arg(long)]
    no_stream: bool,
    /// Per-request timeout.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Fail a started stream that sends nothing for this long.
    #[arg(long, value_parser = humantime::parse_duration)]
    stall_timeout: Option<Duration>,
    /// Seed of the dataset and the arrivals.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Per-request SLOs defining goodput, e.g. "ttft:p99<=2s,tpot:p99<=50ms".
    #[arg(long)]
    slo: Option<String>,
    /// Write the report(s) as JSON (an object for one run, a list for several).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write one CSV row per request.
    #[arg(long)]
    csv: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ApiArg {
    Chat,
    Completions,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
enum DatasetArg {
    Random,
    Jsonl,
    Sharegpt,
}

/// A secret that never shows in debug output.
#[derive(Clone)]
struct Secret(String);

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Secret(s.to_string()))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<hidden>")
    }
}

/// Runs `infertune bench`; exits non-zero only when every request failed.
pub fn run(args: BenchArgs) -> Result<i32> {
    let args = *args.options;
    let workloads = workloads(&args)?;
    let target = Target {
        base_url: args.url.clone(),
        model: args.model.clone(),
        api_key: args.api_key.as_ref().map(|s| s.0.clone()),
    };
    let mut csv = args.csv.as_deref().map(CsvOut::create).transpose()?;
    let runtime = crate::probe::runtime().context("starting the async runtime")?;
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    runtime.spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            flag.store(true, Ordering::SeqCst);
        }
    });
    let hook_flag = interrupted.clone();
    let options = RunOptions {
        progress: Some(Arc::new(BenchBar::default())),
        prune: Some(Arc::new(move |_| {
            hook_flag
                .load(Ordering::SeqCst)
                .then(|| EarlyStop::Pruned("interrupted (Ctrl-C); partial results".to_string()))
        })),
    };
    let mut reports: Vec<ProbeReport> = Vec::new();
    for (label, workload) in &workloads {
        let epoch = Instant::now();
        let mut on_record = |record: &RequestRecord| {
            if let Some(csv) = &mut csv {
                csv.row(label, epoch, record);
            }
        };
        let report = runtime.block_on(crate::probe::run_with_records(
            &target,
            workload,
            options.clone(),
            &mut on_record,
        ))?;
        print!("{}", summary::render(&report, label));
        reports.push(report);
        if interrupted.load(Ordering::SeqCst) {
            break;
        }
    }
    if let Some(csv) = csv {
        csv.finish()?;
    }
    if let Some(path) = &args.json {
        write_json(path, &reports)?;
    }
    let total = |key: &str| {
        reports
            .iter()
            .map(|r| r.metrics.get(key).copied().unwrap_or(0.0))
            .sum::<f64>()
    };
    Ok(if total("completed") == 0.0 && total("failed") > 0.0 {
        1
    } else {
        0
    })
}

fn write_json(path: &std::path::Path, reports: &[ProbeReport]) -> Result<()> {
    let value = match reports {
        [one] => one.json.clone(),
        many => serde_json::Value::Array(many.iter().map(|r| r.json.clone()).collect()),
    };
    let text = serde_json::to_string_pretty(&value).context("serialising the report")?;
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

/// One workload per run, each with a label naming its load level.
fn workloads(args: &BenchOptions) -> Result<Vec<(String, WorkloadSpec)>> {
    let base = WorkloadSpec {
        api: match args.api {
            ApiArg::Chat => Api::Chat,
            ApiArg::Completions => Api::Completions,
        },
        dataset: dataset(args)?,
        load: LoadSpec::Closed {
            concurrency: 1,
            requests: None,
            duration: None,
        },
        warmup: args.warmup,
        min_tokens: args.min_tokens,
        ignore_eos: args.ignore_eos,
        stream: !args.no_stream,
        extra_body: match &args.extra_body {
            Some(text) => Some(serde_json::from_str(text).with_context(|| {
                format!("--extra-body is not valid JSON: `{text}` (e.g. '{{\"temperature\":0}}')")
            })?),
            None => None,
        },
        timeout: args.timeout,
        stall_timeout: args.stall_timeout,
        seed: args.seed,
        slo: match &args.slo {
            Some(text) => {
                crate::record::parse_slos(text).map_err(|e| anyhow::anyhow!("--slo: {e}"))?
            }
            None => Vec::new(),
        },
    };
    let loads = loads(args)?;
    Ok(loads
        .into_iter()
        .map(|(label, load)| {
            (
                label,
                WorkloadSpec {
                    load,
                    ..base.clone()
                },
            )
        })
        .collect())
}

fn loads(args: &BenchOptions) -> Result<Vec<(String, LoadSpec)>> {
    if let Some(rate) = args.rate {
        if args.requests.len() > 1 {
            bail!(
                "--rate takes one --requests value, got {}",
                args.requests.len()
            );
        }
        let load = LoadSpec::Open {
            rate,
            burstiness: args.burstiness,
            max_concurrency: args.max_concurrency,
            requests: args.requests.first().copied(),
            duration: args.duration,
        };
        return Ok(vec![(format!("rate {rate}/s"), load)]);
    }
    let levels = if args.concurrency.is_empty() {
        vec![1]
    } else {
        args.concurrency.clone()
    };
    let counts: Vec<Option<u32>> = match (args.requests.len(), levels.len()) {
        (0, n) => vec![None; n],
        (1, n) => vec![Some(args.requests[0]); n],
        (r, n) if r == n => args.requests.iter().copied().map(Some).collect(),
        (r, n) => bail!(
            "--concurrency has {n} values but --requests has {r}; give one --requests value per \
             concurrency level (or a single one for all)"
        ),
    };
    if counts.iter().all(Option::is_none) && args.duration.is_none() {
        bail!("say how long each run lasts: --requests N or --duration 60s");
    }
    Ok(levels
        .into_iter()
        .zip(counts)
        .map(|(concurrency, requests)| {
            let load = LoadSpec::Closed {
                concurrency,
                requests,
                duration: args.duration,
            };
            (format!("concurrency {concurrency}"), load)
        })
        .collect())
}

fn dataset(args: &BenchOptions) -> Result<DatasetSpec> {
    let output_len = match (args.max_tokens, args.output_len) {
        (Some(a), Some(b)) if a != b => {
            bail!("--max-tokens {a} and --output-len {b} disagree; give one")
        }
        (a, b) => a.or(b),
    };
    if args.dataset != DatasetArg::Random && (args.tokenizer.is_some() || args.prefix_len > 0) {
        bail!("--tokenizer and --prefix-len apply to --dataset random only");
    }
    if args.dataset != DatasetArg::Jsonl && args.prompt_field.is_some() {
        bail!("--prompt-field applies to --dataset jsonl only");
    }
    let path = || {
        args.dataset_path
            .clone()
            .context("--dataset jsonl and sharegpt need --dataset-path FILE")
    };
    Ok(match args.dataset {
        DatasetArg::Random => DatasetSpec::Random {
            input_len: args.input_len,
            output_len: output_len.unwrap_or(128),
            range_ratio: args.range_ratio,
            prefix_len: args.prefix_len,
            tokenizer: args.tokenizer.clone(),
        },
        DatasetArg::Jsonl => DatasetSpec::Jsonl {
            path: path()?,
            field: args.prompt_field.clone(),
            output_len: output_len.unwrap_or(256),
        },
        DatasetArg::Sharegpt => DatasetSpec::Sharegpt {
            path: path()?,
            output_len,
        },
    })
}
