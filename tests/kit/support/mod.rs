//! A fake OpenAI-compatible streaming server with injected timings and faults, for the
//! probe's tests and benchmark. Bind 127.0.0.1 only.
#![allow(dead_code)]

mod clock;
mod events;

use axum::body::{Body, Bytes};
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::{IncomingStream, Listener};
use axum::Router;
use infertune::probe::stamped::{StampedStream, Stamps};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What goes wrong, on the requests picked by `FakeConfig::fault_every`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// Nothing.
    None,
    /// Answer with this HTTP status and a short body.
    Status(u16),
    /// Close the connection after this many tokens.
    DisconnectAfter(u32),
    /// Go silent (connection open) after this many tokens.
    StallAfter(u32),
    /// Send an invalid JSON event after this many tokens.
    MalformedAfter(u32),
}

/// When the usage chunk is sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UsageMode {
    /// Never (clients must count tokens themselves).
    Omit,
    /// With the finish chunk, right after the last token.
    AtEnd,
    /// This long after the last token (followed by `[DONE]`).
    Late(Duration),
}

/// How the pace of tokens varies between responses: the run-to-run noise a test injects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// Every response at `itl`.
    Steady,
    /// Each response's `itl` times a factor drawn uniformly from `[1 − j, 1 + j]` (seeded by
    /// the request's number): noise that averages out.
    Jitter(f64),
    /// `itl` times `1 + k × seconds since the server started`: a figure that never settles.
    Slowing(f64),
}

/// Behaviour of the fake server.
#[derive(Clone, Debug)]
pub struct FakeConfig {
    /// Delay before the first token.
    pub ttft: Duration,
    /// Delay between tokens.
    pub itl: Duration,
    /// How `itl` varies between responses.
    pub pace: Pace,
    /// Tokens per response (`None`: the request's `max_tokens`).
    pub tokens: Option<u32>,
    /// Send a role-only chunk (empty content) at once, before the first token.
    pub role_chunk: bool,
    /// When usage is reported.
    pub usage: UsageMode,
    /// Injected failure.
    pub fault: Fault,
    /// The fault hits request numbers divisible by this (1 = every request).
    pub fault_every: u64,
    /// Keep every request body.
    pub capture_bodies: bool,
    /// Responses whose number is divisible by this stream their tokens as empty text, as vLLM
    /// streams a random-weight model's undecodable tokens; only usage counts them (0 = none).
    pub silent_every: u64,
}

impl Default for FakeConfig {
    fn default() -> Self {
        FakeConfig {
            ttft: Duration::from_millis(150),
            itl: Duration::from_millis(10),
            pace: Pace::Steady,
            tokens: Some(64),
            role_chunk: true,
            usage: UsageMode::AtEnd,
            fault: Fault::None,
            fault_every: 1,
            capture_bodies: false,
            silent_every: 0,
        }
    }
}

struct Shared {
    config: FakeConfig,
    served: AtomicU64,
    bodies: Mutex<Vec<Bytes>>,
    first_tokens: Arc<Mutex<Vec<Duration>>>,
    /// When the server started: the clock of [`Pace::Slowing`].
    started: Instant,
}

/// A running fake server; it stops when dropped.
pub struct FakeServer {
    /// Base URL, e.g. `http://127.0.0.1:41234`.
    pub url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FakeServer {
    /// Starts a server on its own thread and single-threaded runtime (usable from sync code).
    pub fn start(config: FakeConfig) -> FakeServer {
        let shared = Arc::new(Shared {
            config,
            served: AtomicU64::new(0),
            bodies: Mutex::new(Vec::new()),
            first_tokens: Arc::default(),
            started: Instant::now(),
        });
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = shared.clone();
        std::thread::Builder::new()
            .name("fake-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("fake server runtime");
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                        .await
                        .expect("bind 127.0.0.1");
                    let addr = listener.local_addr().expect("local address");
                    url_tx
                        .send(format!("http://{addr}"))
                        .expect("report address");
                    let app = Router::new()
                        .route("/v1/chat/completions", post(chat))
                        .route("/v1/completions", post(completions))
                        .with_state(state)
                        .into_make_service_with_connect_info::<Arrivals>();
                    let _ = axum::serve(StampedListener(listener), app)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })
            .expect("spawn the fake server's thread");
        let url = url_rx.recv().expect("fake server started");
        FakeServer {
            url,
            shared,
            stop: Some(stop),
        }
    }

