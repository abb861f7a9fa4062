//! The workload description: what requests to send, and how.

use super::precision::Precision;
use crate::record::Slo;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Which OpenAI endpoint to call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `/v1/chat/completions` with `messages`.
    #[default]
    Chat,
    /// `/v1/completions` with `prompt`.
    Completions,
}

/// A fixed, seeded workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Endpoint kind.
    #[serde(default)]
    pub api: Api,
    /// Where prompts come from.
    pub dataset: DatasetSpec,
    /// Load shape.
    pub load: LoadSpec,
    /// Requests sent first and excluded from statistics; absent, the load's concurrency (see
    /// [`WorkloadSpec::warmup_requests`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<u32>,
    /// `min_tokens` sent with each request (vLLM extension).
    #[serde(default)]
    pub min_tokens: Option<u32>,
    /// Ask the server to ignore EOS so outputs have their requested length.
    #[serde(default)]
    pub ignore_eos: bool,
    /// Stream responses (SSE). Without streaming TTFT/TPOT/ITL are unavailable.
    #[serde(default = "yes")]
    pub stream: bool,
    /// JSON object merged into every request body.
    #[serde(default)]
    pub extra_body: Option<serde_json::Value>,
    /// Per-request timeout.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// Give up on a stream that sends nothing for this long.
    #[serde(default, with = "humantime_serde")]
    pub stall_timeout: Option<Duration>,
    /// Seed for the dataset and arrivals.
    #[serde(default)]
    pub seed: u64,
    /// SLOs that define goodput (per request thresholds).
    #[serde(default)]
    pub slo: Vec<Slo>,
    /// Run until the steady-state output throughput is known to this precision (its ceiling
    /// replaces the load's duration); absent, the load's requests or duration end the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<Precision>,
}

/// Prompt source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum DatasetSpec {
    /// Synthetic prompts of exact token lengths.
    Random {
        /// Input tokens per request (before the range ratio).
        input_len: u32,
        /// Output tokens per request (`max_tokens`).
        output_len: u32,
        /// Lengths vary uniformly in `[len*(1-r), len*(1+r)]`.
        #[serde(default)]
        range_ratio: f64,
        /// Tokens of a prefix shared by every prompt.
        #[serde(default)]
        prefix_len: u32,
        /// Local `tokenizer.json`; without one a word counts as a token.
        #[serde(default)]
        tokenizer: Option<PathBuf>,
    },
    /// One JSON object a line: `{"question"}`, `{"prompt"}` or chat `{"messages"}`.
    Jsonl {
        /// File path.
        path: PathBuf,
        /// Field holding the prompt (default: first of question/prompt/messages present).
        #[serde(default)]
        field: Option<String>,
        /// `max_tokens` for each request.
        output_len: u32,
    },
    /// ShareGPT JSON (`[{"conversations":[{"from","value"},...]}]`).
    Sharegpt {
        /// File path.
        path: PathBuf,
        /// Overrides the reference answer's length as `max_tokens`.
        #[serde(default)]
        output_len: Option<u32>,
    },
    /// Shared-prefix chat as inference-perf's `shared_prefix` generator sent it in the public
    /// H100 measurements: groups of users sharing a system prompt, each asking its question;
    /// multi-turn users resend their conversation (see `probe::dataset::shared_prefix`).
    #[serde(rename = "shared_prefix")]
    SharedPrefix(SharedPrefix),
    /// A timestamped production trace, replayed: each request goes out at its (scaled) arrival
    /// time with exactly the trace's input and output token counts (`max_tokens` with
    /// `ignore_eos`; run it with `load: {kind: trace}`). The file is streamed, never held in
    /// memory.
    Trace {
        /// File path.
        path: PathBuf,
        /// How the file is laid out.
        format: TraceFormat,
        /// Replay this many times faster than the trace (2 = twice the arrival rate).
        #[serde(default = "one")]
        speed: f64,
        /// Skip the trace's first `start` (trace time).
        #[serde(default, with = "humantime_serde")]
        start: Duration,
        /// Replay this much of the trace after `start` (trace time; it takes `duration/speed`).
        #[serde(default, with = "humantime_serde")]
        duration: Option<Duration>,
        /// Replay at most this many requests.
        #[serde(default)]
        requests: Option<u32>,
        /// The model's context (input + output tokens); a longer request is an error unless
        /// `scale` is set.
        #[serde(default)]
        max_context: Option<u32>,
        /// Scale every length (and Mooncake's block size) by one factor so that the longest
        /// request of the window fits `max_context`; the factor is stated in the report.
        #[serde(default)]
        scale: bool,
    },
}

