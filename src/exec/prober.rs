//! The probe behind a trait, so the loop runs against fakes in tests and `probe::run` for real.

use crate::probe::{ProbeReport, RunOptions, Target, WorkloadSpec};

/// Runs the probe workload against a serving target.
pub trait Prober: Sync {
    /// Drive `workload` against `target` until it ends or `options.prune` stops it.
    fn probe(
        &self,
        target: &Target,
        workload: &WorkloadSpec,
        options: RunOptions,
    ) -> anyhow::Result<ProbeReport>;

    /// The body of the server's `/metrics` (Prometheus text). Called from a watcher thread
    /// while `probe` runs. Probers that cannot read one say so with an error; the trial then
    /// records no server section.
    fn metrics_text(&self, target: &Target) -> anyhow::Result<String> {
        let _ = target;
        anyhow::bail!("this prober reads no server metrics")
    }
}

/// The real probe ([`crate::probe::run`]) on its own tokio runtime.
pub(crate) struct HttpProber {
    runtime: tokio::runtime::Runtime,
}

impl HttpProber {
    /// A prober on the probe's own runtime ([`crate::probe::runtime`]).
    pub fn new() -> anyhow::Result<HttpProber> {
        let runtime = crate::probe::runtime()
            .map_err(|e| anyhow::anyhow!("cannot start the probe runtime: {e}"))?;
        Ok(HttpProber { runtime })
    }
}

impl Prober for HttpProber {
    fn probe(
        &self,
        target: &Target,
        workload: &WorkloadSpec,
        options: RunOptions,
    ) -> anyhow::Result<ProbeReport> {
        self.runtime
            .block_on(crate::probe::run(target, workload, options))
    }

    /// On a runtime of its own, so scrapes never wait on (or delay) the probe's.
    fn metrics_text(&self, target: &Target) -> anyhow::Result<String> {
        crate::probe::runtime()?.block_on(crate::probe::server::metrics_text(target))
    }
}
