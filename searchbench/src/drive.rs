//! A search through the study's own planner over a virtual executor: each trial the planner
//! runs is evaluated by the scenario in virtual time. The benchmark thus measures the policy
//! the product runs.

use super::Scenario;
use anyhow::Context;
use infertune::record::{Outcome, Params, TrialRecord};
use infertune::sampler::Sampler;
use infertune::space::DevicesPerTrial;
use infertune::study::plan::{Decision, PlanSpec, Planner, Situation};

/// One search: its records and the best value after each.
pub(crate) struct Searched {
    /// `best[t]`: the best feasible value among trials `0..=t`.
    pub best: Vec<Option<f64>>,
    /// The trials.
    pub records: Vec<TrialRecord>,
}

/// `trials` trials of `sampler` on `scenario`, planned by the study's planner (no baseline, no
/// re-validation), the `expert` config first.
pub(crate) fn search(
    scenario: &Scenario,
    sampler: &mut dyn Sampler,
    trials: usize,
    expert: Option<Params>,
) -> anyhow::Result<Searched> {
    let spec = PlanSpec {
        trials: u32::try_from(trials).unwrap_or(u32::MAX),
        baseline: None,
        enqueue: expert.into_iter().collect(),
        revalidate_top: 0,
        repeats: 0,
        devices_per_trial: DevicesPerTrial::Count(0),
        intensify: false,
    };
    let mut planner = Planner::new(spec, sampler, &*scenario.space, Vec::new());
    let mut out = Searched {
        best: Vec::with_capacity(trials),
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
        let record = match planner.next(&now) {
            Decision::Run(planned) => scenario.trial(planned.id.number as usize, planned.params),
            Decision::Refuse {
                id,
                params,
                rule,
                message,
            } => TrialRecord::of(id, params, Outcome::Rejected { rule, message }),
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
        out.records.push(record);
    }
}
