//! Metrics of a probe run. Definitions:
//!
//! * **token-bearing event**: an SSE chunk with a non-empty `content`, `text`,
//!   `reasoning_content`/`reasoning` or `tool_calls`. Role-only, usage-only and finish-only
//!   chunks and `[DONE]` are not. Every event is timestamped (monotonic clock) when its first
//!   byte arrives, before it is parsed.
//! * **TTFT** (`ttft`): first token-bearing event − the moment the request write starts (on
//!   an open, ready connection). **Queued TTFT** (`ttft_queued`): first token-bearing event −
//!   the request's scheduled send time (open loop; the moment a worker was free in a closed
//!   loop), so client-side queueing is not hidden (coordinated omission).
//! * **E2E latency** (`e2el`): last token-bearing event − write start; not `[DONE]`, not the
//!   usage chunk. Without any token-bearing event (non-streamed, or empty output): the end of
//!   the response − write start.
//! * **N output tokens**: the server's `usage.completion_tokens` (every streamed request asks
//!   for `stream_options.include_usage`), else the generated text counted with the dataset's
//!   tokenizer, else the number of token-bearing events; the source is recorded
//!   (`output_tokens_source`).
//! * **TPOT** (`tpot`): (E2E − TTFT) / (N − 1) per request with N ≥ 2.
//! * **ITL** (`itl`): every gap between consecutive token-bearing events, pooled over requests.
//! * **duration** (`duration_s`): last request end − first request start (measured requests;
//!   warmup excluded).
//! * **throughputs**: successful requests (`request_throughput`), their output tokens
//!   (`output_throughput`) and their input + output tokens (`total_token_throughput`), each
//!   divided by the duration.
//! * **steady-state throughput** (`steady_output_throughput`, streamed runs): output tokens
//!   counted as they streamed (token-bearing events, scaled by the completed requests' usage
//!   per event) over the window from the first completion to the last send (`steady_window_s`),
//!   with the half-width of its 95% interval from ten batch means
//!   (`steady_output_throughput_hw95`; see `probe::steady`). With `precision:` the run ends on
//!   that interval and `output_throughput` is this figure (`output_throughput_hw95`,
//!   `precision_reached`).
//! * **goodput** (`request_goodput`): successful requests meeting every per-request latency
//!   SLO (ttft, ttft_queued, tpot, e2el: the request's value; itl: its largest gap) / duration.
//!   Run-level SLOs (error rate, throughputs) do not enter goodput.
//! * **failed**: requests that did not end in a complete response, counted by kind (`http`,
//!   `connect`, `timeout`, `stall`, `malformed`, `disconnect`, `stream_error`); `incomplete` are
//!   failed requests that had delivered tokens (`incomplete_output_tokens`, not in throughput).
//!   `error_rate` = failed / (completed + failed).
//! * Statistics of each latency: exact mean, population std, min and max; median and
//!   p50/p90/p95/p99 from an HDR histogram (3 significant digits). Without streaming, TTFT,
//!   queued TTFT, TPOT and ITL are unavailable and left out, never reported as latency.
//! * **replay fidelity** (trace replay only): `{stat}_send_lateness_ms`, write start − the
//!   request's time in the trace (divided by the speed), over every measured request;
//!   `prompt_tokens_mismatched` / `output_tokens_mismatched`, successful requests whose
//!   `usage.prompt_tokens` / `usage.completion_tokens` differ from the trace's lengths;
//!   `usage_unreported`, successful requests without usage to check.

mod collector;
mod stats;

pub(crate) use collector::{Collector, OUTPUT_MISMATCHED, PROMPT_MISMATCHED, USAGE_UNREPORTED};
pub use stats::{LatencyStats, Summary, PERCENTILES};
