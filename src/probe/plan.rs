//! A run's load, checked: its shape (closed or open loop) and its limits.

use super::load::Shape;
use super::workload::{DatasetSpec, LoadSpec, WorkloadSpec};
use anyhow::{bail, Result};
use std::time::Duration;

/// A run's load, checked.
pub(crate) struct Plan {
    pub shape: Shape,
    pub requests: Option<u32>,
    pub duration: Option<Duration>,
}

impl Plan {
    /// Checks the load description of `workload`.
    pub fn new(workload: &WorkloadSpec) -> Result<Self> {
        let load = workload
            .measured_load(|precision| precision.max)
            .map_err(anyhow::Error::msg)?;
        load.validate().map_err(anyhow::Error::msg)?;
        let shape = match &load {
            LoadSpec::Closed { concurrency, .. } => Shape::Closed {
                concurrency: *concurrency,
            },
            LoadSpec::Open {
                rate,
                burstiness,
                max_concurrency,
                ..
            } => Shape::Open {
                rate: *rate,
                burstiness: *burstiness,
                max_concurrency: *max_concurrency,
                seed: workload.seed,
            },
            LoadSpec::Trace { max_concurrency } => Shape::Trace {
                max_concurrency: *max_concurrency,
            },
            LoadSpec::Stages {
                stages,
                arrivals,
                max_concurrency,
            } => Shape::Stages {
                stages: stages.clone().into(),
                arrivals: *arrivals,
                max_concurrency: *max_concurrency,
                seed: workload.seed,
            },
        };
        let replays = matches!(workload.dataset, DatasetSpec::Trace { .. });
        let trace_load = matches!(workload.load, LoadSpec::Trace { .. });
        if replays && !trace_load {
            bail!(
                "a trace dataset is replayed at its own arrival times: use `load: {{kind: trace}}` \
                 (optionally with max_concurrency)"
            );
        }
        if trace_load && !replays {
            bail!(
                "`load: {{kind: trace}}` needs a trace dataset (`dataset: {{kind: trace, ...}}`)"
            );
        }
        let (requests, duration) = load.limits();
        Ok(Plan {
            shape,
            requests,
            duration,
        })
    }

    /// Most requests in flight at once, when bounded.
    pub(crate) fn max_in_flight(&self) -> Option<u32> {
        match self.shape {
            Shape::Closed { concurrency } => Some(concurrency),
            Shape::Open {
                max_concurrency, ..
            }
            | Shape::Stages {
                max_concurrency, ..
            }
            | Shape::Trace { max_concurrency } => max_concurrency,
        }
    }
}
