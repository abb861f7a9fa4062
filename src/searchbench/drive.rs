//! A search through the study's own planner over a virtual executor: each trial the planner
//! runs is evaluated by the scenario in virtual time, its start-up and probe seconds counted,
//! and (with a pruner) its probe stopped at the first checkpoint where it is behind the others,
//! as a study's probe stops. The benchmark thus measures the policy the product runs.

use super::Scenario;
use crate::probe::{LoadSpec, WorkloadSpec};
use crate::record::{Intermediate, Outcome, TrialRecord};
use crate::sampler::Sampler;
use crate::score::judge_probe;
use crate::space::DevicesPerTrial;
use crate::study::plan::behind::{PercentilePruner, CHECKPOINTS};
use crate::study::plan::{Decision, PlanSpec, Planned, Planner, Situation};
use anyhow::Context;

/// One search: its records and what it cost.
pub(crate) struct Searched {
    /// `best[t]`: the best feasible value among trials `0..=t`.
    pub best: Vec<Option<f64>>,
    /// Start-up plus probe seconds spent by the end of each trial.
    pub seconds: Vec<f64>,
    /// The trials.
    pub records: Vec<TrialRecord>,
}

/// `trials` trials of `sampler` on `scenario`, planned by the study's planner (no baseline, no
/// re-validation), pruned by `pruner` where given.
pub(crate) fn search(
    scenario: &Scenario,
    sampler: &mut dyn Sampler,
    trials: usize,
    pruner: Option<PercentilePruner>,
) -> anyhow::Result<Searched> {
    let spec = PlanSpec {
        trials: u32::try_from(trials).unwrap_or(u32::MAX),
        baseline: None,
        enqueue: Vec::new(),
        revalidate_top: 0,
        repeats: 0,
        devices_per_trial: DevicesPerTrial::Count(0),
        pruner,
    };
    let mut planner = Planner::new(spec, sampler, &*scenario.space, Vec::new());
    let mut out = Searched {
        best: Vec::with_capacity(trials),
        seconds: Vec::with_capacity(trials),
        records: Vec::with_capacity(trials),
    };
    loop {
        let now = Situation {
            records: &out.records,
            in_flight: &[],
            free_slots: &[0],
            slots: 1,
            budget_left: None,
        };
        let t = out.records.len();
        let (record, seconds) = match planner.next(&now) {
            Decision::Run(planned) => run(scenario, planned, pruner.as_ref()),
            Decision::Refuse {
                id,
                params,
                rule,
                message,
            } => (
                TrialRecord::of(id, params, Outcome::Rejected { rule, message }),
                0.0,
            ),
            Decision::Unplaceable { id, params, why } => {
                anyhow::bail!("trial {} of {params:?} cannot be placed: {why}", id.number)
            }
            Decision::Ended(end) => {
                return Err(anyhow::anyhow!("{end:?}")).with_context(|| format!("at trial {t}"))
            }
            Decision::Wait => anyhow::bail!("the planner waits with nothing in flight"),
            Decision::Done => return Ok(out),
        };
        let best = out.best.last().copied().flatten();
        let value = record.value.filter(|_| record.is_feasible());
        // The scenarios maximise their objective.
        out.best.push(match (best, value) {
            (Some(b), Some(v)) => Some(b.max(v)),
            (b, v) => b.or(v),
        });
        out.seconds
            .push(out.seconds.last().copied().unwrap_or(0.0) + seconds);
        out.records.push(record);
    }
}

/// Trial `planned` and its start-up plus probe seconds: stopped at the first of its bars it
/// falls behind, as a pruned trial with the value it had there.
fn run(
    scenario: &Scenario,
    planned: Planned,
    pruner: Option<&PercentilePruner>,
) -> (TrialRecord, f64) {
    let number = planned.id.number as usize;
    let startup = scenario.evaluator.startup_seconds(&planned.params);
    let snapshots = match pruner {
        Some(_) => scenario.evaluator.snapshots(&planned.params, &CHECKPOINTS),
        None => Vec::new(),
    };
    let mut record = scenario.trial(number, planned.params.clone());
    record.intermediate = CHECKPOINTS
        .iter()
        .zip(&snapshots)
        .filter_map(|(&at, metrics)| {
            let value = judge_probe(&scenario.objective, metrics).value?;
            Some(Intermediate { at, value })
        })
        .collect();
    let probe = |r: &TrialRecord| r.metrics.get("duration_s").copied().unwrap_or(0.0);
    let behind = pruner.and_then(|p| p.behind(&planned.bars, &record.intermediate));
    let Some(bar) = behind else {
        let seconds = startup + probe(&record);
        return (record, seconds);
    };
    let at = CHECKPOINTS.iter().position(|&c| c == bar.at).unwrap_or(0);
    let metrics = snapshots[at].clone();
    let reached = record.intermediate[at].value;
    record.intermediate.truncate(at + 1);
    let seconds = startup + metrics.get("duration_s").copied().unwrap_or(0.0);
    let direction = scenario.objective.spec().direction;
    let reason = format!(
        "behind at {:.0}% of the probe: {} {reached:.2} against {:.2}",
        bar.at * 100.0,
        scenario.objective.spec().metric,
        bar.value
    );
    let pruned = TrialRecord {
        metrics,
        value: Some(reached),
        score: Some(direction.orient(reached)),
        violations: vec![crate::record::Violation::Pruned {
            reason: reason.clone(),
        }],
        outcome: Outcome::Pruned { reason },
        ..record
    };
    (pruned, seconds)
}

/// Measured requests of `workload`, when it counts them.
pub(crate) fn requests(workload: &WorkloadSpec) -> Option<u64> {
    match workload.load {
        LoadSpec::Closed { requests, .. } | LoadSpec::Open { requests, .. } => {
            requests.map(u64::from)
        }
    }
}
