//! `GET /metrics` of a serving target.

use crate::probe::http::Endpoint;
use crate::probe::workload::Api;
use crate::probe::Target;
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{AUTHORIZATION, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use std::time::Duration;

/// Longest wait for a `/metrics` answer.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);

/// The body of `target`'s `/metrics` (the Prometheus text exposition).
pub(crate) async fn metrics_text(target: &Target) -> Result<String> {
    tokio::time::timeout(SCRAPE_TIMEOUT, scrape(target))
        .await
        .with_context(|| format!("GET /metrics: no answer within {SCRAPE_TIMEOUT:?}"))?
}

async fn scrape(target: &Target) -> Result<String> {
    let endpoint = Endpoint::new(target, Api::Completions)?;
    let stream = tokio::net::TcpStream::connect(&endpoint.address)
        .await
        .with_context(|| format!("GET /metrics: cannot connect to {}", endpoint.address))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("GET /metrics: HTTP handshake")?;
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(Method::GET)
        .uri("/metrics")
        .header(HOST, endpoint.address.as_str());
    if let Some(key) = &target.api_key {
        request = request.header(AUTHORIZATION, format!("Bearer {key}"));
    }
    let request = request
        .body(Empty::<Bytes>::new())
        .context("GET /metrics: building the request")?;
    let response = sender.send_request(request).await.context("GET /metrics")?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .context("GET /metrics: reading the body")?
        .to_bytes();
    if !status.is_success() {
        bail!("GET /metrics answered {status}");
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}
