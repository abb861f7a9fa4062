//! Wait until a spawned server really serves: the launch's own ready file where it has one,
//! health 200, `/v1/models` lists the served model, and a 1-token completion succeeds. Polls with exponential backoff capped at 250 ms and stops
//! the moment the process exits.
//!
//! The server that answers must be ours: before and after the checks, every socket listening on
//! the port must be held by a process of the server's tree. Another process listening there
//! (another study's server that took the port first) ends the wait at once, instead of its
//! answers being taken for our server's.

use super::tree::Tree;
use super::{port, sockets, LaunchSpec, Readiness, ReadyRequest};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{header, Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::HashSet;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// First pause between attempts.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// Longest pause between attempts.
const MAX_BACKOFF: Duration = Duration::from_millis(250);
/// How often the process is checked for exit while waiting.
const EXIT_POLL: Duration = Duration::from_millis(5);
/// How long a listener no visible process holds is waited out before it counts as another
/// server's: a server that exits at start (llama.cpp listens before it loads the model) can
/// leave its socket listed for a moment after its file descriptors became unreadable.
const UNOWNED_GRACE: Duration = Duration::from_secs(2);

/// How the wait ended.
pub(crate) enum WaitEnd {
    /// All three checks passed.
    Ready,
    /// Another process listens on the port; what was found.
    Foreign(String),
    /// The process exited first.
    Exited(ExitStatus),
    /// The deadline passed; the last failed check.
    TimedOut(String),
    /// The cancel flag was raised.
    Cancelled,
}

/// Why a pass of the checks did not prove the server ready.
enum Miss {
    /// Not yet; what was seen.
    NotYet(String),
    /// Another process listens on the port; what was found.
    Foreign(String),
    /// A listener on the port that no visible process holds; what was found.
    Unowned(String),
}

/// Wait for `spec`'s server (process `child`, processes `tree`) until `deadline`. Runs its own
/// small runtime on a scoped thread, so it can be called from any context, including inside
/// another runtime.
pub(crate) fn wait_ready(
    child: &mut Child,
    tree: &mut Tree,
    spec: &LaunchSpec,
    deadline: Instant,
    cancel: &AtomicBool,
) -> std::io::Result<WaitEnd> {
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            Ok(runtime.block_on(poll(child, tree, spec, deadline, cancel)))
        });
        waiter
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

async fn poll(
    child: &mut Child,
    tree: &mut Tree,
    spec: &LaunchSpec,
    deadline: Instant,
    cancel: &AtomicBool,
) -> WaitEnd {
    let authority = port::authority(&spec.host, spec.port);
    let mut backoff = FIRST_BACKOFF;
    let mut last = "the server never answered".to_string();
    let mut unowned_since: Option<Instant> = None;
    loop {
        tokio::select! {
            biased;
            stop = stopped(child, deadline, cancel) => return stop.unwrap_or(WaitEnd::TimedOut(last)),
            checked = owned_check(&authority, spec, tree) => match checked {
                Ok(()) => return WaitEnd::Ready,
                Err(Miss::Foreign(found)) => return WaitEnd::Foreign(found),
                Err(Miss::Unowned(found)) => {
                    if unowned_since.get_or_insert_with(Instant::now).elapsed() >= UNOWNED_GRACE {
                        return WaitEnd::Foreign(found);
                    }
                    last = found;
                }
                Err(Miss::NotYet(observed)) => {
                    unowned_since = None;
                    last = observed;
                }
            },
        }
        tokio::select! {
            biased;
            stop = stopped(child, deadline, cancel) => return stop.unwrap_or(WaitEnd::TimedOut(last)),
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Resolves when the process exits (`Some(Exited)`), the flag is raised (`Some(Cancelled)`) or
/// the deadline passes (`None`).
async fn stopped(child: &mut Child, deadline: Instant, cancel: &AtomicBool) -> Option<WaitEnd> {
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(WaitEnd::Exited(status));
        }
        if cancel.load(Ordering::Relaxed) {
            return Some(WaitEnd::Cancelled);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(EXIT_POLL).await;
    }
}

/// One pass of the three checks, between two proofs that only our server listens on the port.
async fn owned_check(authority: &str, spec: &LaunchSpec, tree: &mut Tree) -> Result<(), Miss> {
    ours(authority, spec, tree)?;
    check(authority, &spec.readiness)
        .await
        .map_err(Miss::NotYet)?;
    ours(authority, spec, tree)
}

/// Every socket listening on the server's port is held by a process of `tree`. Where the socket
/// table cannot be read, the checks alone decide.
fn ours(authority: &str, spec: &LaunchSpec, tree: &mut Tree) -> Result<(), Miss> {
    let Some(listening) = sockets::listeners(&spec.host, spec.port) else {
        return Ok(());
    };
    if listening.is_empty() {
        return Err(Miss::NotYet(format!("nothing listens on {authority} yet")));
    }
    let held: HashSet<u64> = tree
        .refresh()
        .iter()
        .flat_map(|p| sockets::socket_inodes(p.pid))
        .collect();
    let foreign: Vec<u64> = listening
        .into_iter()
        .filter(|i| !held.contains(i))
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    let holders = sockets::holders(&foreign);
    let by = if holders.is_empty() {
        "another process".to_string()
    } else {
        format!("process {holders:?}")
    };
    let found = format!(
        "{authority} is listened on by {by}, not by this server; another server took the port"
    );
    Err(if holders.is_empty() {
        Miss::Unowned(found)
    } else {
        Miss::Foreign(found)
    })
}

/// One pass of the three checks; the error says which failed and what was seen.
async fn check(authority: &str, readiness: &Readiness) -> Result<(), String> {
    if let Some(file) = readiness.ready_file.as_ref().filter(|f| !f.exists()) {
        return Err(format!("the launch has not written {} yet", file.display()));
    }
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