/// The layout of a trace file.
/// The sizes of shared-prefix chat: `num_groups` system prompts, `prompts_per_group` users
/// in each group, each request its group's system prompt and its user's question.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedPrefix {
    /// System prompts, one per group.
    pub num_groups: u32,
    /// Users sharing each system prompt.
    pub prompts_per_group: u32,
    /// Tokens of each system prompt (the prefix the group's requests share).
    pub system_prompt_len: u32,
    /// Tokens of each user's question.
    pub question_len: u32,
    /// Tokens generated per request (`max_tokens`; send with `ignore_eos`).
    pub output_len: u32,
    /// Each user's next request resends its conversation (else every question is new).
    #[serde(default)]
    pub multi_turn: bool,
}

impl SharedPrefix {
    /// Why shared-prefix chat of these sizes cannot be sent, naming the field.
    pub fn check(&self) -> Result<(), String> {
        let positive = [
            ("num_groups", self.num_groups),
            ("prompts_per_group", self.prompts_per_group),
            ("question_len", self.question_len),
            ("output_len", self.output_len),
        ];
        match positive.iter().find(|(_, v)| *v == 0) {
            Some((name, _)) => Err(format!("shared-prefix chat: `{name}` must be at least 1")),
            None => Ok(()),
        }
    }

    /// Simulated users: `num_groups × prompts_per_group`.
    pub fn users(&self) -> u64 {
        u64::from(self.num_groups) * u64::from(self.prompts_per_group)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// Azure LLM inference CSV: `TIMESTAMP,ContextTokens,GeneratedTokens`, timestamps as
    /// `2023-11-16 18:15:46.6805900`.
    Azure,
    /// Mooncake JSONL: `{"timestamp": ms, "input_length", "output_length", "hash_ids"}`, each
    /// hash id naming a 512-token block (equal ids, identical blocks).
    Mooncake,
    /// JSONL: `{"timestamp": seconds, "input_length", "output_length"}`, optional `hash_ids`
    /// of 512-token blocks.
    Jsonl,
}

/// How requests are issued.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum LoadSpec {
    /// A fixed number of workers, each sending its next request when the previous one ends.
    Closed {
        /// Concurrent requests.
        concurrency: u32,
        /// Total measured requests (after warmup); or use `duration`.
        #[serde(default)]
        requests: Option<u32>,
        /// Stop issuing after this long.
        #[serde(default, with = "humantime_serde")]
        duration: Option<Duration>,
    },
    /// Requests sent at scheduled absolute times (Poisson when burstiness = 1, gamma otherwise).
    Open {
        /// Mean requests per second.
        rate: f64,
        /// Gamma shape; 1 = Poisson, < 1 burstier.
        #[serde(default = "one")]
        burstiness: f64,
        /// Cap on requests in flight.
        #[serde(default)]
        max_concurrency: Option<u32>,
        /// Total measured requests; or use `duration`.
        #[serde(default)]
        requests: Option<u32>,
        /// Stop issuing after this long.
        #[serde(default, with = "humantime_serde")]
        duration: Option<Duration>,
    },
    /// Requests sent at the arrival times of a `trace` dataset, which also bounds the run.
    Trace {
        /// Cap on requests in flight.
        #[serde(default)]
        max_concurrency: Option<u32>,
    },
    /// Open-loop stages one after another, each at its own rate for its own duration; the
    /// report has the metrics of each stage besides the whole run's.
    Stages {
        /// The stages, in order.
        stages: Vec<Stage>,
        /// How arrivals are spaced within a stage.
        #[serde(default)]
        arrivals: StageArrivals,
        /// Cap on requests in flight.
        #[serde(default)]
        max_concurrency: Option<u32>,
    },
}

/// One stage of a staged load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// Requests per second.
    pub rate: f64,
    /// How long the stage lasts.
    #[serde(with = "humantime_serde")]
    pub duration: Duration,
}

/// How arrivals are spaced within a stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageArrivals {
    /// Exactly `1/rate` apart (inference-perf's `constant`).
    #[default]
    Constant,
    /// Exponential gaps of mean `1/rate`, seeded.
    Poisson,
}

fn yes() -> bool {
    true
}

