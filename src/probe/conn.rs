//! One keep-alive HTTP/1.1 connection of the probe. The task that measures a request also
//! reads its response straight off the socket: one stamped read per arrival, no hand-off
//! between tasks, so a busy client spends little per token event.

use super::http::Endpoint;
use super::http1::{self, BodyDecoder, Head, Step};
use super::stamped::{StampedStream, Stamps};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// Bytes read at once; a streamed event is a few hundred.
const READ_SIZE: usize = 16 * 1024;

/// Why a connection gave up.
#[derive(Debug)]
pub(crate) enum ConnError {
    /// The timer fired first.
    TimerFired,
    /// The connection ended, or broke, before any byte of the response.
    ClosedBeforeResponse(String),
    /// The connection ended, or broke, during the response.
    Closed(String),
    /// The response is not valid HTTP/1.1.
    Invalid(String),
}

/// An open connection.
pub(crate) struct Conn {
    stream: StampedStream,
    /// Received bytes; those in `start..end` are not used yet.
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    /// When the bytes of each read arrived.
    stamps: Arc<Stamps>,
    /// Bytes received since the latest request was sent.
    received: usize,
    /// Buffered bytes before this index were seen waiting by the watcher at the given time,
    /// before the read that took them (which may carry a later stamp).
    early: Option<(usize, Instant)>,
    /// The current response allows another request after it.
    keep_alive: bool,
    /// The latest response was read to its end and the connection can carry another.
    idle: bool,
}

impl Conn {
    /// Connects to `endpoint`.
    pub async fn open(endpoint: &Endpoint) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(&endpoint.address).await?;
        stream.set_nodelay(true)?;
        let stream = StampedStream::new(stream)?;
        Ok(Conn {
            stamps: stream.stamps(),
            stream,
            buffer: vec![0; READ_SIZE],
            start: 0,
            end: 0,
            received: 0,
            early: None,
            keep_alive: false,
            idle: true,
        })
    }

    /// The socket and its stamps, for an [`super::watcher::ArrivalWatcher`].
    pub(crate) fn watched(&self) -> (&std::net::TcpStream, &Arc<Stamps>) {
        (self.stream.socket(), &self.stamps)
    }

    /// Whether the connection can carry another request.
    pub(crate) fn reusable(&self) -> bool {
        self.idle
    }

    /// Writes `request` whole; returns when its first byte was handed to the socket.
    pub async fn send(
        &mut self,
        request: &[u8],
        mut timer: Pin<&mut Sleep>,
    ) -> Result<Instant, ConnError> {
        self.idle = false;
        self.received = 0;
        self.start = 0;
        self.end = 0;
        self.early = None;
        let started = Instant::now();
        let mut written = 0;
        while written < request.len() {
            let sent = poll_fn(|cx| {
                let sent = self.stream.poll_send(cx, &request[written..]);
                timed(sent, timer.as_mut(), cx)
            })
            .await?;
            written += sent.map_err(|e| ConnError::ClosedBeforeResponse(e.to_string()))?;
        }
        Ok(started)
    }

    /// Reads the response head (skipping informational ones).
    pub async fn head(&mut self, mut timer: Pin<&mut Sleep>) -> Result<Head, ConnError> {
        loop {
            match http1::parse_head(&self.buffer[self.start..self.end]) {
                Ok(Some((head, length))) => {
                    self.start += length;
                    if (100..200).contains(&head.status) {
                        continue;
                    }
                    self.keep_alive = head.keep_alive;
                    return Ok(head);
                }
                Ok(None) => self.fill(timer.as_mut()).await?,
                Err(message) => return Err(ConnError::Invalid(message)),
            }
        }
    }

    /// The next piece of the body and when it arrived; `None` at its end.
    pub(crate) async fn body_piece(
        &mut self,
        body: &mut BodyDecoder,
        mut timer: Pin<&mut Sleep>,
    ) -> Result<Option<(&[u8], Instant)>, ConnError> {
        loop {
            match body
                .step(&self.buffer[self.start..self.end])
                .map_err(ConnError::Invalid)?
            {
                Step::Data { consumed, data } => {
                    let piece = self.start + data.start..self.start + data.end;
                    self.start += consumed;
                    let mut at = self.stamps.last_arrival();
                    if let Some((end, early)) = self.early {
                        if piece.end <= end {
                            at = at.min(early);
                        }
                    }
                    return Ok(Some((&self.buffer[piece], at)));
                }
                Step::More { consumed } => {
                    self.start += consumed;
                    match self.fill(timer.as_mut()).await {
                        Err(ConnError::Closed(_)) if body.ends_at_close() => return Ok(None),
                        other => other?,
                    }
                }
                Step::End { consumed } => {
                    self.start += consumed;
                    // Bytes after the response would belong to no request.
                    self.idle = self.keep_alive && self.start == self.end;
                    return Ok(None);
                }
            }
        }
    }

    /// Waits for more bytes and appends them to the unused ones.
    async fn fill(&mut self, mut timer: Pin<&mut Sleep>) -> Result<(), ConnError> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
            self.early = None;
        } else if self.end == self.buffer.len() {
            self.buffer.copy_within(self.start..self.end, 0);
            let shift = self.start;
            self.early = self
                .early
                .and_then(|(end, at)| Some((end.checked_sub(shift)?, at)));
            (self.start, self.end) = (0, self.end - self.start);
            if self.end > self.buffer.len() / 2 {
                if self.buffer.len() > http1::MAX_HEAD {
                    return Err(ConnError::Invalid("response framing too long".into()));
                }
                self.buffer.resize(self.buffer.len() * 2, 0);
            }
        }
        let (stream, space) = (&self.stream, &mut self.buffer[self.end..]);
        let read = poll_fn(|cx| timed(stream.poll_receive(cx, space), timer.as_mut(), cx)).await?;
        let closed = |why: String| match self.received {
            0 => ConnError::ClosedBeforeResponse(why),
            _ => ConnError::Closed(why),
        };
        match read {
            Ok(0) => Err(closed("the server closed the connection".into())),
            Ok(read) => {
                if let Some((seen, at)) = self.stamps.seen_early(read) {
                    self.early = Some((self.end + seen, at));
                }
                self.end += read;
                self.received += read;
                Ok(())
            }
            Err(e) => Err(closed(e.to_string())),
        }
    }
}

/// `io` unless `timer` fires first.
fn timed<T>(
    io: Poll<T>,
    timer: Pin<&mut Sleep>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, ConnError>> {
    match io {
        Poll::Ready(value) => Poll::Ready(Ok(value)),
        Poll::Pending if timer.poll(cx).is_ready() => Poll::Ready(Err(ConnError::TimerFired)),
        Poll::Pending => Poll::Pending,
    }
}
