//! Wait until a spawned server really serves: health 200, `/v1/models` lists the served model,
//! and a 1-token completion succeeds. Polls with exponential backoff capped at 250 ms and stops
//! the moment the process exits.

use super::{port, LaunchSpec, Readiness, ReadyRequest};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{header, Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// First pause between attempts.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// Longest pause between attempts.
const MAX_BACKOFF: Duration = Duration::from_millis(250);
/// How often the process is checked for exit while waiting.
const EXIT_POLL: Duration = Duration::from_millis(5);

/// How the wait ended.
pub(crate) enum Outcome {
    /// All three checks passed.
    Ready,
    /// The process exited first.
    Exited(ExitStatus),
    /// The deadline passed; the last failed check.
    TimedOut(String),
    /// The cancel flag was raised.
    Cancelled,
}

/// Wait for `spec`'s server (process `child`) until `deadline`. Runs its own small runtime on a
/// scoped thread, so it can be called from any context, including inside another runtime.
pub(crate) fn wait_ready(
    child: &mut Child,
    spec: &LaunchSpec,
    deadline: Instant,
    cancel: &AtomicBool,
) -> std::io::Result<Outcome> {
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            Ok(runtime.block_on(poll(child, spec, deadline, cancel)))
        });
        waiter
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

async fn poll(
    child: &mut Child,
    spec: &LaunchSpec,
    deadline: Instant,
    cancel: &AtomicBool,
) -> Outcome {
    let authority = port::authority(&spec.host, spec.port);
    let mut backoff = FIRST_BACKOFF;
    let mut last = "the server never answered".to_string();
    loop {
        tokio::select! {
            biased;
            stop = stopped(child, deadline, cancel) => return stop.unwrap_or(Outcome::TimedOut(last)),
            checked = check(&authority, &spec.readiness) => match checked {
                Ok(()) => return Outcome::Ready,
                Err(observed) => last = observed,
            },
        }
        tokio::select! {
            biased;
            stop = stopped(child, deadline, cancel) => return stop.unwrap_or(Outcome::TimedOut(last)),
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Resolves when the process exits (`Some(Exited)`), the flag is raised (`Some(Cancelled)`) or
/// the deadline passes (`None`).
async fn stopped(child: &mut Child, deadline: Instant, cancel: &AtomicBool) -> Option<Outcome> {
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(Outcome::Exited(status));
        }
        if cancel.load(Ordering::Relaxed) {
            return Some(Outcome::Cancelled);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(EXIT_POLL).await;
    }
}

/// One pass of the three checks; the error says which failed and what was seen.
async fn check(authority: &str, readiness: &Readiness) -> Result<(), String> {
    let health = &readiness.health_path;
    let (status, _) = request(authority, Method::GET, health, None).await?;
    if status != StatusCode::OK {
        return Err(format!("GET {health} answered {status}"));
    }
    let (status, body) = request(authority, Method::GET, "/v1/models", None).await?;
    if status != StatusCode::OK {
        return Err(format!("GET /v1/models answered {status}"));
    }
    let served = &readiness.served_model;
    let ids = model_ids(&body);
    if !ids.iter().any(|id| id == served) {
        return Err(format!("/v1/models lists {ids:?}, not {served:?}"));
    }
    let (path, body) = match readiness.api {
        ReadyRequest::Chat => (
            "/v1/chat/completions",
            serde_json::json!({"model": served, "max_tokens": 1, "stream": false,
                "messages": [{"role": "user", "content": "Hello"}]}),
        ),
        ReadyRequest::Completions => (
            "/v1/completions",
            serde_json::json!({"model": served, "max_tokens": 1, "stream": false, "prompt": "Hello"}),
        ),
    };
    let (status, answer) = request(authority, Method::POST, path, Some(body.to_string())).await?;
    if status != StatusCode::OK {
        let text = String::from_utf8_lossy(&answer);
        let text: String = text.chars().take(300).collect();
        return Err(format!("POST {path} answered {status}: {text}"));
    }
    Ok(())
}

fn model_ids(body: &[u8]) -> Vec<String> {
    let parsed: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    parsed["data"]
        .as_array()
        .map(|models| {
            models
                .iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// One request on a fresh connection (servers may close after each answer).
async fn request(
    authority: &str,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<(StatusCode, Bytes), String> {
    let failed = |what: &str, e: &dyn std::fmt::Display| format!("{method} {path}: {what}: {e}");
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|e| failed("cannot connect", &e))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| failed("handshake", &e))?;
    tokio::spawn(connection);
    let request = Request::builder()
        .method(method.clone())
        .uri(path)
        .header(header::HOST, authority)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| failed("bad request", &e))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| failed("no answer", &e))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| failed("body", &e))?
        .to_bytes();
    Ok((status, body))
}
