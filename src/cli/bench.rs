//! `infertune bench`: load-tests a running OpenAI-compatible server, at one load, a list of
//! loads, or a search for the highest load holding every SLO (`--sweep`).

use super::bench_progress::{BenchBar, Runs};
use super::bench_session::{Outputs, Session};
use crate::probe::loadsearch::{LoadKnob, LoadSearchSpec};
use crate::probe::spread::Spread;
use crate::probe::workload::{Api, DatasetSpec, LoadSpec, TraceFormat, WorkloadSpec};
use crate::probe::Target;
use crate::record::metric;
use anyhow::{bail, Context, Result};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `infertune bench` (boxed: they are many).
#[derive(clap::Args, Debug)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    options: Box<BenchOptions>,
}

/// The options of `infertune bench`.
#[derive(clap::Args, Debug)]
struct BenchOptions {
    /// Workload file (a probe workload in YAML, as in a search space's `probe:`): any dataset
    /// and load kind; replaces the dataset, load and request flags.
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "api", "concurrency", "requests", "rate", "duration", "warmup", "dataset", "input_len",
        "output_len", "dataset_path", "max_tokens", "trace_format", "seed", "slo", "ignore_eos",
    ])]
    workload: Option<PathBuf>,
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
    /// Measured requests per run, aligned with --concurrency or --rate (e.g. 10,80,640).
    #[arg(long, value_delimiter = ',')]
    requests: Vec<u32>,
    /// Open loop: mean requests per second, sent at scheduled times, one run per value.
    #[arg(long, value_delimiter = ',')]
    rate: Vec<f64>,
    /// Open loop: gamma shape of the gaps (1 = Poisson, < 1 burstier).
    #[arg(long, default_value_t = 1.0, requires = "rate")]
    burstiness: f64,
    /// Open loop or trace replay: most requests in flight.
    #[arg(long)]
    max_concurrency: Option<u32>,
    /// Stop issuing requests after this long (e.g. 60s); instead of, or with, --requests.
    #[arg(long, value_parser = humantime::parse_duration)]
    duration: Option<Duration>,
    /// Requests sent first and left out of the statistics [default: the concurrency].
    #[arg(long)]
    warmup: Option<u32>,
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
    /// jsonl / sharegpt / trace: the dataset file.
    #[arg(long)]
    dataset_path: Option<PathBuf>,
    /// trace: the file's layout.
    #[arg(long, value_enum)]
    trace_format: Option<TraceFormatArg>,
    /// trace: replay this many times faster than the trace.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// trace: skip the trace's first part (trace time, e.g. 10m).
    #[arg(long, value_parser = humantime::parse_duration)]
    trace_start: Option<Duration>,
    /// trace: replay this much of the trace (trace time; it takes this / --speed).
    #[arg(long, value_parser = humantime::parse_duration, conflicts_with = "requests")]
    trace_duration: Option<Duration>,
    /// trace: the model's context (input + output tokens); longer requests are refused
    /// unless --trace-scale.
    #[arg(long)]
    max_context: Option<u32>,
    /// trace: scale all lengths by one factor so the longest request fits --max-context.
    #[arg(long, requires = "max_context")]
    trace_scale: bool,
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
    /// Write the report(s) as JSON (an object for one run, a list for several); `-` prints it
    /// on stdout (the text goes to stderr then).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write one CSV row per request.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write a folder: the table of the runs (`sweep.csv`), `report.html` and `report.md` with
    /// plots of throughput, latency and failures against the load, and each run's JSON and CSV
    /// under `runs/`.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Find the highest concurrency (or --rate) holding every --slo: double it from its one
    /// given value (default 1), then bisect.
    #[arg(long, requires = "slo")]
    sweep: bool,
    /// --sweep: the highest load tried.
    #[arg(long, default_value_t = 1024.0, requires = "sweep")]
    sweep_max: f64,
    /// --sweep: the most runs.
    #[arg(long, default_value_t = 20, requires = "sweep")]
    sweep_runs: u32,
    /// Run each load this many times back to back on the same server, and report the spread
    /// of output throughput between the runs.
    #[arg(long, default_value_t = 1, conflicts_with = "sweep", value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// `--json` files of earlier sessions against other starts of the same server and
    /// workload, one start each: their runs join this session's, and the spread is split into
    /// the part between runs on one server and the part a new start adds.
    #[arg(long, num_args = 1.., value_name = "JSON", conflicts_with = "sweep")]
    starts: Vec<PathBuf>,
}

