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

    /// The server's own counter `name` (from its `/metrics`). Probers that cannot read one
    /// say so with an error; the trial then records no server-side count.
    fn server_counter(&self, target: &Target, name: &str) -> anyhow::Result<f64> {
        let _ = target;
        anyhow::bail!("this prober reads no server counters (asked for `{name}`)")
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

    fn server_counter(&self, target: &Target, name: &str) -> anyhow::Result<f64> {
        self.runtime
            .block_on(crate::probe::server_counter::read_counter(target, name))
    }
}
