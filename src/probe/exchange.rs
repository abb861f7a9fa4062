//! Sends one request and times its response. Every event is timestamped with the time the
//! kernel received its bytes, before any parsing; events are classified after that.

use super::chunk::{self, Event, Usage};
use super::conn::{Conn, ConnError};
use super::http::Endpoint;
use super::http1::{BodyDecoder, Head};
use super::record::{ErrorKind, ReplayCheck, RequestError, RequestRecord, TokenSource};
use super::sse::SseSplitter;
use super::steady::TokenTally;
use super::watcher::{ArrivalWatcher, WatchedSocket};
use bytes::Bytes;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokenizers::Tokenizer;
use tokio::time::Sleep;

/// Bytes of an error response kept for the report.
const ERROR_BODY_LIMIT: usize = 2048;

/// How every request of a run is sent.
pub(crate) struct Exchange {
    /// Where requests go.
    pub endpoint: Endpoint,
    /// Stream responses (SSE).
    pub stream: bool,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Give up when a started stream is silent this long.
    pub stall_timeout: Option<Duration>,
    /// Counts output tokens when the server reports no usage.
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// Notes first tokens' arrival when this thread is busy.
    pub watcher: Option<ArrivalWatcher>,
    /// Spreads each completed request's output tokens over its life, for the steady-state
    /// figure.
    pub tally: Arc<TokenTally>,
}

/// Request to send: index, body and planned prompt length; a replayed trace's request also
/// carries its `max_tokens`, to check the server's usage against the trace.
pub(crate) struct Outgoing {
    pub index: u64,
    pub body: Bytes,
    pub input_tokens: u32,
    pub scheduled: Instant,
    pub replayed_output: Option<u32>,
    /// The stage of a staged load it belongs to.
    pub stage: Option<u32>,
}

impl Exchange {
    /// Sends `request` over `slot` (reusing its connection when it can) and measures it.
    pub(crate) async fn execute(
        &self,
        slot: &mut Option<Conn>,
        request: Outgoing,
    ) -> RequestRecord {
        let now = Instant::now();
        let flight = self.tally.open(now);
        let deadline = now + self.timeout;
        let mut timer = Box::pin(tokio::time::sleep_until(deadline.into()));
        let mut record = RequestRecord {
            index: request.index,
            scheduled: request.scheduled,
            start: now,
            first_token: None,
            last_token: None,
            end: now,
            itl: Vec::new(),
            input_tokens: u64::from(request.input_tokens),
            output_tokens: 0,
            output_source: TokenSource::Events,
            token_events: 0,
            streamed: self.stream,
            error: None,
            stage: request.stage,
            replay: request.replayed_output.map(|output| ReplayCheck {
                input: request.input_tokens,
                output,
                reported_input: None,
            }),
        };
        let outcome = self
            .exchange(slot, request.body, deadline, timer.as_mut(), &mut record)
            .await;
        record.end = Instant::now();
        match outcome {
            Ok(()) => flight.land(record.output_tokens, record.end),
            Err(error) => {
                record.error = Some(error);
                *slot = None;
            }
        }
        record
    }

    async fn exchange(
        &self,
        slot: &mut Option<Conn>,
        body: Bytes,
        deadline: Instant,
        mut timer: Pin<&mut Sleep>,
        record: &mut RequestRecord,
    ) -> Result<(), RequestError> {
        let request = self.endpoint.request(&body);
        let mut head = self
            .start(slot, &request, deadline, timer.as_mut(), record)
            .await?;
        let conn = slot.as_mut().expect("connected by start");
        if head.status != 200 {
            let (bytes, _) =
                read_body(conn, &mut head.body, timer, ERROR_BODY_LIMIT, self.timeout).await;
            return Err(RequestError {
                kind: ErrorKind::Http,
                status: Some(head.status),
                message: format!("HTTP {}: {}", head.status, chunk::excerpt(&bytes)),
            });
        }
        let mut reply = Reply::new(self.tokenizer.is_some());
        let read = if self.stream {
            let sent = record.start;
            self.read_stream(conn, &mut head.body, sent, deadline, timer, &mut reply)
                .await
        } else {
            match read_body(conn, &mut head.body, timer, usize::MAX, self.timeout).await {
                (_, Some(error)) => Err(error),
                (bytes, None) => reply.read_whole(&bytes),
            }
        };
        let failure = read.err().or_else(|| reply.failure.take());
        reply.apply(record, self.tokenizer.as_deref());
        failure.map_or(Ok(()), Err)
    }

