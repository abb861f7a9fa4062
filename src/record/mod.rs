//! What a trial is: parameter values, latency metrics and SLOs, failure classes, typed SLO
//! violations and the trial record itself. The bottom of the module graph: it imports nothing
//! of the crate, so every other module may share these types.

mod failure;
mod latency;
pub mod metric;
mod server;
mod slo;
mod trial;
mod value;
mod violation;

pub use failure::FailureKind;
pub use latency::Latency;
pub use server::{ServerSignal, ServerStats};
pub use slo::SloOp;
pub use slo::{parse_list as parse_slos, Slo};
pub use trial::{InFlight, Outcome, TrialId, TrialKind, TrialRecord, MIN_GAIN, Z95};
pub use value::{params_of, Params, Value};
pub use violation::Violation;

use std::collections::BTreeMap;

/// Flat metric name → value, names as in `vllm bench serve`: those of [`metric`] and the
/// latency statistics of [`Latency::key`] (`mean_ttft_ms`, `p99_tpot_ms`, ...).
pub type MetricMap = BTreeMap<String, f64>;
