//! A search through the study's own planner and dispatch loop over the fake executor: each
//! trial the planner runs is answered by the scenario in virtual time. The benchmark thus
//! measures the policy the product runs, slots and trials in flight included.

use super::Scenario;
use infertune::exec::{FakeExecutor, Landscape, StopFlag};
use infertune::record::{InFlight, Params, TrialRecord};
use infertune::sampler::Sampler;
use infertune::space::DevicesPerTrial;
use infertune::study::dispatch::{dispatch, KeptRecords};
use infertune::study::plan::{PlanSpec, Planner, StopReason};

/// One search: its records and the best value after each.
pub(crate) struct Searched {
    /// `best[t]`: the best feasible value among trials `0..=t`.
    pub best: Vec<Option<f64>>,
    /// The trials, in the order they finished.
    pub records: Vec<TrialRecord>,
}

/// `trials` trials of `sampler` on `scenario`, planned by the study's planner (no baseline, no
/// re-validation), the `first` configs first, dispatched by the study's loop over a fake
/// executor with `slots` slots: a trial takes its start-up and probe time give or take a third
/// (drawn from its number), so trials finish out of order as on real servers, and the planner
/// proposes with the trials in flight pending. `best[t]` follows the order trials finish in.
pub(crate) fn search(
    scenario: &Scenario,
    sampler: &mut dyn Sampler,
    trials: usize,
    first: Vec<Params>,
    slots: usize,
) -> anyhow::Result<Searched> {
    let spec = PlanSpec {
        trials: u32::try_from(trials).unwrap_or(u32::MAX),
        baseline: None,
        enqueue: first,
        revalidate_top: 0,
        repeats: 0,
        devices_per_trial: DevicesPerTrial::Count(0),
        intensify: false,
        verdict: None,
    };
    let mut planner = Planner::new(spec, sampler, &*scenario.space, Vec::new());
    let executor = FakeExecutor::new(scenario, u32::try_from(slots.max(1)).unwrap_or(1));
    let mut kept = KeptRecords::default();
    let stopped = dispatch(&mut planner, &executor, &StopFlag::default(), &mut kept)?;
    anyhow::ensure!(
        stopped == StopReason::TrialsDone,
        "the search stopped early: {stopped}"
    );
    let mut best: Vec<Option<f64>> = Vec::with_capacity(kept.records.len());
    for record in &kept.records {
        let value = record.value.filter(|_| record.is_feasible());
        let last = best.last().copied().flatten();
        // The scenarios maximise their objective.
        best.push(match (last, value) {
            (Some(b), Some(v)) => Some(b.max(v)),
            (b, v) => b.or(v),
        });
    }
    Ok(Searched {
        best,
        records: kept.records,
    })
}

impl Landscape for Scenario {
    fn answer(&self, trial: &InFlight) -> TrialRecord {
        self.trial(trial.id.number as usize, trial.params.clone())
    }
}