    /// Sends `request` over the slot's connection when it is still usable, else over a new
    /// one, and reads the response head; `record.start` is when the request began to be
    /// written. A kept-alive connection the server closed meanwhile is replaced once.
    async fn start(
        &self,
        slot: &mut Option<Conn>,
        request: &[u8],
        deadline: Instant,
        mut timer: Pin<&mut Sleep>,
        record: &mut RequestRecord,
    ) -> Result<Head, RequestError> {
        let mut reused = slot.as_ref().is_some_and(Conn::reusable);
        loop {
            if !reused {
                *slot = Some(self.connect(deadline).await?);
            }
            let conn = slot.as_mut().expect("connected above");
            let head = match conn.send(request, timer.as_mut()).await {
                Ok(written) => {
                    record.start = written;
                    conn.head(timer.as_mut()).await
                }
                Err(e) => Err(e),
            };
            return match head {
                Ok(head) => Ok(head),
                Err(ConnError::ClosedBeforeResponse(_)) if reused => {
                    reused = false;
                    continue;
                }
                Err(ConnError::TimerFired) => Err(timeout(self.timeout)),
                Err(ConnError::ClosedBeforeResponse(e) | ConnError::Closed(e)) => {
                    Err(fail(ErrorKind::Disconnect, format!("no response: {e}")))
                }
                Err(ConnError::Invalid(e)) => Err(fail(ErrorKind::Malformed, e)),
            };
        }
    }

    /// A new connection to the endpoint.
    async fn connect(&self, deadline: Instant) -> Result<Conn, RequestError> {
        tokio::time::timeout_at(deadline.into(), Conn::open(&self.endpoint))
            .await
            .map_err(|_| timeout(self.timeout))?
            .map_err(|e| {
                fail(
                    ErrorKind::Connect,
                    format!("cannot connect to {}: {e}", self.endpoint.address),
                )
            })
    }

    async fn read_stream(
        &self,
        conn: &mut Conn,
        body: &mut BodyDecoder,
        sent: Instant,
        deadline: Instant,
        mut timer: Pin<&mut Sleep>,
        reply: &mut Reply,
    ) -> Result<(), RequestError> {
        let mut splitter = SseSplitter::new();
        let mut last_bytes: Option<Instant> = None;
        let mut watch: Option<WatchedSocket> = None;
        loop {
            self.watch_for_first_token(conn, reply, &mut watch);
            match conn.body_piece(body, timer.as_mut()).await {
                Ok(Some((data, at))) => {
                    // A response's bytes cannot have arrived before its request was sent.
                    let at = at.max(sent);
                    if let (None, Some(stall)) = (last_bytes, self.stall_timeout) {
                        timer.as_mut().reset(deadline.min(at + stall).into());
                    }
                    last_bytes = Some(at);
                    splitter.feed(data, at, &mut |data, at| reply.on_event(data, at));
                    if reply.failure.is_some() {
                        return Ok(());
                    }
                }
                Ok(None) => break,
                Err(ConnError::ClosedBeforeResponse(e) | ConnError::Closed(e)) => {
                    return Err(fail(ErrorKind::Disconnect, format!("stream cut: {e}")));
                }
                Err(ConnError::Invalid(e)) => return Err(fail(ErrorKind::Malformed, e)),
                Err(ConnError::TimerFired) => {
                    let now = Instant::now();
                    let stall_end = last_bytes.zip(self.stall_timeout).map(|(t, s)| t + s);
                    match stall_end {
                        _ if now >= deadline => return Err(timeout(self.timeout)),
                        Some(end) if end <= now => {
                            let silent = now - last_bytes.unwrap_or(now);
                            return Err(fail(
                                ErrorKind::Stall,
                                format!("no data for {silent:.1?}"),
                            ));
                        }
                        Some(end) => timer.as_mut().reset(deadline.min(end).into()),
                        None => timer.as_mut().reset(deadline.into()),
                    }
                }
            }
        }
        splitter.finish(&mut |data, at| reply.on_event(data, at));
        if reply.failure.is_none() && !reply.done && !reply.finished {
            return Err(if reply.first.is_none() {
                fail(
                    ErrorKind::Malformed,
                    "the response ended without a token-bearing event and without \
                     `data: [DONE]` (not an event stream, or a stream cut short)"
                        .to_string(),
                )
            } else {
                fail(
                    ErrorKind::Disconnect,
                    "the stream ended before a `finish_reason` and without `data: [DONE]` (cut short)"
                        .to_string(),
                )
            });
        }
        Ok(())
    }

    /// Until a response's first token, keeps its socket watched by the other thread (again
    /// after each look, should that not have been the first token).
    fn watch_for_first_token(&self, conn: &Conn, reply: &Reply, watch: &mut Option<WatchedSocket>) {
        let Some(watcher) = &self.watcher else {
            return;
        };
        if reply.first.is_some() {
            *watch = None;
        } else if watch.as_ref().is_none_or(WatchedSocket::done) {
            let (socket, stamps) = conn.watched();
            *watch = watcher.watch(socket, stamps);
        }
    }
}

