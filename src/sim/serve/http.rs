//! HTTP routes of `sim serve`: OpenAI-compatible completions (streamed over SSE or not),
//! `/health`, `/v1/models`, `/metrics`, and `/v1/infertune/slot` (the port and devices it was
//! given).

use super::driver::{Command, StreamEvent};
use super::openai::{self, Endpoint, GenerationRequest, Responder};
use super::prom::{self, Counters};
use crate::sim::config::EngineConfig;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use hyper::body::Frame;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Shared state of the handlers.
pub(crate) struct AppState {
    /// Commands to the engine task.
    pub commands: mpsc::UnboundedSender<Command>,
    /// Metrics kept by the engine task.
    pub counters: Arc<Mutex<Counters>>,
    /// The engine configuration (context limits).
    pub config: EngineConfig,
    /// Name reported by `/v1/models` and accepted in `model`.
    pub model_name: String,
    /// Seed of the simulated model's natural output lengths.
    pub seed: u64,
    /// Next request id.
    pub next_id: AtomicU64,
    /// Server start (Unix seconds), reported as `created`.
    pub created: u64,
    /// What the server was given: its address and the accelerators its environment lets it
    /// see, echoed by `/v1/infertune/slot`.
    pub slot: Value,
}

/// The router.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/v1/models", get(models))
        .route("/metrics", get(metrics))
        .route("/v1/infertune/slot", get(slot))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .with_state(state)
}

async fn models(State(s): State<Arc<AppState>>) -> Json<Value> {
    Json(
        json!({"object": "list", "data": [{"id": s.model_name, "object": "model",
        "created": s.created, "owned_by": "infertune-sim", "root": s.config.model.name,
        "max_model_len": s.config.max_model_len}]}),
    )
}

async fn slot(State(s): State<Arc<AppState>>) -> Json<Value> {
    Json(s.slot.clone())
}

async fn metrics(State(s): State<Arc<AppState>>) -> Response {
    let counters = s.counters.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let text = prom::render(&counters, &s.model_name);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn chat(State(s): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(s, Endpoint::Chat, body).await
}

async fn completions(State(s): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(s, Endpoint::Completions, body).await
}

fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        Json(openai::error_body(message, kind, status.as_u16())),
    )
        .into_response()
}

async fn generate(s: Arc<AppState>, endpoint: Endpoint, body: Bytes) -> Response {
    let bad = |m: &str| error(StatusCode::BAD_REQUEST, "BadRequestError", m);
    let value: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return bad(&format!("the request body is not valid JSON: {e}")),
    };
    let req = match openai::parse(endpoint, &value) {
        Ok(r) => r,
        Err(m) => return bad(&m),
    };
    if let Some(model) = req.model.as_deref().filter(|m| *m != s.model_name) {
        let m = format!("The model `{model}` does not exist.");
        return error(StatusCode::NOT_FOUND, "NotFoundError", &m);
    }
    let id = s.next_id.fetch_add(1, Ordering::Relaxed);
    let (wanted, reason) = output_tokens(&req, &s.config, s.seed, id);
    let output = match s.config.check_request(req.prompt_tokens, wanted) {
        Ok(n) => n,
        Err(m) => return bad(&m),
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let add = Command::Add {
        id,
        prompt: req.prompt_tokens,
        content: req.content.clone(),
        output,
        events: tx,
    };
    if s.commands.send(add).is_err() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableError",
            "the engine has stopped",
        );
    }
    let handle = Handle {
        id,
        rx,
        commands: s.commands.clone(),
        done: false,
    };
    let responder = Responder {
        endpoint,
        id: format!(
            "{}-{id}",
            if endpoint == Endpoint::Chat {
                "chatcmpl"
            } else {
                "cmpl"
            }
        ),
        model: s.model_name.clone(),
        created: s.created,
    };
    if req.stream {
        let body = SseBody {
            handle,
            responder,
            include_usage: req.include_usage,
            prompt: req.prompt_tokens,
            reason,
            sent: 0,
            stage: if endpoint == Endpoint::Chat {
                Stage::Role
            } else {
                Stage::Tokens
            },
        };
        let headers = [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ];
        return (headers, Body::new(body)).into_response();
    }
    collect(handle, responder, req.prompt_tokens, reason).await
}

