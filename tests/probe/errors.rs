//! Each failure mode is counted by kind, and one failure never stops the run.

use crate::kit::support;

use infertune::probe::{
    self, DatasetSpec, LoadSpec, ProbeReport, RunOptions, Target, WorkloadSpec,
};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{FakeConfig, FakeServer, Fault};

fn workload(requests: u32) -> WorkloadSpec {
    WorkloadSpec {
        api: probe::Api::Chat,
        dataset: DatasetSpec::Random {
            input_len: 8,
            output_len: 16,
            range_ratio: 0.0,
            prefix_len: 0,
            tokenizer: None,
        },
        load: LoadSpec::Closed {
            concurrency: 2,
            requests: Some(requests),
            duration: None,
        },
        warmup: Some(0),
        min_tokens: None,
        ignore_eos: false,
        stream: true,
        extra_body: None,
        timeout: Duration::from_secs(10),
        stall_timeout: Some(Duration::from_millis(300)),
        seed: 3,
        slo: Vec::new(),
        precision: None,
    }
}

fn quick(fault: Fault) -> FakeConfig {
    FakeConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(2),
        tokens: Some(16),
        fault,
        ..FakeConfig::default()
    }
}

fn run_against(url: &str, workload: &WorkloadSpec) -> ProbeReport {
    let target = Target {
        base_url: url.into(),
        model: "fake".into(),
        api_key: None,
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(probe::run(&target, workload, RunOptions::default()))
        .unwrap()
}

/// Runs `workload` against a fake server of `config`, started for it.
pub(super) fn run(config: FakeConfig, workload: &WorkloadSpec) -> ProbeReport {
    let server = FakeServer::start(config);
    run_against(&server.url, workload)
}

/// Asserts every request failed with `kind`; returns the example message.
fn all_failed_with(report: &ProbeReport, kind: &str, requests: u32) -> String {
    assert_eq!(report.metrics["completed"], 0.0, "{:?}", report.json);
    assert_eq!(report.metrics["failed"], f64::from(requests));
    assert_eq!(report.metrics["error_rate"], 1.0);
    let tally = &report.json["errors_by_kind"][kind];
    assert_eq!(
        tally["count"], requests,
        "{}",
        report.json["errors_by_kind"]
    );
    tally["example"].as_str().unwrap().to_string()
}

#[test]
fn server_errors_are_http_errors_with_the_body() {
    let report = run(quick(Fault::Status(503)), &workload(4));
    let example = all_failed_with(&report, "http", 4);
    assert!(
        example.contains("503") && example.contains("overloaded"),
        "{example}"
    );
}

#[test]
fn refused_connections_are_connect_errors() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let report = run_against(&url, &workload(3));
    let example = all_failed_with(&report, "connect", 3);
    assert!(example.contains("cannot connect"), "{example}");
}

#[test]
fn a_stream_cut_midway_is_a_disconnect_and_incomplete() {
    let report = run(quick(Fault::DisconnectAfter(5)), &workload(4));
    all_failed_with(&report, "disconnect", 4);
    assert_eq!(report.metrics["incomplete"], 4.0);
    assert_eq!(report.metrics["incomplete_output_tokens"], 20.0);
    assert_eq!(report.metrics["total_output_tokens"], 0.0);
}

#[test]
fn a_silent_stream_is_a_stall() {
    let report = run(quick(Fault::StallAfter(3)), &workload(2));
    let example = all_failed_with(&report, "stall", 2);
    assert!(example.contains("no data"), "{example}");
    assert_eq!(report.metrics["incomplete_output_tokens"], 6.0);
}

#[test]
fn invalid_json_is_malformed() {
    let report = run(quick(Fault::MalformedAfter(2)), &workload(2));
    let example = all_failed_with(&report, "malformed", 2);
    assert!(example.contains("malformed JSON"), "{example}");
}

#[test]
fn slow_requests_time_out() {
    let mut spec = workload(2);
    spec.timeout = Duration::from_millis(100);
    spec.stall_timeout = None;
    let report = run(
        FakeConfig {
            ttft: Duration::from_millis(400),
            ..quick(Fault::None)
        },
        &spec,
    );
    all_failed_with(&report, "timeout", 2);
}

#[test]
fn failures_do_not_stop_the_other_requests() {
    let config = FakeConfig {
        fault_every: 2,
        ..quick(Fault::Status(500))
    };
    let report = run(config, &workload(10));
    assert_eq!(report.metrics["completed"], 5.0);
    assert_eq!(report.metrics["failed"], 5.0);
    assert_eq!(report.metrics["error_rate"], 0.5);
    assert_eq!(report.metrics["total_output_tokens"], 80.0);
}

