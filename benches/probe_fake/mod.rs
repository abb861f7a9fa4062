//! A lean fake OpenAI-compatible chat server for the probe benchmark, so the benchmark
//! measures the probe rather than the server: raw TCP, a minimal HTTP/1.1 request parser,
//! pre-serialised SSE chunks in chunked transfer encoding, and one scheduler loop on one
//! thread that writes every chunk due in the same tick (no timer per token, no logging).
//!
//! Every request gets a streamed chat completion: a role-only chunk at once, the first token
//! `ttft` after the request arrived (the kernel's receive stamp of its last byte), then one
//! token every `itl`, and with the last token the finish chunk, a usage-only chunk and
//! `[DONE]`. The server logs when each request arrived and when its first and last tokens
//! were written ([`ServedLog`]): the truth a client's timings are compared with when the
//! server itself falls behind.

mod request;
mod schedule;
mod served;

pub use served::{ServedLog, ServedSummary};

use infertune::probe::stamped;
use schedule::Scheduler;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::Interest;
use tokio::net::{TcpSocket, TcpStream};

/// Bytes read at a time.
const READ_SIZE: usize = 4096;

/// Connections waiting to be accepted (the benchmark opens thousands at once).
const BACKLOG: u32 = 4096;

/// How responses are paced.
#[derive(Clone, Copy, Debug)]
pub struct Pacing {
    /// Delay from the request being read to the first token.
    pub ttft: Duration,
    /// Delay between tokens.
    pub itl: Duration,
    /// Tokens per response.
    pub tokens: u32,
}

/// Starts the server on a thread of its own, bound to a free port of 127.0.0.1; it serves
/// until the process exits, logging what it delivered to `log`.
pub fn start(pacing: Pacing, log: ServedLog) -> std::io::Result<SocketAddr> {
    let (bound, address) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let runtime = match runtime {
            Ok(runtime) => runtime,
            Err(e) => {
                let _ = bound.send(Err(e));
                return;
            }
        };
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, serve(pacing, log, bound));
    });
    address
        .recv()
        .map_err(|_| std::io::Error::other("the server thread ended before binding"))?
}

async fn serve(
    pacing: Pacing,
    log: ServedLog,
    bound: std::sync::mpsc::Sender<std::io::Result<SocketAddr>>,
) {
    let listener = TcpSocket::new_v4().and_then(|socket| {
        socket.set_reuseaddr(true)?;
        socket.bind(([127, 0, 0, 1], 0).into())?;
        socket.listen(BACKLOG)
    });
    let listener = match listener.and_then(|l| Ok((l.local_addr()?, l))) {
        Ok((address, listener)) => {
            let _ = bound.send(Ok(address));
            listener
        }
        Err(e) => {
            let _ = bound.send(Err(e));
            return;
        }
    };
    let scheduler = Rc::new(Scheduler::new(pacing, log));
    tokio::task::spawn_local({
        let scheduler = scheduler.clone();
        async move { scheduler.run().await }
    });
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::task::spawn_local(connection(scheduler.clone(), stream));
            }
            // Out of descriptors or similar: the client sees a refused or slow connect.
            Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    }
}

/// Reads requests off one connection and hands each to the scheduler.
async fn connection(scheduler: Rc<Scheduler>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    stamped::enable_receive_stamps(&stream);
    let (reader, writer) = stream.into_split();
    let id = scheduler.add(writer);
    let socket: &TcpStream = reader.as_ref();
    let mut buf = Vec::with_capacity(READ_SIZE);
    let mut chunk = [0u8; READ_SIZE];
    loop {
        if socket.readable().await.is_err() {
            break;
        }
        let arrived = match socket.try_io(Interest::READABLE, || {
            stamped::receive_stamped(socket, &mut chunk)
        }) {
            Ok((read, arrived)) if read > 0 => {
                buf.extend_from_slice(&chunk[..read]);
                arrived
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            _ => break,
        };
        loop {
            match request::parse(&buf) {
                Ok(Some(request)) => {
                    buf.drain(..request.len);
                    scheduler.begin(id, request.prompt_tokens, arrived.into());
                }
                Ok(None) => break,
                Err(_) => {
                    scheduler.remove(id);
                    return;
                }
            }
        }
    }
    scheduler.remove(id);
}
