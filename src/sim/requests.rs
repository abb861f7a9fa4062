//! The requests a workload sends: lengths from the random dataset or shared-prefix chat, arrival
//! times of open loads.

use super::config::SimFailure;
use super::scheduler::SharedPrefix;
use crate::probe::{DatasetSpec, LoadSpec, WorkloadSpec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma};
use serde::{Deserialize, Serialize};

/// Lengths of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RequestShape {
    /// Prompt tokens, shared prefix included.
    pub prompt: u32,
    /// Tokens to generate (`max_tokens`).
    pub output: u32,
    /// Leading prompt tokens shared with other requests.
    pub prefix: SharedPrefix,
}

/// Shared-prefix chat traffic as inference-perf's `shared_prefix` generator sends it (run by
/// [`super::chat::eval_chat`]): the traffic of one workload (lengths in tokens).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedPrefixChat {
    /// System prompts, one per group.
    pub num_groups: u32,
    /// Users sharing each system prompt.
    pub prompts_per_group: u32,
    /// Tokens of each system prompt (the prefix the group's requests share).
    pub system_prompt_len: u32,
    /// Tokens of each question (unique to its user).
    pub question_len: u32,
    /// Tokens generated per request (`max_tokens` with `ignore_eos`).
    pub output_len: u32,
    /// Users come back: each turn resends the user's conversation as sent before, so all of
    /// it but the last partial block is a cached prefix.
    pub multi_turn: bool,
}

impl SharedPrefixChat {
    /// Why the traffic cannot be sent, naming the field.
    pub fn check(&self) -> Result<(), String> {
        crate::probe::dataset::check_shared_prefix(
            self.num_groups,
            self.prompts_per_group,
            self.question_len,
            self.output_len,
        )
    }

    /// Request `index`: users take turns in order, each sending its group's system prompt and
    /// its question; a returning user of a multi-turn chat shares its whole previous prompt
    /// (cached under a group of its own).
    pub(crate) fn request(&self, index: u64) -> RequestShape {
        let users = self.num_groups * self.prompts_per_group;
        let user = u32::try_from(index % u64::from(users)).expect("user < users");
        let prompt = self.system_prompt_len + self.question_len;
        let prefix = if self.multi_turn && index >= u64::from(users) {
            SharedPrefix {
                tokens: prompt,
                group: self.num_groups + user,
            }
        } else {
            SharedPrefix {
                tokens: self.system_prompt_len,
                group: user / self.prompts_per_group,
            }
        };
        RequestShape {
            prompt,
            output: self.output_len,
            prefix,
        }
    }
}

/// How many requests to send and when to stop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Limits {
    /// Unmeasured requests sent first.
    pub warmup: u32,
    /// Measured requests; `None` = until `duration`.
    pub requests: Option<u32>,
    /// Stop issuing measured requests this many seconds after the first one.
    pub duration: Option<f64>,
}

/// The load shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Load {
    /// Fixed number of workers.
    Closed { concurrency: u32 },
    /// Scheduled arrivals at `rate`/s (gamma gaps of shape `burstiness`), at most `cap` in flight.
    Open {
        rate: f64,
        burstiness: f64,
        cap: Option<u32>,
    },
}

/// A seeded source of request shapes and arrival gaps.
pub(crate) struct RequestSource {
    rng: ChaCha8Rng,
    input_len: u32,
    output_len: u32,
    range_ratio: f64,
    prefix_len: u32,
    gaps: Option<Gamma<f64>>,
    /// Shared-prefix chat traffic instead of the random dataset's lengths.
    chat: Option<SharedPrefixChat>,
    /// Arrivals exactly `1/rate` apart instead of gamma gaps.
    constant_gap: Option<f64>,
    sent: u64,
}

