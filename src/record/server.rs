//! What the server itself reported during a trial's probe (its Prometheus `/metrics`), and why
//! a probe stopped on a server signal.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The server's own figures over one probe, each absent when the engine does not expose it.
/// Counters are increases over the probe (warm-up included); gauges are summarised over the
/// periodic scrapes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStats {
    /// Requests the scheduler preempted (evicted from the batch to free KV cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<f64>,
    /// Highest KV-cache usage seen, as a fraction (1 = full).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_usage_peak: Option<f64>,
    /// Mean KV-cache usage over the scrapes, as a fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_usage_mean: Option<f64>,
    /// Most requests seen waiting in the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_peak: Option<f64>,
    /// Mean number of requests running (the batch) over the scrapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_mean: Option<f64>,
    /// Prompt tokens (or blocks) the prefix cache served over those it was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_hit_rate: Option<f64>,
    /// Output tokens the server counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<f64>,
    /// Prompt tokens the server counted (engines that count only uncached ones say so in
    /// `names`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<f64>,
    /// Mean accelerator power over the probe, in watts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_mean_w: Option<f64>,
    /// Accelerator energy over the probe, in joules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    /// Highest accelerator memory in use, in MiB (summed over the slot's devices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accel_memory_used_peak_mib: Option<f64>,
    /// Mean accelerator utilisation, as a fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accel_utilization_mean: Option<f64>,
    /// Scrapes of `/metrics` the figures come from.
    #[serde(default)]
    pub scrapes: u32,
    /// Where each figure came from: field name → the engine's metric name(s) or the tool.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, String>,
    /// Set when the probe was stopped on a server signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<ServerSignal>,
}

/// A server-side reason to stop a probe before its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerSignal {
    /// Preemptions kept climbing while the waiting queue grew: the config cannot hold the load.
    Thrashing,
    /// The KV cache stayed full while requests waited.
    KvCacheFull,
    /// The server logged a fatal error.
    FatalLog,
}

impl ServerSignal {
    /// True when the config itself broke (a region samplers should avoid like a crash).
    pub fn is_fatal(self) -> bool {
        self == ServerSignal::FatalLog
    }
}

impl fmt::Display for ServerSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerSignal::Thrashing => "thrashing",
            ServerSignal::KvCacheFull => "kv-cache-full",
            ServerSignal::FatalLog => "fatal-log",
        })
    }
}
