//! The probe, bracketed by reads of the engine's own output-token counter, so every trial
//! records what the server says it generated next to what the probe counted.

use super::observer::StudyObserver;
use super::prober::Prober;
use crate::probe::{ProbeReport, RunOptions, Target, WorkloadSpec};

/// Metric: the increase of the engine's output-token counter over the whole probe run
/// (warm-up included; compare with `total_output_tokens + warmup_output_tokens`).
pub(crate) const SERVER_OUTPUT_TOKENS: &str = "server_output_tokens";

/// Runs `workload` with `prober`; when `counter` names the engine's output-token counter and
/// it can be read before and after, adds `SERVER_OUTPUT_TOKENS` to the metrics. A counter
/// that cannot be read is a warning to `observer` and leaves the metric out.
pub fn probe(
    prober: &dyn Prober,
    observer: &dyn StudyObserver,
    counter: Option<&str>,
    target: &Target,
    workload: &WorkloadSpec,
    options: RunOptions,
) -> anyhow::Result<ProbeReport> {
    let read = |name: &str| {
        prober
            .server_counter(target, name)
            .map_err(|e| {
                observer.warning(&format!("cannot read the server counter `{name}`: {e:#}"));
            })
            .ok()
    };
    let before = counter.and_then(|name| read(name).map(|value| (name, value)));
    let mut report = prober.probe(target, workload, options)?;
    if let Some((name, before)) = before {
        if let Some(after) = read(name) {
            report
                .metrics
                .insert(SERVER_OUTPUT_TOKENS.into(), after - before);
        }
    }
    Ok(report)
}
