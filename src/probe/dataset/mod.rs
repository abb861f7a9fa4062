//! Seeded, reproducible request datasets: the same workload and seed give byte-identical
//! request bodies.
//!
//! * `random`: prompts of exact token lengths. With a local `tokenizer.json` the lengths are
//!   exact for that tokenizer; without one a prompt of N tokens is N space-separated words
//!   from a fixed vocabulary (the simulator counts whitespace words as tokens).
//! * `jsonl`: one JSON object a line with `question`, `prompt` or chat `messages`.
//! * `sharegpt`: ShareGPT conversations; the first turn is the prompt, the reply's length
//!   (in words) is `max_tokens` unless overridden.
//! * `shared_prefix`: inference-perf's shared-prefix chat (its module `shared_prefix`).
//! * `trace`: a production trace replayed at its arrival times (its module `trace`).

mod body;
mod files;
mod random;
mod shared_prefix;
mod synth;
mod trace;

use super::workload::{DatasetSpec, WorkloadSpec};
use anyhow::{bail, Context, Result};
use body::BodyTemplate;
use bytes::Bytes;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use random::RandomPrompts;
use shared_prefix::SharedPrefixChat;
use std::sync::Arc;
use std::time::Duration;
pub(crate) use synth::mix;
use tokenizers::Tokenizer;
pub use trace::{ReplayRow, TraceReplay};

/// One request of a workload, ready to send.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedRequest {
    /// The JSON request body without `model` (see [`PlannedRequest::body_with_model`]).
    pub body: Bytes,
    /// Prompt length in tokens (tokenizer tokens, or whitespace words without a tokenizer).
    pub input_tokens: u32,
    /// `max_tokens` sent with the request.
    pub max_tokens: u32,
    /// When a replayed trace sends it, after the start of the replay.
    pub at: Option<Duration>,
}

impl PlannedRequest {
    /// The body with `"model"` as its first field, as it goes on the wire.
    pub fn body_with_model(&self, model: &str) -> Bytes {
        let name = serde_json::Value::from(model).to_string();
        let rest = &self.body[1..];
        let mut out = Vec::with_capacity(self.body.len() + name.len() + 10);
        out.extend_from_slice(b"{\"model\":");
        out.extend_from_slice(name.as_bytes());
        if rest != b"}" {
            out.push(b',');
        }
        out.extend_from_slice(rest);
        Bytes::from(out)
    }
}

/// The first `count` requests of `workload` (deterministic in `workload.seed`).
pub fn plan(workload: &WorkloadSpec, count: usize) -> Result<Vec<PlannedRequest>> {
    let mut stream = RequestStream::new(workload)?;
    (0..count).map(|_| stream.next_request()).collect()
}

/// A prompt before it is put into a request body.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Prompt {
    /// Plain text (`prompt`, or one user message for chat).
    Text(String),
    /// Chat `messages` as given in the dataset.
    Messages(serde_json::Value),
    /// Token ids (`prompt` of the completions API).
    Tokens(Vec<u32>),
}

/// A prompt with its lengths.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub prompt: Prompt,
    pub input_tokens: u32,
    pub max_tokens: u32,
}

enum Source {
    Random(RandomPrompts),
    Entries { entries: Vec<Entry>, next: usize },
    Trace(Box<TraceReplay>),
    SharedPrefix(SharedPrefixChat),
}

/// An endless, seeded stream of requests for one workload.
pub(crate) struct RequestStream {
    source: Source,
    rng: ChaCha8Rng,
    template: BodyTemplate,
}

impl RequestStream {
    /// Loads the dataset (files, tokenizer) and checks the request options.
    pub fn new(workload: &WorkloadSpec) -> Result<Self> {
        let template = BodyTemplate::new(workload)?;
        let mut rng = ChaCha8Rng::seed_from_u64(workload.seed);
        let source = match &workload.dataset {
            DatasetSpec::Random {
                input_len,
                output_len,
                range_ratio,
                prefix_len,
                tokenizer,
            } => Source::Random(RandomPrompts::new(
                *input_len,
                *output_len,
                *range_ratio,
                *prefix_len,
                tokenizer.as_deref(),
                &mut rng,
            )?),
            DatasetSpec::Jsonl {
                path,
                field,
                output_len,
            } => {
                if *output_len == 0 {
                    bail!("jsonl dataset: output_len (max_tokens) must be at least 1");
                }
                let entries = files::load_jsonl(path, field.as_deref(), workload.api, *output_len)?;
                shuffled(entries, &mut rng)
            }
            DatasetSpec::Sharegpt { path, output_len } => {
                if *output_len == Some(0) {
                    bail!("sharegpt dataset: output_len (max_tokens) must be at least 1");
                }
                shuffled(files::load_sharegpt(path, *output_len)?, &mut rng)
            }
            DatasetSpec::SharedPrefix(sizes) => {
                Source::SharedPrefix(SharedPrefixChat::new(sizes, workload.api)?)
            }
            spec @ DatasetSpec::Trace { .. } => {
                Source::Trace(Box::new(TraceReplay::new(spec, workload.api)?))
            }
        };
        Ok(RequestStream {
            source,
            rng,
            template,
        })
    }

    /// The next request; an error when a replayed trace has run out.
    pub(crate) fn next_request(&mut self) -> Result<PlannedRequest> {
        self.next()?
            .context("the trace's window has fewer requests than the run needs")
    }

    /// The next request, or `None` when a replayed trace's window is over (other datasets
    /// never end).
    pub(crate) fn next(&mut self) -> Result<Option<PlannedRequest>> {
        let (entry, at) = match &mut self.source {
            Source::Random(random) => (random.next_entry(&mut self.rng)?, None),
            Source::Entries { entries, next } => {
                let entry = entries[*next % entries.len()].clone();
                *next += 1;
                (entry, None)
            }
            Source::SharedPrefix(chat) => (chat.next_entry()?, None),
            Source::Trace(trace) => match trace.next_entry()? {
                Some((entry, at)) => (entry, Some(at)),
                None => return Ok(None),
            },
        };
        Ok(Some(PlannedRequest {
            body: self.template.build(&entry)?,
            input_tokens: entry.input_tokens,
            max_tokens: entry.max_tokens,
            at,
        }))
    }

    /// What a replayed trace covers (window, request count, length scale), for the report.
    pub fn replay_summary(&self) -> Option<serde_json::Value> {
        match &self.source {
            Source::Trace(trace) => Some(trace.summary().clone()),
            _ => None,
        }
    }

    /// The tokenizer of a `random` dataset, if it has one (used to count output tokens when
    /// the server reports no usage).
    pub fn tokenizer(&self) -> Option<Arc<Tokenizer>> {
        match &self.source {
            Source::Random(random) => random.tokenizer(),
            Source::Entries { .. } | Source::Trace(_) | Source::SharedPrefix(_) => None,
        }
    }
}

fn shuffled(mut entries: Vec<Entry>, rng: &mut ChaCha8Rng) -> Source {
    entries.shuffle(rng);
    Source::Entries { entries, next: 0 }
}

/// Whitespace-separated words in `text`: the token count used without a tokenizer.
pub(crate) fn word_count(text: &str) -> u32 {
    u32::try_from(text.split_whitespace().count()).unwrap_or(u32::MAX)
}
