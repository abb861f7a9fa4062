//! `infertune sim serve` as a process: OpenAI-compatible streaming over raw HTTP, metrics,
//! many concurrent streams, and start-up refusals with the engine's messages.

use crate::kit::sim_server::SimServer;
use assert_cmd::cargo::cargo_bin;
use serde_json::Value;
use std::process::Command;

/// A `sim serve` of Qwen2.5-0.5B on an A100 named `tiny`, a hundred times faster than modelled,
/// with `extra` arguments.
fn start(extra: &[&str]) -> SimServer {
    let mut args = vec![
        "--card",
        "A100-80",
        "--model",
        "Qwen2.5-0.5B",
        "--served-model-name",
        "tiny",
        "--time-scale",
        "0.01",
        "--startup-time",
        "1s",
    ];
    args.extend_from_slice(extra);
    SimServer::start(&args)
}

/// The `data:` payloads of an SSE response (chunked transfer decoded).
fn sse_events(response: &str) -> Vec<String> {
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP head");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{head}"
    );
    let mut decoded = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).expect("chunk size");
        if n == 0 {
            break;
        }
        decoded.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    decoded
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(str::to_string)
        .collect()
}

fn stream_chat(server: &SimServer, words: &str, max_tokens: u32) -> Vec<String> {
    let body = serde_json::json!({"model": "tiny", "stream": true, "stream_options": {"include_usage": true},
        "max_tokens": max_tokens, "messages": [{"role": "user", "content": words}]});
    sse_events(&server.post("/v1/chat/completions", &body))
}

#[test]
fn streams_a_chat_completion_with_usage_then_reports_metrics() {
    let server = start(&[]);
    let events = stream_chat(&server, "one two three four five", 12);
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let first = &chunks[0]["choices"][0]["delta"];
    assert_eq!(first["role"], "assistant");
    assert_eq!(first["content"], "");
    let tokens: Vec<&Value> = chunks
        .iter()
        .filter(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
        .collect();
    assert_eq!(tokens.len(), 12);
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["choices"].as_array().map(Vec::len), Some(0));
    assert_eq!(usage["usage"]["prompt_tokens"], 5);
    assert_eq!(usage["usage"]["completion_tokens"], 12);
    assert_eq!(usage["model"], "tiny");

    let plain = server.post(
        "/v1/completions",
        &serde_json::json!({"model": "tiny", "prompt": "a b c", "max_tokens": 3}),
    );
    let json: Value = serde_json::from_str(plain.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(json["usage"]["completion_tokens"], 3);
    assert_eq!(
        json["choices"][0]["text"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        3
    );

    let models = server.get("/v1/models").unwrap();
    assert!(models.contains("\"id\":\"tiny\""), "{models}");
    let metrics = server.get("/metrics").unwrap();
    assert!(
        metrics.contains("vllm:generation_tokens_total{model_name=\"tiny\"} 15"),
        "{metrics}"
    );
    assert!(metrics.contains("vllm:num_requests_running"), "{metrics}");
    let refused = server.post("/v1/chat/completions", &serde_json::json!({"model": "tiny", "max_tokens": 40000, "messages": [{"role": "user", "content": "hi"}]}));
    assert!(
        refused.starts_with("HTTP/1.1 400") && refused.contains("maximum context length"),
        "{refused}"
    );
}

#[test]
fn copes_with_hundreds_of_concurrent_streams() {
    let server = start(&["--max-num-seqs", "64"]);
    let results: Vec<usize> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..300)
            .map(|_| scope.spawn(|| stream_chat(&server, "alpha beta gamma", 16).len()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // role + 16 tokens + finish + usage + [DONE]
    assert!(results.iter().all(|n| *n == 20), "{results:?}");
}

#[test]
fn refuses_to_start_like_the_engine() {
    let run = |args: &[&str]| {
        let mut all = vec!["sim", "serve", "--port", "1", "--time-scale", "0.001"];
        all.extend_from_slice(args);
        Command::new(cargo_bin("infertune"))
            .args(&all)
            .output()
            .unwrap()
    };
    let oom = run(&["--card", "H100", "--model", "Qwen2.5-72B"]);
    assert_eq!(oom.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&oom.stderr).contains("CUDA out of memory"));
    let too_long = run(&[
        "--card",
        "H100",
        "--model",
        "Qwen2.5-7B",
        "--max-model-len",
        "65536",
    ]);
    assert_eq!(too_long.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&too_long.stderr);
    assert!(
        stderr.contains("ValueError: User-specified max_model_len (65536)"),
        "{stderr}"
    );
}

/// The value of an unlabelled-or-labelled Prometheus counter in a `/metrics` response.
fn counter(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find(|l| l.starts_with(name) && !l.starts_with('#'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{metrics}"))
}

#[test]
fn the_probe_measures_the_simulator_consistently() {
    let server = start(&["--max-num-seqs", "16"]);
    let before = counter(
        &server.get("/metrics").unwrap(),
        "vllm:generation_tokens_total",
    );
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("bench.json");
    let out = Command::new(cargo_bin("infertune"))
        .args([
            "bench",
            "--url",
            &server.url,
            "--model",
            "tiny",
            "--concurrency",
            "8",
        ])
        .args([
            "--requests",
            "40",
            "--input-len",
            "64",
            "--output-len",
            "32",
        ])
        .args(["--ignore-eos", "--json"])
        .arg(&json_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(report["completed"], 40.0);
    assert_eq!(report["failed"], 0.0);
    assert_eq!(report["total_output_tokens"], 40.0 * 32.0);
    assert_eq!(report["total_input_tokens"], 40.0 * 64.0);
    let after = counter(
        &server.get("/metrics").unwrap(),
        "vllm:generation_tokens_total",
    );
    // The server also generated the warm-up's requests: one per client (8), before the 40.
    assert_eq!(
        after - before,
        (40.0 + 8.0) * 32.0,
        "server and probe token counts agree"
    );
    let (ttft, tpot) = (
        report["mean_ttft_ms"].as_f64().unwrap(),
        report["mean_tpot_ms"].as_f64().unwrap(),
    );
    assert!(ttft > 0.0 && tpot > 0.0, "ttft {ttft} tpot {tpot}");
    let e2el = report["mean_e2el_ms"].as_f64().unwrap();
    assert!(
        e2el >= ttft + 30.0 * tpot * 0.9,
        "e2el {e2el} vs ttft {ttft} + 31 tokens at {tpot}"
    );
}
