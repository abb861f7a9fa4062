//! One scheduler for every stream of the server: a heap of (deadline, connection) and a single
//! sleep until the earliest, writing all chunks that are due in one pass, so the cost per token
//! is one non-blocking write and no timer of its own.

use super::served::{Served, ServedLog};
use super::Pacing;
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::ErrorKind;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::Notify;
use tokio::time::{Duration, Instant};

/// How soon a write the socket could not take yet is tried again.
const RETRY: Duration = Duration::from_millis(1);

const HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
const ROLE: &str = "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n";
const TOKEN: &str = "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"},\"finish_reason\":null}]}\n\n";
const FINISH: &str = "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";

/// One chunk of a chunked transfer encoding.
fn chunk(data: &str) -> String {
    format!("{:x}\r\n{data}\r\n", data.len())
}

/// A response being streamed.
struct Response {
    /// When its request arrived.
    start: Instant,
    /// When its first token was written.
    first: Option<Instant>,
    /// Tokens written so far.
    sent: u32,
    /// Finish, usage and `[DONE]` chunks and the end of the body.
    last: Vec<u8>,
}

struct Connection {
    writer: OwnedWriteHalf,
    /// Bytes the socket has not taken yet.
    pending: Vec<u8>,
    response: Option<Response>,
    /// The heap entry that is current for this connection (older ones are skipped).
    due: Option<Instant>,
}

/// The streams of one server thread.
pub struct Scheduler {
    pacing: Pacing,
    head: Vec<u8>,
    token: Vec<u8>,
    connections: RefCell<HashMap<u64, Connection>>,
    heap: RefCell<BinaryHeap<Reverse<(Instant, u64)>>>,
    next_id: Cell<u64>,
    log: ServedLog,
    /// When the loop will wake next (`None`: only when notified).
    wake_at: Cell<Option<Instant>>,
    notify: Notify,
}

impl Scheduler {
    /// A scheduler with no connections.
    pub fn new(pacing: Pacing, log: ServedLog) -> Scheduler {
        Scheduler {
            pacing,
            head: format!("{HEAD}{}", chunk(ROLE)).into_bytes(),
            token: chunk(TOKEN).into_bytes(),
            connections: RefCell::default(),
            heap: RefCell::default(),
            next_id: Cell::new(0),
            log,
            wake_at: Cell::new(None),
            notify: Notify::new(),
        }
    }

    /// Registers a connection's write side; returns its id.
    pub fn add(&self, writer: OwnedWriteHalf) -> u64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let connection = Connection {
            writer,
            pending: Vec::new(),
            response: None,
            due: None,
        };
        self.connections.borrow_mut().insert(id, connection);
        id
    }

    /// Forgets a connection (its heap entries become stale).
    pub fn remove(&self, id: u64) {
        self.connections.borrow_mut().remove(&id);
    }

    /// A request on connection `id` arrived at `start` and was read: the head and role chunk
    /// go out now, the first token a TTFT after `start`, then one every inter-token latency.
    pub fn begin(&self, id: u64, prompt_tokens: u64, start: Instant) {
        let tokens = self.pacing.tokens;
        let usage = format!(
            "data: {{\"id\":\"fake\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":{tokens},\"total_tokens\":{}}}}}\n\n",
            prompt_tokens + u64::from(tokens)
        );
        let last = format!("{}{}{}0\r\n\r\n", chunk(FINISH), chunk(&usage), chunk(DONE));
        let due = start + self.pacing.ttft;
        let mut connections = self.connections.borrow_mut();
        let Some(connection) = connections.get_mut(&id) else {
            return;
        };
        connection.pending.extend_from_slice(&self.head);
        if flush(connection).is_err() {
            connections.remove(&id);
            return;
        }
        connection.response = Some(Response {
            start,
            first: None,
            sent: 0,
            last: last.into_bytes(),
        });
        connection.due = Some(due);
        self.heap.borrow_mut().push(Reverse((due, id)));
        if self.wake_at.get().is_none_or(|at| due < at) {
            self.notify.notify_one();
        }
    }

    /// Writes whatever is due, forever.
    pub async fn run(&self) {
        loop {
            let now = Instant::now();
            loop {
                let top = self.heap.borrow().peek().map(|entry| entry.0);
                match top {
                    Some((due, id)) if due <= now => {
                        self.heap.borrow_mut().pop();
                        self.fire(id, due, now);
                    }
                    _ => break,
                }
            }
            let next = self.heap.borrow().peek().map(|entry| entry.0 .0);
            self.wake_at.set(next);
            match next {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = self.notify.notified() => {}
                    }
                }
                None => self.notify.notified().await,
            }
        }
    }

    /// Handles connection `id`'s heap entry for `due`.
    fn fire(&self, id: u64, due: Instant, now: Instant) {
        let mut connections = self.connections.borrow_mut();
        let Some(connection) = connections.get_mut(&id) else {
            return;
        };
        if connection.due != Some(due) {
            return;
        }
        connection.due = None;
        if let Some(response) = &mut connection.response {
            let Pacing { ttft, itl, tokens } = self.pacing;
            let start = response.start;
            let token_due = |i: u32| start + ttft + itl * i;
            let first = *response.first.get_or_insert_with(Instant::now);
            while response.sent < tokens && token_due(response.sent) <= now {
                connection.pending.extend_from_slice(&self.token);
                response.sent += 1;
            }
            if response.sent == tokens {
                connection.pending.extend_from_slice(&response.last);
                connection.response = None;
                self.log.push(Served {
                    connection: id as usize,
                    arrived: start,
                    first,
                    last: Instant::now(),
                });
            } else {
                connection.due = Some(token_due(response.sent));
            }
        }
        if flush(connection).is_err() {
            connections.remove(&id);
            return;
        }
        if connection.due.is_none() && !connection.pending.is_empty() {
            connection.due = Some(now + RETRY);
        }
        if let Some(next) = connection.due {
            self.heap.borrow_mut().push(Reverse((next, id)));
        }
    }
}

/// Writes as much of the pending bytes as the socket takes without waiting.
fn flush(connection: &mut Connection) -> std::io::Result<()> {
    while !connection.pending.is_empty() {
        match connection.writer.try_write(&connection.pending) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => {
                connection.pending.drain(..n);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