/// Read `workload` into a request source, its load shape and limits.
pub(crate) fn from_workload(
    workload: &WorkloadSpec,
) -> Result<(RequestSource, Load, Limits), SimFailure> {
    if let DatasetSpec::SharedPrefix {
        num_groups,
        prompts_per_group,
        system_prompt_len,
        question_len,
        output_len,
        multi_turn,
    } = &workload.dataset
    {
        let chat = SharedPrefixChat {
            num_groups: *num_groups,
            prompts_per_group: *prompts_per_group,
            system_prompt_len: *system_prompt_len,
            question_len: *question_len,
            output_len: *output_len,
            multi_turn: *multi_turn,
        };
        chat.check().map_err(SimFailure::invalid)?;
        let mut lengths = workload.clone();
        lengths.dataset = DatasetSpec::Random {
            input_len: *question_len,
            output_len: *output_len,
            range_ratio: 0.0,
            prefix_len: 0,
            tokenizer: None,
        };
        let (source, load, limits) = from_workload(&lengths)?;
        let chat = Some(chat);
        return Ok((RequestSource { chat, ..source }, load, limits));
    }
    let DatasetSpec::Random {
        input_len,
        output_len,
        range_ratio,
        prefix_len,
        ..
    } = &workload.dataset
    else {
        return Err(SimFailure::invalid(
            "the simulator generates only `random` datasets (jsonl and sharegpt prompts need real \
             text); use `dataset: {kind: random, input_len: …, output_len: …}`",
        ));
    };
    if !(0.0..1.0).contains(range_ratio) {
        return Err(SimFailure::invalid(format!(
            "dataset.range_ratio must be in [0, 1), got {range_ratio}"
        )));
    }
    workload.load.validate().map_err(SimFailure::invalid)?;
    let load =
        match &workload.load {
            LoadSpec::Closed { concurrency, .. } => Load::Closed {
                concurrency: *concurrency,
            },
            LoadSpec::Open {
                rate,
                burstiness,
                max_concurrency,
                ..
            } => Load::Open {
                rate: *rate,
                burstiness: *burstiness,
                cap: *max_concurrency,
            },
            LoadSpec::Trace { .. } | LoadSpec::Stages { .. } => return Err(SimFailure::invalid(
                "`sim eval` models closed and open loads; send a trace replay or staged load to \
                 `infertune sim serve` with `infertune bench`",
            )),
        };
    let (requests, duration) = workload.load.limits();
    let gaps = match load {
        Load::Open {
            rate, burstiness, ..
        } => Some(
            Gamma::new(burstiness, 1.0 / (rate * burstiness))
                .map_err(|e| SimFailure::invalid(format!("load.burstiness: {e}")))?,
        ),
        Load::Closed { .. } => None,
    };
    let source = RequestSource {
        rng: ChaCha8Rng::seed_from_u64(workload.seed),
        input_len: *input_len,
        output_len: *output_len,
        range_ratio: *range_ratio,
        prefix_len: *prefix_len,
        gaps,
        chat: None,
        constant_gap: None,
        sent: 0,
    };
    let limits = Limits {
        warmup: workload.warmup_requests(),
        requests,
        duration: duration.map(|d| d.as_secs_f64()),
    };
    Ok((source, load, limits))
}

impl RequestSource {
    /// Send `chat`'s requests (in its order) at a constant `rate` per second instead.
    pub(crate) fn into_chat(self, chat: SharedPrefixChat, rate: f64) -> RequestSource {
        RequestSource {
            chat: Some(chat),
            constant_gap: Some(1.0 / rate),
            ..self
        }
    }

    /// The next request's lengths.
    pub(crate) fn next_shape(&mut self) -> RequestShape {
        let index = self.sent;
        self.sent += 1;
        if let Some(chat) = &self.chat {
            return chat.request(index);
        }
        let input = self.draw(self.input_len);
        RequestShape {
            prompt: self.prefix_len + input,
            output: self.draw(self.output_len).max(1),
            prefix: SharedPrefix {
                tokens: self.prefix_len,
                group: 0,
            },
        }
    }

    /// Seconds until the next arrival of an open load (0 for closed loads).
    pub(crate) fn next_gap(&mut self) -> f64 {
        if let Some(gap) = self.constant_gap {
            return gap;
        }
        match &self.gaps {
            Some(gamma) => gamma.sample(&mut self.rng),
            None => 0.0,
        }
    }

    /// Uniform in `[len·(1−r), len·(1+r)]`, as vLLM's random dataset draws lengths.
    fn draw(&mut self, len: u32) -> u32 {
        if self.range_ratio == 0.0 {
            return len;
        }
        let lo = (f64::from(len) * (1.0 - self.range_ratio)) as u32;
        let hi = (f64::from(len) * (1.0 + self.range_ratio)) as u32;
        self.rng.random_range(lo..=hi.max(lo))
    }
}