fn one() -> f64 {
    1.0
}

fn default_timeout() -> Duration {
    Duration::from_secs(600)
}

impl WorkloadSpec {
    /// The warm-up requests sent: `warmup` when given, else the load's concurrency, so that the
    /// first measured wave meets a warm server (none when the load sets no concurrency).
    pub fn warmup_requests(&self) -> u32 {
        self.warmup
            .unwrap_or_else(|| self.load.concurrency().unwrap_or(0))
    }

    /// The load a run of this workload runs: the load as written, or, with `precision`, the
    /// load ended after `end` of it (the ceiling for a real server; the simulator, which has no
    /// run-to-run noise to wait out, runs the floor). Only a streamed closed or open loop
    /// bounded by nothing else can end on its interval.
    pub(crate) fn measured_load(
        &self,
        end: fn(&Precision) -> Duration,
    ) -> Result<LoadSpec, String> {
        let Some(precision) = &self.precision else {
            return Ok(self.load.clone());
        };
        precision.validate()?;
        if !self.stream {
            return Err("precision: the interval counts tokens as they stream; set `stream: true` or remove `precision`".into());
        }
        let mut bounded = self.load.clone();
        match &mut bounded {
            LoadSpec::Closed {
                requests, duration, ..
            }
            | LoadSpec::Open {
                requests, duration, ..
            } => {
                if requests.is_some() || duration.is_some() {
                    return Err("precision ends the run on its interval, with `precision.max` as its ceiling: remove the load's `requests` and `duration`".into());
                }
                *duration = Some(end(precision));
            }
            LoadSpec::Trace { .. } | LoadSpec::Stages { .. } => {
                return Err("precision applies to a closed or open loop; a trace or staged load ends on its own schedule: remove `precision`".into());
            }
        }
        Ok(bounded)
    }

    /// A streamed, EOS-ignoring closed loop of random prompts (a word per token without a
    /// tokenizer): `requests` measured requests at `concurrency`, no warm-up, seed 0.
    pub fn closed_random(input_len: u32, output_len: u32, concurrency: u32, requests: u32) -> Self {
        WorkloadSpec {
            api: Api::Chat,
            dataset: DatasetSpec::Random {
                input_len,
                output_len,
                range_ratio: 0.0,
                prefix_len: 0,
                tokenizer: None,
            },
            load: LoadSpec::Closed {
                concurrency,
                requests: Some(requests),
                duration: None,
            },
            warmup: Some(0),
            min_tokens: None,
            ignore_eos: true,
            stream: true,
            extra_body: None,
            timeout: default_timeout(),
            stall_timeout: None,
            seed: 0,
            slo: Vec::new(),
            precision: None,
        }
    }
}

impl LoadSpec {
    /// Most requests in flight: a closed loop's concurrency, else `max_concurrency` when set.
    pub fn concurrency(&self) -> Option<u32> {
        match self {
            LoadSpec::Closed { concurrency, .. } => Some(*concurrency),
            LoadSpec::Open {
                max_concurrency, ..
            }
            | LoadSpec::Trace { max_concurrency }
            | LoadSpec::Stages {
                max_concurrency, ..
            } => *max_concurrency,
        }
    }

    /// How many measured requests, and for how long, the load runs (either may be absent).
    pub fn limits(&self) -> (Option<u32>, Option<Duration>) {
        match self {
            LoadSpec::Closed {
                requests, duration, ..
            }
            | LoadSpec::Open {
                requests, duration, ..
            } => (*requests, *duration),
            LoadSpec::Trace { .. } => (None, None),
            LoadSpec::Stages { stages, .. } => {
                (None, Some(stages.iter().map(|s| s.duration).sum()))
            }
        }
    }

