//! A server's own counters, read from its Prometheus text exposition (`GET /metrics`), so a
//! probe's token counts can be checked against what the engine says it generated.

use super::http::Endpoint;
use super::workload::Api;
use super::Target;
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{AUTHORIZATION, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use std::time::Duration;

/// Longest wait for a `/metrics` answer.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);

/// The value of counter `name` on `target`'s `/metrics`: the sum over all its series
/// (e.g. one per model or engine).
pub(crate) async fn read_counter(target: &Target, name: &str) -> Result<f64> {
    let text = tokio::time::timeout(SCRAPE_TIMEOUT, scrape(target))
        .await
        .with_context(|| format!("GET /metrics: no answer within {SCRAPE_TIMEOUT:?}"))??;
    counter_value(&text, name).with_context(|| format!("GET /metrics has no counter `{name}`"))
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

/// The sum of the samples of metric `name` in a Prometheus text exposition; `None` when it
/// has no sample. Names match exactly (`x_total` is not `x_total_created`).
pub(crate) fn counter_value(text: &str, name: &str) -> Option<f64> {
    let mut found = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') {
            continue;
        }
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let value_text = if let Some(labelled) = rest.strip_prefix('{') {
            match labelled.rfind('}') {
                Some(end) => &labelled[end + 1..],
                None => continue,
            }
        } else if rest.starts_with([' ', '\t']) {
            rest
        } else {
            continue;
        };
        let Some(value) = value_text
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        else {
            continue;
        };
        found = Some(found.unwrap_or(0.0) + value);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::counter_value;

    const EXPOSITION: &str = "\
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine=\"0\",model_name=\"tiny\"} 30.0
vllm:generation_tokens_created{engine=\"0\",model_name=\"tiny\"} 1.7e9
vllm:generation_tokens_total{engine=\"1\",model_name=\"tiny\"} 12.0
plain_total 5 1700000000000
plain_total_created 9
";

    #[test]
    fn labelled_series_are_summed_and_lookalike_names_skipped() {
        assert_eq!(
            counter_value(EXPOSITION, "vllm:generation_tokens_total"),
            Some(42.0)
        );
        assert_eq!(counter_value(EXPOSITION, "plain_total"), Some(5.0));
    }

    #[test]
    fn a_missing_counter_is_none() {
        assert_eq!(counter_value(EXPOSITION, "vllm:prompt_tokens_total"), None);
        assert_eq!(counter_value("", "x"), None);
    }
}
