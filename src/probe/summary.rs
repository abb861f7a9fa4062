//! The terminal summary of a run, laid out like `vllm bench serve`, plus a percentile table.

use super::ProbeReport;
use crate::record::{metric, Latency};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use std::fmt::Write;

const WIDTH: usize = 50;
const STATS: [&str; 9] = [
    "mean", "median", "std", "min", "p50", "p90", "p95", "p99", "max",
];

/// Lines of the summary: label, metric key, decimals; in `vllm bench serve` order.
const SUMMARY_LINES: [(&str, &str, usize); 11] = [
    ("Successful requests:", metric::COMPLETED, 0),
    ("Failed requests:", metric::FAILED, 0),
    (
        "  of which incomplete (partial streams):",
        metric::INCOMPLETE,
        0,
    ),
    ("Benchmark duration (s):", metric::DURATION_S, 2),
    ("Total input tokens:", metric::TOTAL_INPUT_TOKENS, 0),
    ("Total generated tokens:", metric::TOTAL_OUTPUT_TOKENS, 0),
    (
        "Tokens of incomplete requests:",
        metric::INCOMPLETE_OUTPUT_TOKENS,
        0,
    ),
    ("Request throughput (req/s):", metric::REQUEST_THROUGHPUT, 2),
    ("Request goodput (req/s):", metric::REQUEST_GOODPUT, 2),
    (
        "Output token throughput (tok/s):",
        metric::OUTPUT_THROUGHPUT,
        2,
    ),
    (
        "Total token throughput (tok/s):",
        metric::TOTAL_TOKEN_THROUGHPUT,
        2,
    ),
];

/// The summary of `report` as text; `title` names the run (e.g. `concurrency 64`).
pub fn render(report: &ProbeReport, title: &str) -> String {
    let m = &report.metrics;
    let mut out = String::new();
    let mut line = |label: &str, value: String| {
        let _ = writeln!(out, "{label:<40}{value:>10}");
    };
    let header = format!(" Serving Benchmark Result ({title}) ");
    for (label, key, decimals) in SUMMARY_LINES {
        match m.get(key) {
            Some(v) => line(label, format!("{v:.decimals$}")),
            // Goodput only exists when SLOs were given; the rest read as 0 when absent.
            None if key == metric::REQUEST_GOODPUT => {}
            None => line(label, format!("{:.decimals$}", 0.0)),
        }
    }
    if let Some(steady) = m.get(metric::STEADY_OUTPUT_THROUGHPUT) {
        let half = m.get(&metric::half_width_of(metric::STEADY_OUTPUT_THROUGHPUT));
        let window = m.get(metric::STEADY_WINDOW_S).copied().unwrap_or(0.0);
        let figure = match half {
            Some(h) => format!("{steady:.2} ± {h:.2} (95%, {window:.0} s)"),
            None => format!("{steady:.2} (no interval: {window:.0} s window)"),
        };
        let _ = writeln!(out, "{:<30}{figure:>20}", "Steady output tok/s:");
    }
    match m.get(metric::PRECISION_REACHED) {
        Some(r) if *r > 0.0 => {
            let _ = writeln!(out, "Ended once its interval met the precision asked.");
        }
        Some(_) => {
            let _ = writeln!(
                out,
                "Reached its ceiling before its interval met the precision asked."
            );
        }
        None => {}
    }
    let mut result = format!("{header:=^WIDTH$}\n{out}");
    if let Some(sources) = report
        .json
        .get("output_tokens_source")
        .and_then(|s| s.as_object())
    {
        let list: Vec<String> = sources.iter().map(|(k, v)| format!("{k} {v}")).collect();
        if !list.is_empty() {
            let _ = writeln!(result, "Output tokens counted from: {}", list.join(", "));
        }
    }
    result.push_str(&replay_lines(report));
    result.push_str(&latency_table(report));
    result.push_str(&error_table(report));
    if let Some(reason) = &report.pruned {
        let _ = writeln!(result, "Stopped early: {reason}");
    }
    let _ = writeln!(result, "{}", "=".repeat(WIDTH));
    result
}

/// What a trace replay covered and how faithful it was: the window, the length scale, send
/// lateness against the trace and the requests whose usage disagrees with it.
fn replay_lines(report: &ProbeReport) -> String {
    let Some(trace) = report.json.get("trace_replay") else {
        return String::new();
    };
    let m = &report.metrics;
    let get = |key: &str| m.get(key).copied().unwrap_or_default();
    let percent = |key: &str| {
        m.get(key)
            .map_or("—".to_string(), |v| format!("{:.1}%", v * 100.0))
    };
    let source = report.json["server"]["sources"]["prefix_cache_hit_rate"]
        .as_str()
        .map_or(String::new(), |s| format!(" ({s})"));
    format!(
        "Trace replay: {} requests of {} at speed {}, lengths scaled by {}\n\
         Send lateness p50 / p99 (ms): {:.3} / {:.3}\n\
         Usage differing from the trace (prompt / output / unreported): {} / {} / {}\n\
         Prefix reuse the trace implies / the server reports: {} / {}{source}\n",
        trace["requests"],
        trace["path"].as_str().unwrap_or_default(),
        trace["speed"],
        trace["length_scale"],
        get("p50_send_lateness_ms"),
        get("p99_send_lateness_ms"),
        get("prompt_tokens_mismatched"),
        get("output_tokens_mismatched"),
        get("usage_unreported"),
        percent("implied_prefix_reuse"),
        percent("server_prefix_cache_hit_rate"),
    )
}

fn latency_table(report: &ProbeReport) -> String {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    let mut head = vec!["latency (ms)".to_string()];
    head.extend(STATS.iter().map(|s| s.to_string()));
    table.set_header(head);
    let mut rows = 0;
    for latency in Latency::ALL {
        let values: Option<Vec<String>> = STATS
            .iter()
            .map(|stat| {
                report
                    .metrics
                    .get(&latency.key(stat))
                    .map(|v| format!("{v:.2}"))
            })
            .collect();
        let Some(values) = values else { continue };
        let mut row = vec![latency.to_string()];
        row.extend(values);
        table.add_row(row);
        rows += 1;
    }
    let mut out = String::new();
    if rows > 0 {
        let _ = writeln!(out, "{table}");
    }
    if report.json.get("unavailable_metrics").is_some() {
        out.push_str("TTFT, queued TTFT, TPOT and ITL: unavailable (responses not streamed)\n");
    }
    out
}

fn error_table(report: &ProbeReport) -> String {
    let Some(errors) = report
        .json
        .get("errors_by_kind")
        .and_then(|e| e.as_object())
    else {
        return String::new();
    };
    if errors.is_empty() {
        return String::new();
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(vec!["error", "count", "example"]);
    for (kind, tally) in errors {
        let count = tally
            .get("count")
            .map(ToString::to_string)
            .unwrap_or_default();
        let example = tally
            .get("example")
            .and_then(|e| e.as_str())
            .unwrap_or_default();
        table.add_row(vec![kind.as_str(), count.as_str(), example]);
    }
    format!("{table}\n")
}
