//! Promotion in place (`search.screening.promote_in_place`): a screening trial runs the full
//! probe with a checkpoint at its screening share, judged there against the gate of the rung
//! as it stood when the trial started, and goes on with the rest of the probe on the same
//! server when it passes.

use super::score::Objective;
use super::screening::{checkpoint_after, Gate};
use super::trial::{judge_probe, TrialId, TrialRunner};
use crate::probe::{Checkpoint, ProbeReport};
use crate::record::{Outcome, Params, TrialRecord};
use std::sync::{Arc, Mutex};
use std::time::Instant;

impl TrialRunner<'_> {
    /// Measured requests after which the screening run `id` reaches its checkpoint, when it is
    /// the first part of the full probe: it continues, and the objective is measured at a fixed
    /// load of a counted length; `None` otherwise (it then runs the screening probe alone).
    pub(super) fn checkpoint_after(&self, id: &TrialId) -> Option<u64> {
        let fraction = id.fidelity.filter(|_| id.continues)?;
        if self.objective.spec().load_search.is_some() {
            return None;
        }
        checkpoint_after(&self.space.probe, fraction)
    }

    /// The checkpoint after `after` measured requests: the run goes on when the report so far,
    /// judged as a screening run, passes `gate`; the moment it is judged goes to `judged_at`.
    pub(super) fn checkpoint(
        &self,
        after: u64,
        gate: Gate,
        judged_at: Arc<Mutex<Option<Instant>>>,
    ) -> anyhow::Result<Checkpoint> {
        let objective = Objective::new(self.objective.spec())?;
        Ok(Checkpoint {
            after,
            judge: Arc::new(move |report: &ProbeReport| {
                *judged_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                let judgement = judge_probe(&objective, &report.metrics);
                let screened = TrialRecord {
                    metrics: report.metrics.clone(),
                    score: judgement.score,
                    violations: judgement.violations,
                    ..TrialRecord::new(0, Params::new(), Outcome::Feasible)
                };
                gate.passes(objective.slos(), &screened)
            }),
        })
    }
}
