//! A search through the study's own planner over a virtual executor: each trial the planner
//! runs is evaluated by the scenario in virtual time. The benchmark thus measures the policy
//! the product runs.

use super::Scenario;
use anyhow::Context;
use infertune::record::{InFlight, Outcome, Params, TrialRecord};
use infertune::sampler::Sampler;
use infertune::space::DevicesPerTrial;
use infertune::study::plan::{Decision, PlanSpec, Planner, StudyState};

/// One search: its records and the best value after each.
pub(crate) struct Searched {
    /// `best[t]`: the best feasible value among trials `0..=t`.
    pub best: Vec<Option<f64>>,
    /// The trials.
    pub records: Vec<TrialRecord>,
}

/// `trials` trials of `sampler` on `scenario`, planned by the study's planner (no baseline, no
/// re-validation), the `expert` config first, with up to `slots` trials in flight at once in
/// virtual time: a trial takes a unit of time give or take a third (seeded by its number), so
/// trials finish out of order as on real servers; the planner proposes with the trials in
/// flight pending, as the dispatch loop asks it. `best[t]` follows the order trials finish in.
pub(crate) fn search(
    scenario: &Scenario,
    sampler: &mut dyn Sampler,
    trials: usize,
    expert: Option<Params>,
    slots: usize,
) -> anyhow::Result<Searched> {
    let slots = slots.max(1);
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
    // Trials in flight: when each finishes, what it is, and its record once it has.
    let mut flying: Vec<(f64, InFlight, TrialRecord)> = Vec::new();
    let mut now = 0.0;
    let all_slots: Vec<u32> = (0..slots as u32).collect();
    loop {
        let in_flight: Vec<InFlight> = flying.iter().map(|f| f.1.clone()).collect();
        let free = &all_slots[..slots - flying.len()];
        let decision = if free.is_empty() {
            Decision::Wait
        } else {
            planner.next(&StudyState {
                records: &out.records,
                in_flight: &in_flight,
                free_slots: free,
                slots: slots as u32,
                budget_left: None,
            })
        };
        let t = out.records.len();
        let done = match decision {
            Decision::Run(planned) => {
                let number = planned.id.number;
                let record = scenario.trial(number as usize, planned.params.clone());
                let id = planned.id;
                flying.push((
                    now + duration(number),
                    InFlight {
                        id,
                        params: planned.params,
                    },
                    record,
                ));
                continue;
            }
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
            Decision::Wait | Decision::Done if !flying.is_empty() => {
                let first = (0..flying.len())
                    .min_by(|&a, &b| flying[a].0.total_cmp(&flying[b].0))
                    .expect("a trial in flight");
                let (at, _, record) = flying.swap_remove(first);
                now = at;
                record
            }
            Decision::Wait => anyhow::bail!("the planner waits with nothing in flight"),
            Decision::Done => return Ok(out),
        };
        let best = out.best.last().copied().flatten();
        let value = done.value.filter(|_| done.is_feasible());
        // The scenarios maximise their objective.
        out.best.push(match (best, value) {
            (Some(b), Some(v)) => Some(b.max(v)),
            (b, v) => b.or(v),
        });
        out.records.push(done);
    }
}

/// Virtual run time of trial `number`: 1 give or take a third, the same for every search.
fn duration(number: u32) -> f64 {
    let mut x = u64::from(number).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
    2.0 / 3.0 + unit * 2.0 / 3.0
}