#[test]
fn the_pruning_hook_stops_the_run() {
    let (spec, server, target) = one_at_a_time(1000);
    let options = RunOptions {
        progress: None,
        prune: Some(std::sync::Arc::new(|live: &probe::LiveStats| {
            (live.finished >= 3)
                .then(|| probe::EarlyStop::Pruned(format!("enough after {}", live.finished)))
        })),
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let report = runtime
        .block_on(probe::run(&target, &spec, options))
        .unwrap();
    let reason = report.pruned.expect("pruned").to_string();
    assert!(reason.starts_with("enough after"), "{reason}");
    assert!(report.metrics["completed"] < 1000.0);
    assert!(server.served() < 1000);
}

/// A workload of `requests` sent one at a time, and a fake server to send them to.
fn one_at_a_time(requests: u32) -> (WorkloadSpec, FakeServer, Target) {
    let mut spec = workload(requests);
    spec.load = LoadSpec::Closed {
        concurrency: 1,
        requests: Some(requests),
        duration: None,
    };
    let server = FakeServer::start(quick(Fault::None));
    let target = Target {
        base_url: server.url.clone(),
        model: "fake".into(),
        api_key: None,
    };
    (spec, server, target)
}

/// Serves every connection one streamed answer with a `Content-Length` and then closes it,
/// without saying so in a `Connection` header; returns the URL and the connection count.
fn close_after_each_answer() -> (String, Arc<AtomicUsize>) {
    answer_each_with(
        "text/event-stream",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n\
         data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":1}}\n\n\
         data: [DONE]\n\n",
    )
}

/// Serves every connection one `200 OK` with `body` as `content_type`, then closes it.
fn answer_each_with(content_type: &'static str, body: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            counted.fetch_add(1, Ordering::SeqCst);
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&request).contains("}") {
                let read = stream.read(&mut buf).unwrap();
                assert!(read > 0, "the client sent no request");
                request.extend_from_slice(&buf[..read]);
            }
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(answer.as_bytes()).unwrap();
        }
    });
    (url, connections)
}

#[test]
fn a_kept_alive_connection_the_server_closed_is_replaced() {
    let (url, connections) = close_after_each_answer();
    let report = run_against(&url, &workload(6));
    assert_eq!(report.metrics["completed"], 6.0, "{}", report.json);
    assert_eq!(report.metrics["failed"], 0.0);
    assert_eq!(report.metrics["total_output_tokens"], 6.0);
    assert_eq!(connections.load(Ordering::SeqCst), 6);
}

#[test]
fn a_200_that_is_not_an_event_stream_is_malformed() {
    let (url, _) = answer_each_with(
        "application/json",
        "{\"choices\":[{\"message\":{\"content\":\"hi\"}}]}",
    );
    let report = run_against(&url, &workload(3));
    let example = all_failed_with(&report, "malformed", 3);
    assert!(example.contains("[DONE]"), "{example}");
}

#[test]
fn a_stream_without_tokens_or_done_is_malformed_but_an_empty_answer_is_not() {
    let (url, _) = answer_each_with(
        "text/event-stream",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":0}}\n\n",
    );
    all_failed_with(&run_against(&url, &workload(3)), "malformed", 3);
    let (url, _) = answer_each_with(
        "text/event-stream",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":0}}\n\n\
         data: [DONE]\n\n",
    );
    let report = run_against(&url, &workload(3));
    assert_eq!(report.metrics["completed"], 3.0, "{}", report.json);
}

#[test]
fn a_stream_closed_without_done_after_tokens_is_an_incomplete_disconnect() {
    let (url, _) = answer_each_with(
        "text/event-stream",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n",
    );
    let report = run_against(&url, &workload(3));
    let example = all_failed_with(&report, "disconnect", 3);
    assert!(example.contains("[DONE]"), "{example}");
    assert_eq!(report.metrics["incomplete"], 3.0, "{}", report.json);
}

/// XInference's completions stream ends after the chunk that carries `finish_reason` and never
/// sends `data: [DONE]`: the generation finished, so the request completed.
#[test]
fn a_stream_that_ends_after_its_finish_reason_completed_without_done() {
    let (url, _) = answer_each_with(
        "text/event-stream",
        "data: {\"choices\":[{\"index\":0,\"text\":\"hi\",\"finish_reason\":null}]}\n\n\
         data: {\"choices\":[{\"index\":0,\"text\":\"!\",\"finish_reason\":\"length\"}],\
         \"usage\":{\"prompt_tokens\":8,\"completion_tokens\":2}}\n\n",
    );
    let report = run_against(&url, &workload(3));
    assert_eq!(report.metrics["completed"], 3.0, "{}", report.json);
    assert_eq!(report.metrics["failed"], 0.0, "{}", report.json);
    assert_eq!(
        report.metrics["total_output_tokens"], 6.0,
        "{}",
        report.json
    );
}