    /// Requests received so far.
    pub fn served(&self) -> u64 {
        self.shared.served.load(Ordering::SeqCst)
    }

    /// The TTFT each streamed response actually got, in the order their first tokens went
    /// out: from the kernel's arrival stamp of the request to the first token being handed to
    /// the connection (later than configured when the server falls behind).
    pub fn delivered_ttfts(&self) -> Vec<Duration> {
        self.shared.first_tokens.lock().unwrap().clone()
    }

    /// The bodies received (with `capture_bodies`).
    pub fn bodies(&self) -> Vec<Bytes> {
        self.shared.bodies.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Accepts connections whose reads carry the kernel's receive stamps, so each response is
/// timed from when its request arrived rather than from when the server got to it.
struct StampedListener(tokio::net::TcpListener);

impl Listener for StampedListener {
    type Io = StampedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (StampedStream, SocketAddr) {
        loop {
            let accepted = self.0.accept().await.and_then(|(tcp, address)| {
                tcp.set_nodelay(true)?;
                Ok((StampedStream::new(tcp)?, address))
            });
            match accepted {
                Ok(accepted) => return accepted,
                // Out of descriptors or similar: the client sees a slow connect.
                Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// A connection's arrival stamps, handed to each handler.
#[derive(Clone)]
struct Arrivals(Arc<Stamps>);

impl Connected<IncomingStream<'_, StampedListener>> for Arrivals {
    fn connect_info(stream: IncomingStream<'_, StampedListener>) -> Self {
        Arrivals(stream.io().stamps())
    }
}

async fn chat(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(arrivals): ConnectInfo<Arrivals>,
    body: Bytes,
) -> Response {
    respond(&shared, arrivals.0.last_arrival(), body, events::Api::Chat)
}

async fn completions(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(arrivals): ConnectInfo<Arrivals>,
    body: Bytes,
) -> Response {
    respond(
        &shared,
        arrivals.0.last_arrival(),
        body,
        events::Api::Completions,
    )
}

/// A number in `[0, 1)` fixed by `n` (splitmix64).
fn unit_draw(n: u64) -> f64 {
    let mut z = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as f64 / (u64::MAX as f64 + 1.0)
}

/// The response to a request whose last bytes arrived at `arrived`.
fn respond(shared: &Shared, arrived: Instant, body: Bytes, api: events::Api) -> Response {
    let number = shared.served.fetch_add(1, Ordering::SeqCst);
    let config = &shared.config;
    if config.capture_bodies {
        shared.bodies.lock().unwrap().push(body.clone());
    }
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let fault = if config.fault_every > 0 && number.is_multiple_of(config.fault_every) {
        config.fault
    } else {
        Fault::None
    };
    if let Fault::Status(code) = fault {
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (status, "fake failure: the server is overloaded").into_response();
    }
    let tokens = config
        .tokens
        .unwrap_or_else(|| request["max_tokens"].as_u64().unwrap_or(16) as u32);
    let prompt_tokens = events::prompt_words(&request);
    let streamed = request["stream"].as_bool().unwrap_or(false);
    let factor = match config.pace {
        Pace::Steady => 1.0,
        Pace::Jitter(j) => 1.0 - j + 2.0 * j * unit_draw(number),
        Pace::Slowing(k) => 1.0 + k * shared.started.elapsed().as_secs_f64(),
    };
    let plan = events::Plan {
        itl: config.itl.mul_f64(factor),
        arrived,
        first_token_log: shared.first_tokens.clone(),
        api,
        tokens,
        prompt_tokens,
        fault,
        silent: config.silent_every > 0 && number.is_multiple_of(config.silent_every),
    };
    if streamed {
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::new(events::EventBody::new(config, plan)))
            .expect("valid response")
    } else {
        Response::builder()
            .header("content-type", "application/json")
            .body(Body::new(events::WholeBody::new(config, plan)))
            .expect("valid response")
    }
}
