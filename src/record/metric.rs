//! The names of a probe run's whole-run metrics, one list for the whole crate; the latency
//! statistics are named by [`super::Latency::key`]. The names follow `vllm bench serve` and
//! are the keys of bench JSON and of `metric_…` CSV columns, so they never change.

/// Requests that completed.
pub const COMPLETED: &str = "completed";
/// Requests that failed (errors, timeouts and partial streams).
pub const FAILED: &str = "failed";
/// Failed requests whose stream stopped part way.
pub const INCOMPLETE: &str = "incomplete";
/// Failed requests over finished ones.
pub const ERROR_RATE: &str = "error_rate";
/// Last completion − first send, in seconds.
pub const DURATION_S: &str = "duration_s";
/// Prompt tokens of the completed requests.
pub const TOTAL_INPUT_TOKENS: &str = "total_input_tokens";
/// Output tokens of the completed requests.
pub const TOTAL_OUTPUT_TOKENS: &str = "total_output_tokens";
/// Output tokens of the requests whose stream stopped part way.
pub const INCOMPLETE_OUTPUT_TOKENS: &str = "incomplete_output_tokens";
/// Output tokens of the warm-up requests (not part of any other metric), so the probe's
/// tokens can be reconciled with a server's own counter over the whole run.
pub const WARMUP_OUTPUT_TOKENS: &str = "warmup_output_tokens";
/// Completed requests per second.
pub const REQUEST_THROUGHPUT: &str = "request_throughput";
/// Output tokens per second.
pub const OUTPUT_THROUGHPUT: &str = "output_throughput";
/// Prompt and output tokens per second.
pub const TOTAL_TOKEN_THROUGHPUT: &str = "total_token_throughput";
/// Requests meeting every SLO per second (only when SLOs were given).
pub const REQUEST_GOODPUT: &str = "request_goodput";
/// Output tokens per second over the steady-state window, each request's spread over its life (see
/// `probe::steady`).
pub const STEADY_OUTPUT_THROUGHPUT: &str = "steady_output_throughput";
/// Seconds of the steady-state window.
pub const STEADY_WINDOW_S: &str = "steady_window_s";
/// Accelerators the trial's launch took (`launch.devices_per_trial` for its config), so an
/// objective can be per device: `output_throughput / devices`.
pub const DEVICES: &str = "devices";
/// 1 when a probe with `precision` met its interval's target before its ceiling, else 0.
pub const PRECISION_REACHED: &str = "precision_reached";

/// The name of the half-width of the 95% interval of `metric` within the run.
pub fn half_width_of(metric: &str) -> String {
    format!("{metric}_hw95")
}