/// What a session runs: listed loads, or a load search from one.
enum Plan {
    Listed(Vec<LoadSpec>),
    Search(LoadSearchSpec),
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
    Trace,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
enum TraceFormatArg {
    Azure,
    Mooncake,
    Jsonl,
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
    let (base, loads) = match &args.workload {
        Some(path) => {
            let base = crate::space::load_workload(path)?;
            let loads = vec![base.load.clone()];
            (base, loads)
        }
        None => (workload(&args)?, loads(&args)?),
    };
    let (plan, runs) = plan(&args, loads)?;
    let target = Target {
        base_url: args.url.clone(),
        model: args.model.clone(),
        api_key: args.api_key.as_ref().map(|s| s.0.clone()),
    };
    let outputs = Outputs {
        json: args.json.clone(),
        csv: args.csv.clone(),
        report: args.report.clone(),
    };
    let mut session = Session::start(target, outputs, BenchBar::new(runs))?;
    let knob = if args.rate.is_empty() {
        "concurrency"
    } else {
        "rate"
    };
    let knee = match plan {
        Plan::Listed(loads) => {
            'loads: for load in loads {
                for _ in 0..args.runs {
                    session.run(&WorkloadSpec {
                        load: load.clone(),
                        ..base.clone()
                    })?;
                    if session.interrupted() {
                        break 'loads;
                    }
                }
            }
            if args.runs > 1 || !args.starts.is_empty() {
                let mut starts = earlier_starts(&args.starts)?;
                starts.push(session.figures(metric::OUTPUT_THROUGHPUT));
                println!("Output throughput: {}", Spread::of(&starts));
            }
            None
        }
        Plan::Search(spec) => super::bench_sweep::run(&mut session, &base, &spec)?,
    };
    session.finish(knob, &base.slo, knee)
}

/// The workload of every run, at the first load.
fn workload(args: &BenchOptions) -> Result<WorkloadSpec> {
    Ok(WorkloadSpec {
        api: match args.api {
            ApiArg::Chat => Api::Chat,
            ApiArg::Completions => Api::Completions,
        },
        dataset: dataset(args)?,
        load: loads(args)?.remove(0),
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
        precision: None,
    })
}

/// The output throughput of every run in `files` (bench `--json` reports: one object or a
/// list), one list per file.
fn earlier_starts(files: &[PathBuf]) -> Result<Vec<Vec<f64>>> {
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--starts: cannot read {}", path.display()))?;
            let json: serde_json::Value = serde_json::from_str(&text).with_context(|| {
                format!("--starts: {} is not a bench --json report", path.display())
            })?;
            let runs = match json {
                serde_json::Value::Array(runs) => runs,
                one => vec![one],
            };
            runs.iter()
                .map(|run| run[metric::OUTPUT_THROUGHPUT].as_f64())
                .collect::<Option<Vec<f64>>>()
                .with_context(|| {
                    format!(
                        "--starts: a run in {} has no `{}`; pass the --json file of a bench session",
                        path.display(),
                        metric::OUTPUT_THROUGHPUT
                    )
                })
        })
        .collect()
}

/// The session's plan over `loads` and how many runs it makes.
fn plan(args: &BenchOptions, loads: Vec<LoadSpec>) -> Result<(Plan, Runs)> {
    if !args.sweep {
        let repeats = args.runs as usize;
        let planned = loads
            .iter()
            .map(|l| l.limits().0.map(|n| u64::from(n) * u64::from(args.runs)))
            .sum();
        let runs = Runs::Listed(loads.len() * repeats, planned);
        return Ok((Plan::Listed(loads), runs));
    }
    let (over, low) = match loads.as_slice() {
        [LoadSpec::Closed { concurrency, .. }] => (LoadKnob::Concurrency, f64::from(*concurrency)),
        [LoadSpec::Open { rate, .. }] => (LoadKnob::Rate, *rate),
        _ => bail!(
            "--sweep starts from one --concurrency or --rate value, got {}",
            loads.len()
        ),
    };
    if args.sweep_max < low {
        bail!(
            "--sweep-max {} is below the first load {low}",
            args.sweep_max
        );
    }
    if args.sweep_runs == 0 {
        bail!("--sweep-runs must be at least 1");
    }
    let spec = LoadSearchSpec {
        over,
        low,
        high: args.sweep_max,
        rounds: args.sweep_runs,
    };
    Ok((Plan::Search(spec), Runs::AtMost(args.sweep_runs as usize)))
}