/// How many tokens the simulated model generates, and why it stops: `max_tokens` when given
/// (it never emits EOS earlier); without it, the context limit under `ignore_eos`, else a
/// seeded natural length of 16–256 tokens (at least `min_tokens`).
fn output_tokens(
    req: &GenerationRequest,
    cfg: &EngineConfig,
    seed: u64,
    id: u64,
) -> (u32, &'static str) {
    if let Some(max) = req.max_tokens {
        return (max, "length");
    }
    if req.ignore_eos {
        return (
            cfg.max_model_len.saturating_sub(req.prompt_tokens).max(1),
            "length",
        );
    }
    let mixed = (seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let natural = 16 + (mixed >> 33) as u32 % 241;
    (natural.max(req.min_tokens), "stop")
}

async fn collect(mut handle: Handle, responder: Responder, prompt: u32, reason: &str) -> Response {
    let mut text = String::new();
    let mut n = 0;
    while let Some(event) = handle.rx.recv().await {
        match event {
            StreamEvent::Token => {
                text.push_str(openai::token_text(n));
                n += 1;
            }
            StreamEvent::Finished => {
                handle.done = true;
                return Json(responder.full(text.trim_end(), reason, prompt, n)).into_response();
            }
            StreamEvent::Rejected(m) => {
                handle.done = true;
                return error(StatusCode::BAD_REQUEST, "BadRequestError", &m);
            }
        }
    }
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailableError",
        "the engine has stopped",
    )
}

/// A request's link to the engine task; dropping it early aborts the request.
struct Handle {
    id: u64,
    rx: mpsc::UnboundedReceiver<StreamEvent>,
    commands: mpsc::UnboundedSender<Command>,
    done: bool,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if !self.done {
            // The engine task may have stopped already; then there is nothing to abort.
            let _ = self.commands.send(Command::Abort { id: self.id });
        }
    }
}

enum Stage {
    Role,
    Tokens,
    Done,
}

/// The SSE response body: pulls engine events and writes chunks as they arrive.
struct SseBody {
    handle: Handle,
    responder: Responder,
    include_usage: bool,
    prompt: u32,
    reason: &'static str,
    sent: u32,
    stage: Stage,
}

fn sse(value: &Value) -> String {
    format!("data: {value}\n\n")
}

impl HttpBody for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let text = match this.stage {
            Stage::Done => return Poll::Ready(None),
            Stage::Role => {
                this.stage = Stage::Tokens;
                sse(&this.responder.role_chunk())
            }
            Stage::Tokens => match this.handle.rx.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(StreamEvent::Token)) => {
                    let chunk = this.responder.token_chunk(openai::token_text(this.sent));
                    this.sent += 1;
                    sse(&chunk)
                }
                Poll::Ready(Some(StreamEvent::Finished)) => {
                    this.handle.done = true;
                    this.stage = Stage::Done;
                    let mut tail = sse(&this.responder.finish_chunk(this.reason));
                    if this.include_usage {
                        tail.push_str(&sse(&this.responder.usage_chunk(this.prompt, this.sent)));
                    }
                    tail + "data: [DONE]\n\n"
                }
                Poll::Ready(Some(StreamEvent::Rejected(m))) => {
                    this.handle.done = true;
                    this.stage = Stage::Done;
                    let body = json!({"error": openai::error_body(&m, "BadRequestError", 400)});
                    sse(&body) + "data: [DONE]\n\n"
                }
                Poll::Ready(None) => {
                    this.stage = Stage::Done;
                    return Poll::Ready(None);
                }
            },
        };
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(text)))))
    }
}