    /// Checks the numbers of the load; the error says which value is wrong and what it must be.
    pub(crate) fn validate(&self) -> Result<(), String> {
        match self {
            LoadSpec::Closed { concurrency: 0, .. } => {
                return Err("closed-loop load: concurrency must be at least 1".into())
            }
            LoadSpec::Closed { .. } => {}
            LoadSpec::Open {
                rate,
                burstiness,
                max_concurrency,
                ..
            } => {
                if !(rate.is_finite() && *rate > 0.0) {
                    return Err(format!(
                        "open-loop load: rate must be a positive number of requests/s, got {rate}"
                    ));
                }
                if !(burstiness.is_finite() && *burstiness > 0.0) {
                    return Err(format!(
                        "open-loop load: burstiness must be positive (1 = Poisson), got {burstiness}"
                    ));
                }
                if *max_concurrency == Some(0) {
                    return Err("open-loop load: max_concurrency must be at least 1".into());
                }
            }
            LoadSpec::Trace { max_concurrency } => {
                return match max_concurrency {
                    Some(0) => Err("trace load: max_concurrency must be at least 1".into()),
                    _ => Ok(()),
                };
            }
            LoadSpec::Stages {
                stages,
                max_concurrency,
                ..
            } => {
                if stages.is_empty() {
                    return Err("staged load: list at least one stage, e.g. `stages: [{rate: 8, duration: 10m}]`".into());
                }
                for (i, stage) in stages.iter().enumerate() {
                    if !(stage.rate.is_finite() && stage.rate > 0.0) {
                        return Err(format!("staged load: stages[{i}].rate must be a positive number of requests/s, got {}", stage.rate));
                    }
                    if stage.duration.is_zero() {
                        return Err(format!(
                            "staged load: stages[{i}].duration must be more than zero"
                        ));
                    }
                }
                if *max_concurrency == Some(0) {
                    return Err("staged load: max_concurrency must be at least 1".into());
                }
            }
        }
        match self.limits() {
            (None, None) => Err("the load needs a number of requests or a duration (e.g. `requests: 100` or `duration: 60s`)".into()),
            (Some(0), _) | (_, Some(Duration::ZERO)) => {
                Err("the load's requests and duration must be more than zero".into())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_defaults_to_the_loads_concurrency() {
        let parse = |load: &str, warmup: &str| -> WorkloadSpec {
            serde_saphyr::from_str(&format!(
                "dataset: {{kind: random, input_len: 8, output_len: 8}}\nload: {load}\n{warmup}"
            ))
            .unwrap()
        };
        let closed = "{kind: closed, concurrency: 16, requests: 40}";
        assert_eq!(parse(closed, "").warmup_requests(), 16);
        assert_eq!(parse(closed, "warmup: 3").warmup_requests(), 3);
        assert_eq!(parse(closed, "warmup: 0").warmup_requests(), 0);
        let capped = "{kind: open, rate: 4, max_concurrency: 8, requests: 40}";
        assert_eq!(parse(capped, "").warmup_requests(), 8);
        let uncapped = "{kind: open, rate: 4, requests: 40}";
        assert_eq!(parse(uncapped, "").warmup_requests(), 0);
    }

    #[test]
    fn precision_takes_an_unbounded_streamed_loop_and_ends_it_after_its_ceiling() {
        let parse = |text: &str| -> WorkloadSpec {
            serde_saphyr::from_str(&format!(
                "dataset: {{kind: random, input_len: 8, output_len: 8}}\n{text}"
            ))
            .unwrap()
        };
        let precise = parse("load: {kind: closed, concurrency: 4}\nprecision: {max: 2m}");
        let load = precise.measured_load(|p| p.max).unwrap();
        assert_eq!(load.limits(), (None, Some(Duration::from_secs(120))));
        let bounded = parse("load: {kind: closed, concurrency: 4, duration: 40s}\nprecision: {}");
        let e = bounded.measured_load(|p| p.max).unwrap_err();
        assert!(
            e.contains("remove the load's `requests` and `duration`"),
            "{e}"
        );
        let whole = parse("load: {kind: closed, concurrency: 4}\nstream: false\nprecision: {}");
        assert!(whole
            .measured_load(|p| p.max)
            .unwrap_err()
            .contains("stream: true"));
    }

    #[test]
    fn validate_names_the_wrong_value() {
        let closed = |concurrency, requests| LoadSpec::Closed {
            concurrency,
            requests,
            duration: None,
        };
        assert!(closed(4, Some(10)).validate().is_ok());
        assert!(closed(0, Some(10))
            .validate()
            .unwrap_err()
            .contains("concurrency"));
        assert!(closed(4, None)
            .validate()
            .unwrap_err()
            .contains("requests or a duration"));
        assert!(closed(4, Some(0))
            .validate()
            .unwrap_err()
            .contains("more than zero"));
        let open = LoadSpec::Open {
            rate: 0.0,
            burstiness: 1.0,
            max_concurrency: None,
            requests: Some(5),
            duration: None,
        };
        assert!(open.validate().unwrap_err().contains("rate"));
    }
}