/// One load per run: each --rate, else each --concurrency (default 1), with its --requests;
/// a replayed trace's own arrivals.
fn loads(args: &BenchOptions) -> Result<Vec<LoadSpec>> {
    if args.dataset == DatasetArg::Trace {
        if !args.rate.is_empty() || !args.concurrency.is_empty() || args.duration.is_some() {
            bail!(
                "--dataset trace sends requests at the trace's times: drop --rate, \
                 --concurrency and --duration (use --speed, --trace-start, --trace-duration or \
                 --requests)"
            );
        }
        return Ok(vec![LoadSpec::Trace {
            max_concurrency: args.max_concurrency,
        }]);
    }
    if args.rate.is_empty() && args.max_concurrency.is_some() {
        bail!("--max-concurrency applies to --rate and --dataset trace; a closed loop's is --concurrency");
    }
    let (knob, levels): (&str, Vec<f64>) = if args.rate.is_empty() {
        let levels = match args.concurrency.as_slice() {
            [] => vec![1.0],
            list => list.iter().map(|c| f64::from(*c)).collect(),
        };
        ("--concurrency", levels)
    } else {
        ("--rate", args.rate.clone())
    };
    let counts: Vec<Option<u32>> = match (args.requests.len(), levels.len()) {
        (0, n) => vec![None; n],
        (1, n) => vec![Some(args.requests[0]); n],
        (r, n) if r == n => args.requests.iter().copied().map(Some).collect(),
        (r, n) => bail!(
            "{knob} has {n} values but --requests has {r}; give one --requests value per \
             {} level (or a single one for all)",
            knob.trim_start_matches('-')
        ),
    };
    if counts.iter().all(Option::is_none) && args.duration.is_none() {
        bail!("say how long each run lasts: --requests N or --duration 60s");
    }
    Ok(levels
        .into_iter()
        .zip(counts)
        .map(|(level, requests)| {
            if args.rate.is_empty() {
                LoadSpec::Closed {
                    concurrency: level as u32,
                    requests,
                    duration: args.duration,
                }
            } else {
                LoadSpec::Open {
                    rate: level,
                    burstiness: args.burstiness,
                    max_concurrency: args.max_concurrency,
                    requests,
                    duration: args.duration,
                }
            }
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
    let trace_flags = args.trace_format.is_some()
        || args.trace_start.is_some()
        || args.trace_duration.is_some()
        || args.max_context.is_some()
        || args.speed != 1.0;
    if args.dataset != DatasetArg::Trace && trace_flags {
        bail!("--trace-format, --speed, --trace-start, --trace-duration and --max-context apply to --dataset trace only");
    }
    let path = || {
        args.dataset_path
            .clone()
            .context("--dataset jsonl, sharegpt and trace need --dataset-path FILE")
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
        DatasetArg::Trace => {
            if output_len.is_some() {
                bail!("--dataset trace sends each request's own output length; drop --max-tokens");
            }
            let requests = match args.requests.as_slice() {
                [] => None,
                [n] => Some(*n),
                _ => bail!("--dataset trace takes one --requests value"),
            };
            DatasetSpec::Trace {
                path: path()?,
                format: match args.trace_format {
                    Some(TraceFormatArg::Azure) => TraceFormat::Azure,
                    Some(TraceFormatArg::Mooncake) => TraceFormat::Mooncake,
                    Some(TraceFormatArg::Jsonl) => TraceFormat::Jsonl,
                    None => bail!("--dataset trace needs --trace-format azure|mooncake|jsonl"),
                },
                speed: args.speed,
                start: args.trace_start.unwrap_or_default(),
                duration: args.trace_duration,
                requests,
                max_context: args.max_context,
                scale: args.trace_scale,
            }
        }
    })
}
