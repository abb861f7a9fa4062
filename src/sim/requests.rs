//! The requests a workload sends — their lengths, what their prompts are made of (so the
//! prefix cache sees the sharing the real traffic has), and when open loads send them: from
//! the random dataset, shared-prefix chat or a replayed trace, at gamma or constant gaps, in
//! stages, or at a trace's arrival times.

use super::cache::{Content, Segment};
use super::config::SimFailure;
use crate::probe::dataset::{ReplayRow, TraceReplay};
use crate::probe::workload::{SharedPrefix, Stage};
use crate::probe::{Api, DatasetSpec, LoadSpec, StageClock, WorkloadSpec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma};
use std::collections::VecDeque;

/// Kinds of named prompt content (keep their keys apart).
const RANDOM_PREFIX: u64 = 1;
const SYSTEM_PROMPT: u64 = 2;
const USER_TURN: u64 = 3;
const TRACE_BLOCK: u64 = 4;

/// One request: its lengths and what its prompt is made of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RequestShape {
    /// Prompt tokens.
    pub prompt: u32,
    /// Tokens to generate (`max_tokens`).
    pub output: u32,
    /// The prompt's content shared with other requests (the rest is its own).
    pub content: Content,
}

/// Request `index` of shared-prefix chat (run by [`super::chat::eval_chat`]): users take
/// turns in order, each sending its group's system prompt and a question — a new one each
/// time, or with `multi_turn` its conversation so far (the same tokens each turn, as the
/// probe's dataset sends them), so all of it but the last partial block is a cached prefix.
pub(crate) fn chat_request(chat: &SharedPrefix, index: u64) -> RequestShape {
    let user = index % chat.users();
    let group = user / u64::from(chat.prompts_per_group);
    let mut segments = vec![Segment::named(SYSTEM_PROMPT, group, chat.system_prompt_len)];
    if chat.multi_turn {
        segments.push(Segment::named(USER_TURN, user, chat.question_len));
    }
    RequestShape {
        prompt: chat.system_prompt_len + chat.question_len,
        output: chat.output_len,
        content: Content::new(segments),
    }
}

/// How many requests to send and when to stop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Limits {
    /// Unmeasured requests sent first.
    pub warmup: u32,
    /// Measured requests; `None` = until `duration` or the end of the arrivals.
    pub requests: Option<u32>,
    /// Stop issuing measured requests this many seconds after the first one.
    pub duration: Option<f64>,
}

/// The load shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Load {
    /// Fixed number of workers.
    Closed { concurrency: u32 },
    /// Arrivals at the times the source gives, at most `cap` in flight.
    Open { cap: Option<u32> },
}

/// Where request lengths and content come from.
enum Lengths {
    Random {
        input_len: u32,
        output_len: u32,
        range_ratio: f64,
        prefix_len: u32,
    },
    Chat(SharedPrefix),
    /// A replayed trace; rows read for arrivals wait in `pending` until sent.
    Trace {
        replay: Box<TraceReplay>,
        pending: VecDeque<ReplayRow>,
    },
}

/// When open loads send.
enum Arrivals {
    /// Closed loops: when a worker is free.
    Workers,
    /// Gamma gaps (Poisson at shape 1) after the `last` arrival (ns), the first at 0.
    Gamma {
        gamma: Gamma<f64>,
        last: Option<u64>,
    },
    /// Exactly `gap` seconds apart, the first at 0.
    Constant { gap: f64, last: Option<u64> },
    /// Stages one after another.
    Stages(Box<StageClock>),
    /// At the trace's times.
    Trace,
}

/// A seeded source of requests and arrival times.
pub(crate) struct RequestSource {
    rng: ChaCha8Rng,
    lengths: Lengths,
    arrivals: Arrivals,
    sent: u64,
    /// Why a replayed trace stopped early, if it did.
    failure: Option<String>,
}

