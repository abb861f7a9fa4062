//! The outcome of one request, with the timestamps its metrics derive from.

use crate::record::Latency;
use serde::Serialize;
use std::fmt;
use std::time::{Duration, Instant};

/// Why a request failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The server answered with a non-200 status.
    Http,
    /// The connection could not be opened.
    Connect,
    /// The request took longer than the per-request timeout.
    Timeout,
    /// The stream sent nothing for the stall timeout.
    Stall,
    /// An event or response was not valid JSON.
    Malformed,
    /// The server closed the connection before the response ended.
    Disconnect,
    /// The server sent an `error` object in the stream.
    StreamError,
}

impl ErrorKind {
    /// The name used in reports (`http`, `connect`, …).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Http => "http",
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Stall => "stall",
            ErrorKind::Malformed => "malformed",
            ErrorKind::Disconnect => "disconnect",
            ErrorKind::StreamError => "stream_error",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed request: its kind and a short explanation (with a body excerpt for HTTP errors).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RequestError {
    /// The kind, counted in the report.
    pub kind: ErrorKind,
    /// HTTP status, for [`ErrorKind::Http`].
    pub status: Option<u16>,
    /// What happened.
    pub message: String,
}

/// Where a request's output token count came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TokenSource {
    /// `usage.completion_tokens` reported by the server.
    Usage,
    /// The generated text counted with the dataset's tokenizer.
    Tokenizer,
    /// The number of token-bearing events.
    Events,
}

impl TokenSource {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            TokenSource::Usage => "usage",
            TokenSource::Tokenizer => "tokenizer",
            TokenSource::Events => "events",
        }
    }
}

/// Everything measured about one request.
#[derive(Clone, Debug)]
pub(crate) struct RequestRecord {
    /// Position in the run (0 = first measured request).
    pub index: u64,
    /// When the request was due to be sent (open loop: its scheduled time).
    pub scheduled: Instant,
    /// When writing the request began.
    pub start: Instant,
    /// First token-bearing event (streaming only).
    pub first_token: Option<Instant>,
    /// Last token-bearing event (streaming only).
    pub last_token: Option<Instant>,
    /// When the response ended (or the request failed).
    pub end: Instant,
    /// Gaps between consecutive token-bearing events.
    pub itl: Vec<Duration>,
    /// Prompt tokens: `usage.prompt_tokens`, else the planned length.
    pub input_tokens: u64,
    /// Output tokens (see `output_source`).
    pub output_tokens: u64,
    /// Where `output_tokens` came from.
    pub output_source: TokenSource,
    /// Token-bearing events received.
    pub token_events: u64,
    /// Whether the response was streamed.
    pub streamed: bool,
    /// `None` when the request succeeded.
    pub error: Option<RequestError>,
    /// The stage of a staged load the request belongs to.
    pub stage: Option<u32>,
    /// For a replayed trace's request: the lengths the trace asked for.
    pub replay: Option<ReplayCheck>,
}

/// A replayed request's lengths as the trace gives them, and what the server reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ReplayCheck {
    /// The trace's input tokens (scaled when the replay scales lengths).
    pub input: u32,
    /// The trace's output tokens (`max_tokens`).
    pub output: u32,
    /// `usage.prompt_tokens`, when the server reported it.
    pub reported_input: Option<u64>,
}

impl RequestRecord {
    /// Succeeded.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// Failed after some tokens arrived.
    pub fn incomplete(&self) -> bool {
        self.error.is_some() && self.token_events > 0
    }

    /// This request's value of `latency`, or `None` where it has none: TTFT and queued TTFT
    /// need a token-bearing event, TPOT at least two output tokens, ITL (the largest gap) two
    /// events. E2E latency runs to the last token-bearing event, or to the end of the response
    /// when there was none (non-streamed, or no output).
    pub fn latency(&self, latency: Latency) -> Option<Duration> {
        match latency {
            Latency::Ttft => self.first_token.map(|t| t - self.start),
            Latency::TtftQueued => self.first_token.map(|t| t - self.scheduled),
            Latency::Tpot => {
                let ttft = self.latency(Latency::Ttft)?;
                let n = u32::try_from(self.output_tokens).ok()?;
                (n >= 2).then(|| (self.e2el() - ttft) / (n - 1))
            }
            Latency::Itl => self.itl.iter().max().copied(),
            Latency::E2el => Some(self.e2el()),
        }
    }

    /// What this request adds to the statistics of `latency`: its value, or every gap for ITL.
    pub fn samples(&self, latency: Latency) -> impl Iterator<Item = Duration> + '_ {
        let (value, gaps) = if latency.per_request() {
            (self.latency(latency), &[][..])
        } else {
            (None, &self.itl[..])
        };
        value.into_iter().chain(gaps.iter().copied())
    }

    fn e2el(&self) -> Duration {
        self.last_token.unwrap_or(self.end) - self.start
    }
}
