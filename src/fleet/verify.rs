//! `plan --verify N`: the N best plans run for real, one replica each on its own devices,
//! through the study's executor, each under its share of the load; re-ranked on what was
//! measured, with how far the twin was from each.

use super::export::planned_space;
use super::figures::{compare, Figures, Plan};
use super::search::PlanRequest;
use super::workload::replica_workload;
use crate::exec::{Assignment, Backends, EarlyStops, HttpProber, Silent, StopFlag, TrialRun};
use crate::launch::ProcessLauncher;
use crate::record::{InFlight, Params, TrialId, TrialKind};
use crate::space::{Feasibility, StudySpec};
use anyhow::Context as _;
use std::path::Path;

/// A plan run for real.
#[derive(Clone, Debug)]
pub struct Verified {
    /// Its place in the twin's ranking, from 1.
    pub twin_rank: usize,
    /// What the twin predicted.
    pub predicted: Plan,
    /// What one replica measured, scaled to the plan's replicas, judged by the same SLOs.
    pub measured: Plan,
}

impl Verified {
    /// How far the twin was from the measurement, in percent of the measured value: tokens/s
    /// per GPU, tokens/s per user and p99 TTFT (`None` where either side has no figure).
    pub fn errors_pct(&self) -> [(&'static str, Option<f64>); 3] {
        let pair = |f: fn(&Figures) -> f64| {
            let p = f(self.predicted.figures.as_ref().ok()?);
            let m = f(self.measured.figures.as_ref().ok()?);
            (m != 0.0).then(|| (p - m) / m * 100.0)
        };
        [
            ("tokens/s per GPU", pair(|f| f.per_gpu)),
            ("tokens/s per user", pair(|f| f.per_user)),
            ("p99 TTFT", pair(|f| f.ttft_p99_ms)),
        ]
    }
}

/// Run the `top` best served plans of `plans` (ranked, searched on `space` for `request`) for
/// real, in folders under `dir`, stopped early by `stop`; returns them re-ranked on what was
/// measured by the request's ranking, judged by its SLOs.
pub fn verify(
    space: &StudySpec,
    plans: &[Plan],
    request: &PlanRequest,
    top: usize,
    dir: &Path,
    stop: StopFlag,
) -> anyhow::Result<Vec<Verified>> {
    let prober = HttpProber::new()?;
    let launcher = ProcessLauncher::new(crate::engine::log_patterns());
    // A simulator that runs `--time-scale` wall seconds per modelled second is measured on its
    // clock; its figures are brought back to the modelled engine's.
    let scale = crate::prior::twin::time_scale(space);
    let mut verified = Vec::new();
    let served = plans.iter().enumerate().filter(|(_, p)| p.figures.is_ok());
    for (i, plan) in served.take(top) {
        let mut run_space = planned_space(space, plan);
        run_space.probe = replica_workload(&space.probe, &request.load, plan.shape.replicas);
        let objective = crate::exec::objective(&run_space)?;
        let engine = crate::engine::for_kind(run_space.engine.kind);
        let backends: Backends = Backends {
            check: &run_space,
            engine,
            launcher: &launcher,
            prober: &prober,
            observer: &Silent,
        };
        let folder = dir.join(format!("verify-{}", i + 1));
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("cannot create {}", folder.display()))?;
        let early = EarlyStops {
            slo: false,
            server: false,
        };
        let executor = crate::exec::build(
            &run_space,
            &folder,
            backends,
            &objective,
            stop.clone(),
            early,
        )?;
        let params = run_space
            .resolve(&Params::new())
            .map_err(|r| anyhow::anyhow!("plan {}: {}", i + 1, r.message))?;
        let in_flight = InFlight {
            id: TrialId {
                number: 0,
                kind: TrialKind::Search,
            },
            params,
        };
        let assignment = Assignment {
            slot: 0,
            devices: (0..plan.shape.tp).collect(),
        };
        let record = match executor.run(in_flight, &assignment)? {
            TrialRun::Done(record) => record,
            TrialRun::Interrupted => anyhow::bail!("stopped while verifying plan {}", i + 1),
            TrialRun::Lost(why) => anyhow::bail!("plan {}: its run was lost: {why}", i + 1),
        };
        let figures = if record.metrics.is_empty() {
            Err(crate::export::detail(&record.outcome))
        } else {
            let metrics = crate::prior::twin::on_the_clock(record.metrics.clone(), 1.0 / scale);
            Ok(Figures::of(metrics, plan.shape.tp, plan.shape.replicas))
        };
        verified.push(Verified {
            twin_rank: i + 1,
            predicted: plan.clone(),
            measured: Plan::judged(plan.shape.clone(), figures, &request.slos),
        });
    }
    verified.sort_by(|a, b| compare(&a.measured, &b.measured, request.ranking));
    Ok(verified)
}
