//! Trace replay: a production trace's requests, streamed from its file, each sent at its
//! arrival time (divided by the speed) with the trace's exact input and output token counts.
//!
//! A first pass over the window checks every line (so a malformed line stops the run before
//! anything is sent), counts the requests and finds the longest; the second pass streams
//! them. Memory does not grow with the trace.
//!
//! Prompt content is synthesised (see [`super::synth`]): each 512-token block named by a
//! Mooncake hash id has the same content wherever it appears, so requests sharing ids share a
//! prefix; the rest of a prompt is unique to its request.

mod read;
mod reuse;

use super::synth::{self, Kind};
use super::{Entry, Prompt};
use crate::probe::workload::{Api, DatasetSpec, TraceFormat};
use anyhow::{bail, Result};
use read::TraceRows;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// Tokens of the block a Mooncake hash id names.
pub(crate) const BLOCK_TOKENS: u32 = 512;

/// A trace's window, replayed request by request.
pub struct TraceReplay {
    rows: TraceRows,
    window: Window,
    speed: f64,
    factor: f64,
    block_len: u32,
    api: Api,
    sent: u32,
    summary: Value,
}

/// Which rows are replayed: from `start` (seconds into the trace) to `end`, at most `limit`.
#[derive(Clone, Copy)]
struct Window {
    start: f64,
    end: Option<f64>,
    limit: Option<u32>,
}

impl Window {
    /// Whether a row at `at`, with `taken` rows already in the window, ends the window.
    fn ends_at(&self, at: f64, taken: u32) -> bool {
        self.end.is_some_and(|end| at >= end) || self.limit.is_some_and(|n| taken >= n)
    }
}

/// One request of the window, lengths scaled.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayRow {
    /// When it is sent, after the start of the replay (trace time divided by the speed).
    pub at: Duration,
    /// Prompt tokens.
    pub input: u32,
    /// Tokens to generate.
    pub output: u32,
    /// Ids of the prompt's leading blocks of [`TraceReplay::block_tokens`] tokens each (equal
    /// ids, identical blocks); the rest of the prompt is the request's own.
    pub blocks: Vec<u64>,
    /// Line of the trace file.
    pub line: usize,
}

impl TraceReplay {
    /// Checks the replay controls and every line of the window; `spec` must be a trace.
    pub fn new(spec: &DatasetSpec, api: Api) -> Result<Self> {
        let DatasetSpec::Trace {
            path,
            format,
            speed,
            start,
            duration,
            requests,
            max_context,
            scale,
        } = spec
        else {
            bail!("not a trace dataset");
        };
        if !(speed.is_finite() && *speed > 0.0) {
            bail!(
                "trace dataset: speed must be a positive factor (2 = twice as fast), got {speed}"
            );
        }
        if *requests == Some(0) || *duration == Some(Duration::ZERO) {
            bail!("trace dataset: requests and duration must be more than zero");
        }
        if *scale && max_context.is_none() {
            bail!("trace dataset: `scale` needs `max_context` (the model's context in tokens)");
        }
        let window = Window {
            start: start.as_secs_f64(),
            end: duration.map(|d| start.as_secs_f64() + d.as_secs_f64()),
            limit: *requests,
        };
        let survey = survey(path, *format, window, *max_context, *scale)?;
        let factor = match max_context {
            Some(max) if *scale => (f64::from(*max) / f64::from(survey.longest)).min(1.0),
            _ => 1.0,
        };
        let block_len = ((f64::from(BLOCK_TOKENS) * factor).floor() as u32).max(1);
        let reuse = reuse::implied_reuse(path, *format, window, factor, block_len)?;
        let summary = json!({
            "implied_prefix_reuse": reuse,
            "path": path.display().to_string(),
            "format": format,
            "speed": speed,
            "start_s": window.start,
            "duration_s": duration.map(|d| d.as_secs_f64()),
            "requests": survey.requests,
            "span_s": survey.span,
            "max_context": max_context,
            "length_scale": factor,
            "block_tokens": block_len,
        });
        Ok(TraceReplay {
            rows: TraceRows::open(path, *format)?,
            window,
            speed: *speed,
            factor,
            block_len,
            api,
            sent: 0,
            summary,
        })
    }