/// What a response said so far.
struct Reply {
    first: Option<Instant>,
    last: Option<Instant>,
    itl: Vec<Duration>,
    events: u64,
    usage: Option<Usage>,
    text: Option<String>,
    failure: Option<RequestError>,
    /// `data: [DONE]` arrived.
    done: bool,
    /// A chunk with a `finish_reason` arrived: a stream that ends after it is complete without
    /// `data: [DONE]` (XInference's completions stream sends none).
    finished: bool,
}

impl Reply {
    fn new(capture_text: bool) -> Self {
        Reply {
            first: None,
            last: None,
            itl: Vec::with_capacity(64),
            events: 0,
            usage: None,
            text: capture_text.then(String::new),
            failure: None,
            done: false,
            finished: false,
        }
    }

    fn on_event(&mut self, data: &[u8], at: Instant) {
        if self.failure.is_some() {
            return;
        }
        let info = match chunk::classify(data) {
            Ok(Event::Chunk(info)) => info,
            Ok(Event::Done) => {
                self.done = true;
                return;
            }
            Err(message) => {
                self.failure = Some(fail(ErrorKind::Malformed, message));
                return;
            }
        };
        if info.token {
            match self.last {
                Some(last) => self.itl.push(at - last),
                None => self.first = Some(at),
            }
            self.last = Some(at);
            self.events += 1;
            if let Some(text) = &mut self.text {
                chunk::text_of(data, text);
            }
        }
        if info.usage.is_some() {
            self.usage = info.usage;
        }
        self.finished |= info.finished;
        if let Some(message) = info.error {
            self.failure = Some(fail(ErrorKind::StreamError, message));
        }
    }

    fn read_whole(&mut self, body: &[u8]) -> Result<(), RequestError> {
        let info = chunk::parse(body).map_err(|m| fail(ErrorKind::Malformed, m))?;
        if let Some(message) = info.error {
            return Err(fail(ErrorKind::StreamError, message));
        }
        self.usage = info.usage;
        if info.token {
            self.events = 1;
            if let Some(text) = &mut self.text {
                chunk::text_of(body, text);
            }
        }
        Ok(())
    }

    /// Moves timings and token counts into `record` (streaming timestamps only if streamed).
    fn apply(&mut self, record: &mut RequestRecord, tokenizer: Option<&Tokenizer>) {
        if record.streamed {
            record.first_token = self.first;
            record.last_token = self.last;
            record.itl = std::mem::take(&mut self.itl);
        }
        record.token_events = self.events;
        let usage = self.usage.unwrap_or_default();
        if let Some(prompt) = usage.prompt_tokens {
            record.input_tokens = prompt;
        }
        if let Some(replay) = &mut record.replay {
            replay.reported_input = usage.prompt_tokens;
        }
        let counted = match (&self.text, tokenizer) {
            (Some(text), Some(tokenizer)) => tokenizer
                .encode(text.as_str(), false)
                .ok()
                .map(|e| e.len() as u64),
            _ => None,
        };
        (record.output_tokens, record.output_source) = match (usage.completion_tokens, counted) {
            (Some(n), _) => (n, TokenSource::Usage),
            (None, Some(n)) => (n, TokenSource::Tokenizer),
            (None, None) => (self.events, TokenSource::Events),
        };
    }
}

/// Reads up to `limit` bytes of `body`; the error tells why it ended early.
async fn read_body(
    conn: &mut Conn,
    body: &mut BodyDecoder,
    mut timer: Pin<&mut Sleep>,
    limit: usize,
    time_limit: Duration,
) -> (Vec<u8>, Option<RequestError>) {
    let mut bytes = Vec::new();
    while bytes.len() < limit {
        match conn.body_piece(body, timer.as_mut()).await {
            Ok(Some((data, _))) => bytes.extend_from_slice(data),
            Ok(None) => return (bytes, None),
            Err(ConnError::TimerFired) => return (bytes, Some(timeout(time_limit))),
            Err(ConnError::Invalid(e)) => return (bytes, Some(fail(ErrorKind::Malformed, e))),
            Err(ConnError::ClosedBeforeResponse(e) | ConnError::Closed(e)) => {
                return (
                    bytes,
                    Some(fail(ErrorKind::Disconnect, format!("response cut: {e}"))),
                );
            }
        }
    }
    (bytes, None)
}

fn fail(kind: ErrorKind, message: String) -> RequestError {
    RequestError {
        kind,
        status: None,
        message,
    }
}

fn timeout(limit: Duration) -> RequestError {
    fail(
        ErrorKind::Timeout,
        format!("no complete response within {limit:?}"),
    )
}
