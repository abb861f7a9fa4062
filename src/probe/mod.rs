//! The probe: a fixed workload driven against an OpenAI-compatible streaming API, and its metrics.

mod chunk;
mod conn;
pub(crate) mod csv_out;
pub mod dataset;
mod exchange;
mod http;
mod http1;
mod limits;
mod load;
pub(crate) mod loadsearch;
pub mod metrics;
mod plan;
pub mod precision;
pub mod preflight;
mod progress;
mod record;
mod report;
mod runner;
pub(crate) mod server;
pub mod spread;

mod sse;
pub mod stamped;
pub mod steady;
pub(crate) mod summary;
mod watcher;
pub mod workload;

pub(crate) use load::StageClock;
pub use progress::ProbeObserver;
pub use record::ErrorKind;
pub(crate) use record::{RequestError, RequestRecord, TokenSource};

pub use precision::Precision;
pub use workload::{Api, DatasetSpec, LoadSpec, SharedPrefix, WorkloadSpec};

use crate::record::{Latency, MetricMap};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Where the probe sends requests.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// Base URL, e.g. `http://127.0.0.1:8000`.
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Bearer token (never printed or written).
    pub api_key: Option<String>,
}

/// A snapshot of a run in progress, handed to the pruning hook.
#[derive(Clone, Debug, Default)]
pub struct LiveStats {
    /// Measured requests the run will send in total (0 when duration-bound).
    pub planned: u64,
    /// Output tokens the measured requests may generate at most (the sum of their
    /// `max_tokens`; 0 when duration-bound).
    pub planned_output_tokens: u64,
    /// Measured requests finished (successfully or not).
    pub finished: u64,
    /// Measured requests that failed.
    pub failed: u64,
    /// Per-request latencies (ms) of successful requests so far; only those with one value
    /// per request (`Latency::per_request`) are kept.
    pub latencies_ms: BTreeMap<Latency, Vec<f64>>,
    /// Time since the first measured send.
    pub elapsed: Duration,
}

impl LiveStats {
    /// The values of `latency` so far, in ms (none for ITL).
    pub fn samples(&self, latency: Latency) -> &[f64] {
        self.latencies_ms.get(&latency).map_or(&[], Vec::as_slice)
    }
}

/// Why a run ended before its planned end.
#[derive(Clone, Debug, PartialEq)]
pub enum EarlyStop {
    /// The caller asked it to stop (e.g. the study was interrupted); its numbers mean nothing.
    Interrupted,
    /// The run can no longer meet an SLO; the explanation.
    Pruned(String),
}

impl std::fmt::Display for EarlyStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EarlyStop::Interrupted => f.write_str("interrupted"),
            EarlyStop::Pruned(reason) => f.write_str(reason),
        }
    }
}

/// Decides from a snapshot whether to stop early; returns why when it should.
pub(crate) type PruneHook = Arc<dyn Fn(&LiveStats) -> Option<EarlyStop> + Send + Sync>;

/// Options of one probe run.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Watches the measured phase (e.g. a progress bar); `None` shows nothing.
    pub progress: Option<Arc<dyn ProbeObserver>>,
    /// Called periodically; a `Some(why)` stops the run.
    pub prune: Option<PruneHook>,
}

/// The result of one probe run.
#[derive(Clone, Debug, Default)]
pub struct ProbeReport {
    /// Summary metrics.
    pub metrics: MetricMap,
    /// The same metrics for each stage of a staged load, in order (empty otherwise).
    pub stages: Vec<MetricMap>,
    /// Set when the pruning hook stopped the run.
    pub pruned: Option<EarlyStop>,
    /// The full report as JSON (vLLM-compatible field names), written to `probe.json`.
    pub json: serde_json::Value,
}

/// Run `workload` against `target`.
pub async fn run(
    target: &Target,
    workload: &WorkloadSpec,
    options: RunOptions,
) -> anyhow::Result<ProbeReport> {
    runner::run(target, workload, options, &mut |_| {}).await
}

/// Like [`run`], and hands every measured request to `on_record` as it finishes (e.g. to
/// write one CSV row per request).
pub(crate) async fn run_with_records(
    target: &Target,
    workload: &WorkloadSpec,
    options: RunOptions,
    on_record: &mut (dyn FnMut(&RequestRecord) + Send),
) -> anyhow::Result<ProbeReport> {
    runner::run(target, workload, options, on_record).await
}

/// The runtime probes run on: a single thread. Each event costs least that way (no wakeups
/// across threads), and a late wakeup does not bend timings (arrival times come from the
/// kernel), so a second thread would mostly compete with a server on the same machine.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