/// Read `workload` into a request source, its load shape and limits.
pub(crate) fn from_workload(
    workload: &WorkloadSpec,
) -> Result<(RequestSource, Load, Limits), SimFailure> {
    let measured = workload
        .measured_load(|precision| precision.min)
        .map_err(SimFailure::invalid)?;
    measured.validate().map_err(SimFailure::invalid)?;
    let trace_load = matches!(workload.load, LoadSpec::Trace { .. });
    if trace_load != matches!(workload.dataset, DatasetSpec::Trace { .. }) {
        return Err(SimFailure::invalid(
            "a trace dataset is replayed at its own arrival times: use it with `load: {kind: \
             trace}`, and that load only with a trace dataset",
        ));
    }
    let lengths = lengths(&workload.dataset)?;
    let (load, arrivals) = match &workload.load {
        LoadSpec::Closed { concurrency, .. } => (
            Load::Closed {
                concurrency: *concurrency,
            },
            Arrivals::Workers,
        ),
        LoadSpec::Open {
            rate,
            burstiness,
            max_concurrency,
            ..
        } => {
            let gamma = Gamma::new(*burstiness, 1.0 / (rate * burstiness))
                .map_err(|e| SimFailure::invalid(format!("load.burstiness: {e}")))?;
            let cap = *max_concurrency;
            (Load::Open { cap }, Arrivals::Gamma { gamma, last: None })
        }
        LoadSpec::Trace { max_concurrency } => (
            Load::Open {
                cap: *max_concurrency,
            },
            Arrivals::Trace,
        ),
        LoadSpec::Stages {
            stages,
            arrivals,
            max_concurrency,
        } => {
            let clock = StageClock::new(stages.clone().into(), *arrivals, workload.seed);
            let cap = *max_concurrency;
            (Load::Open { cap }, Arrivals::Stages(Box::new(clock)))
        }
    };
    let (requests, duration) = match measured {
        // These end with their arrivals.
        LoadSpec::Trace { .. } | LoadSpec::Stages { .. } => (None, None),
        _ => measured.limits(),
    };
    let source = RequestSource {
        rng: ChaCha8Rng::seed_from_u64(workload.seed),
        lengths,
        arrivals,
        sent: 0,
        failure: None,
    };
    let limits = Limits {
        warmup: workload.warmup_requests(),
        requests,
        duration: duration.map(|d| d.as_secs_f64()),
    };
    Ok((source, load, limits))
}

/// The stages of a staged load (none for other loads).
pub(crate) fn stages(workload: &WorkloadSpec) -> &[Stage] {
    match &workload.load {
        LoadSpec::Stages { stages, .. } => stages,
        _ => &[],
    }
}

fn lengths(dataset: &DatasetSpec) -> Result<Lengths, SimFailure> {
    Ok(match dataset {
        DatasetSpec::Random {
            input_len,
            output_len,
            range_ratio,
            prefix_len,
            ..
        } => {
            if !(0.0..1.0).contains(range_ratio) {
                return Err(SimFailure::invalid(format!(
                    "dataset.range_ratio must be in [0, 1), got {range_ratio}"
                )));
            }
            Lengths::Random {
                input_len: *input_len,
                output_len: *output_len,
                range_ratio: *range_ratio,
                prefix_len: *prefix_len,
            }
        }
        DatasetSpec::SharedPrefix(chat) => {
            chat.check().map_err(SimFailure::invalid)?;
            Lengths::Chat(*chat)
        }
        spec @ DatasetSpec::Trace { .. } => Lengths::Trace {
            replay: Box::new(
                TraceReplay::new(spec, Api::Completions)
                    .map_err(|e| SimFailure::invalid(format!("{e:#}")))?,
            ),
            pending: VecDeque::new(),
        },
        DatasetSpec::Jsonl { .. } | DatasetSpec::Sharegpt { .. } => {
            return Err(SimFailure::invalid(
                "the simulator generates `random`, `shared_prefix` and `trace` datasets (jsonl \
                 and sharegpt prompts need real text); use e.g. `dataset: {kind: random, \
                 input_len: …, output_len: …}`",
            ))
        }
    })
}