    /// What is replayed, for the report: the window, its request count and the length scale.
    pub fn summary(&self) -> &Value {
        &self.summary
    }

    /// Tokens of the block a hash id names, after scaling.
    pub fn block_tokens(&self) -> u32 {
        self.block_len
    }

    /// The next request of the window; `None` when the window is over.
    pub fn next_row(&mut self) -> Result<Option<ReplayRow>> {
        loop {
            let Some(row) = self.rows.next().transpose()? else {
                return Ok(None);
            };
            if row.at < self.window.start {
                continue;
            }
            if self.window.ends_at(row.at, self.sent) {
                return Ok(None);
            }
            self.sent += 1;
            return Ok(Some(ReplayRow {
                at: Duration::from_secs_f64((row.at - self.window.start) / self.speed),
                input: self.scaled(row.input),
                output: self.scaled(row.output),
                blocks: row.blocks,
                line: row.line,
            }));
        }
    }

    /// The next request with its send time after the start of the replay; `None` when the
    /// window is over.
    pub(crate) fn next_entry(&mut self) -> Result<Option<(Entry, Duration)>> {
        let Some(row) = self.next_row()? else {
            return Ok(None);
        };
        let entry = Entry {
            prompt: self.prompt(&row.blocks, row.line, row.input),
            input_tokens: row.input,
            max_tokens: row.output,
        };
        Ok(Some((entry, row.at)))
    }

    fn scaled(&self, tokens: u32) -> u32 {
        ((f64::from(tokens) * self.factor).floor() as u32).max(1)
    }

    /// `len` tokens: a block of `block_len` per id of `blocks`, then tokens unique to the row.
    fn prompt(&self, blocks: &[u64], line: usize, len: u32) -> Prompt {
        let shared = blocks.iter().map(|id| synth::key(Kind::Block, *id));
        let own = (0..).map(|n| synth::key(Kind::Row, (line as u64) << 32 | n));
        let tokens = shared
            .chain(own)
            .flat_map(|key| synth::run(key, self.block_len))
            .take(len as usize);
        synth::prompt(tokens, self.api)
    }
}

/// What a first pass found in the window.
struct Survey {
    requests: u64,
    span: f64,
    longest: u32,
}

fn survey(
    path: &Path,
    format: TraceFormat,
    window: Window,
    max_context: Option<u32>,
    scale: bool,
) -> Result<Survey> {
    let mut found = Survey {
        requests: 0,
        span: 0.0,
        longest: 0,
    };
    let mut last = 0.0;
    let mut taken = 0;
    for row in TraceRows::open(path, format)? {
        let row = row?;
        last = row.at;
        if row.at < window.start {
            continue;
        }
        if window.ends_at(row.at, taken) {
            break;
        }
        taken += 1;
        let total = row.input.saturating_add(row.output);
        if let Some(max) = max_context.filter(|max| !scale && total > *max) {
            bail!(
                "{}:{}: this request's {} input + {} output tokens exceed max_context {max}; \
                 set `scale: true` (--trace-scale) to scale the trace's lengths to fit, or \
                 give the model's real context",
                path.display(),
                row.line,
                row.input,
                row.output
            );
        }
        found.requests += 1;
        found.span = row.at - window.start;
        found.longest = found.longest.max(total);
    }
    if found.requests == 0 {
        bail!(
            "{}: no request in the window (from {:.0} s{}); the trace's last request is at \
             {last:.0} s",
            path.display(),
            window.start,
            window
                .end
                .map_or(String::new(), |end| format!(" to {end:.0} s"))
        );
    }
    Ok(found)
}