impl RequestSource {
    /// Send `chat`'s requests (in its order) at a constant `rate` per second instead.
    pub(crate) fn into_chat(self, chat: SharedPrefix, rate: f64) -> RequestSource {
        RequestSource {
            lengths: Lengths::Chat(chat),
            arrivals: Arrivals::Constant {
                gap: 1.0 / rate,
                last: None,
            },
            ..self
        }
    }

    /// The next request.
    pub(crate) fn next_shape(&mut self) -> RequestShape {
        let index = self.sent;
        self.sent += 1;
        match &mut self.lengths {
            Lengths::Chat(chat) => chat_request(chat, index),
            Lengths::Trace { replay, pending } => {
                let row = pending.pop_front().expect("an arrival was read for it");
                let block = replay.block_tokens();
                let segments = row
                    .blocks
                    .iter()
                    .map(|id| Segment::named(TRACE_BLOCK, *id, block));
                RequestShape {
                    prompt: row.input,
                    output: row.output,
                    content: Content::new(segments.collect()),
                }
            }
            &mut Lengths::Random {
                input_len,
                output_len,
                range_ratio,
                prefix_len,
            } => {
                let input = draw(&mut self.rng, input_len, range_ratio);
                let prefix = (prefix_len > 0).then(|| Segment::named(RANDOM_PREFIX, 0, prefix_len));
                RequestShape {
                    prompt: prefix_len + input,
                    output: draw(&mut self.rng, output_len, range_ratio).max(1),
                    content: Content::new(prefix.into_iter().collect()),
                }
            }
        }
    }

    /// When the next request of an open load arrives (ns from the start) and its stage;
    /// `None` when arrivals are over (closed loops have none).
    pub(crate) fn next_arrival(&mut self) -> Option<(u64, Option<u32>)> {
        match &mut self.arrivals {
            Arrivals::Workers => None,
            // A gap is drawn as the arrival before it is sent, between the draws of successive
            // requests' lengths: one seeded stream, in a fixed order.
            Arrivals::Gamma { gamma, last } => {
                let at = last.map_or(0, |t| t + (gamma.sample(&mut self.rng) * 1e9) as u64);
                *last = Some(at);
                Some((at, None))
            }
            Arrivals::Constant { gap, last } => {
                let at = last.map_or(0, |t| t + (*gap * 1e9) as u64);
                *last = Some(at);
                Some((at, None))
            }
            Arrivals::Stages(clock) => clock
                .next()
                .map(|(at, stage)| (at.as_nanos() as u64, Some(stage))),
            Arrivals::Trace => {
                let Lengths::Trace { replay, pending } = &mut self.lengths else {
                    return None;
                };
                match replay.next_row() {
                    Ok(Some(row)) => {
                        let at = row.at.as_nanos() as u64;
                        pending.push_back(row);
                        Some((at, None))
                    }
                    Ok(None) => None,
                    Err(e) => {
                        self.failure = Some(format!("{e:#}"));
                        None
                    }
                }
            }
        }
    }

    /// Why the arrivals ended early (a trace that could not be read to its end).
    pub(crate) fn failure(&mut self) -> Option<String> {
        self.failure.take()
    }
}

/// Uniform in `[len·(1−r), len·(1+r)]`, as vLLM's random dataset draws lengths.
fn draw(rng: &mut ChaCha8Rng, len: u32, range_ratio: f64) -> u32 {
    if range_ratio == 0.0 {
        return len;
    }
    let lo = (f64::from(len) * (1.0 - range_ratio)) as u32;
    let hi = (f64::from(len) * (1.0 + range_ratio)) as u32;
    rng.random_range(lo..=hi.max(lo))
}
