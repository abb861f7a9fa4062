//! The planner: what a study runs next. A pure, synchronous policy (no threads, no I/O, no clock
//! of its own): given the records so far, the trials in flight, the free slots and the budget
//! left, it answers run this trial, record this refusal, wait, or done. It owns the baseline,
//! queued configs, sampler asks, re-runs after a resume, re-validation repeats, the budget and
//! every stop decision, each with its [`StopReason`]; the dispatch loop carries its decisions
//! out over an executor and tells it how trials ended.

mod intensify;
mod stop;

pub use crate::score::runs::measured_noise;
pub use stop::StopReason;

use super::observer::{EarlyEnd, Phase};
use crate::record::{InFlight, Params, TrialId, TrialKind, TrialRecord};
use crate::sampler::{with_pending, Sampler};
use crate::score::runs::{ConfigRuns, UNMEASURED_NOISE};
use crate::score::select;
use crate::space::objective::Direction;
use crate::space::overrides::baseline_config;
use crate::space::{DevicesPerTrial, Feasibility, StudySpec, VerdictTarget};

/// What the planner needs of a study's settings.
#[derive(Clone, Debug)]
pub struct PlanSpec {
    /// Search trials in all (the baseline included), re-validation repeats not counted.
    pub trials: u32,
    /// The engine-default config, run first; `None` without a baseline.
    pub baseline: Option<Params>,
    /// Configs to try first after the baseline, in order (each complete).
    pub enqueue: Vec<Params>,
    /// Configs re-validated at the end (the baseline too, when it met every SLO).
    pub revalidate_top: u32,
    /// Repeats per re-validated config.
    pub repeats: u32,
    /// Accelerators a trial of a config takes.
    pub devices_per_trial: DevicesPerTrial,
    /// Measure a challenger again before it is crowned while its lead is within the run-to-run
    /// noise (see [`measured_noise`]).
    pub intensify: bool,
    /// Once the repeats ran, measure the winner and the baseline again in turn while the
    /// gain's interval is wider than this; `None`: no runs beyond the repeats.
    pub verdict: Option<Verdict>,
}

/// The verdict's target, and the objective's direction to choose the winner as the report will.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    /// How well the gain must be known.
    pub target: VerdictTarget,
    /// The objective's direction.
    pub direction: Direction,
}

impl PlanSpec {
    /// The plan of the study of `space`; `experts` (complete configs) run after the queued ones.
    pub fn of(space: &StudySpec, experts: Vec<Params>) -> PlanSpec {
        let search = &space.search;
        let defaults = baseline_config(space);
        let mut enqueue: Vec<Params> = search
            .enqueue
            .iter()
            .map(|overlay| {
                let mut config = defaults.clone();
                config.extend(overlay.clone());
                config
            })
            .collect();
        for expert in experts {
            if !enqueue.contains(&expert) {
                enqueue.push(expert);
            }
        }
        PlanSpec {
            trials: search.trials,
            baseline: search.baseline.then(|| defaults.clone()),
            enqueue,
            revalidate_top: search.revalidate_top,
            repeats: search.repeats,
            devices_per_trial: space.placement.devices_per_trial.clone(),
            intensify: search.revalidate_top > 0 && search.repeats >= 2,
            verdict: search.verdict_target().map(|target| Verdict {
                target,
                direction: space.objective.direction,
            }),
        }
    }
}

/// The study as it stands when the planner is asked.
pub struct StudyState<'a> {
    /// Every journaled record.
    pub records: &'a [TrialRecord],
    /// The trials in flight.
    pub in_flight: &'a [InFlight],
    /// Slots free now, lowest first.
    pub free_slots: &'a [u32],
    /// Slots in all.
    pub slots: u32,
    /// Seconds of the time budget left; `None` without a budget.
    pub budget_left: Option<f64>,
}

/// A trial to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    /// Which trial, with its resolved config.
    pub trial: InFlight,
    /// Accelerators it takes.
    pub devices: u32,
    /// The slot it should run on, when it matters (a repeat away from its original's slot).
    pub slot: Option<u32>,
    /// Accelerators to keep it off where others are free (its original's).
    pub avoid: Vec<u32>,
}

/// What happens next.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Run this trial.
    Run(Planned),
    /// Record this trial without running it: the config is refused before launch.
    Refuse {
        /// Which trial, with its config.
        trial: InFlight,
        /// Constraint name or rule id.
        rule: String,
        /// Why.
        message: String,
    },
    /// Record this trial as an invalid config: its device count cannot be computed.
    Unplaceable {
        /// Which trial, with its config.
        trial: InFlight,
        /// Why.
        why: String,
    },
    /// The study ends a phase early; tell the user, then ask again.
    Ended(EarlyEnd),
    /// Nothing to start until a trial in flight finishes.
    Wait,
    /// Nothing more to run.
    Done,
}

/// Where the plan stands.
#[derive(Clone, Debug, PartialEq)]
enum Stage {
    Search,
    /// The search dispatches nothing more; re-validation starts once its trials finished.
    SearchEnded,
    /// Re-validation repeats left to run: the originals' numbers, one entry per repeat; once
    /// empty, rounds of the winner and the baseline while the verdict is not resolved.
    Revalidation(Vec<u32>),
    Finished,
}

/// The study's policy. Stateful only in what it has decided to end (a phase, the search, the
/// study) and in the trials lost in a row.
pub struct Planner<'a> {
    spec: PlanSpec,
    sampler: &'a mut dyn Sampler,
    check: &'a dyn Feasibility,
    /// Search trials an earlier run left in flight, to run again first.
    reruns: Vec<InFlight>,
    stage: Stage,
    /// Why the first phase that ended early did.
    ended_early: Option<StopReason>,
    /// Why the study stopped before its plan was through, once it did.
    stopped: Option<StopReason>,
    /// Trials lost in a row to failed Slurm jobs.
    lost_in_a_row: u32,
}

impl<'a> Planner<'a> {
    /// A planner of `spec` asking `sampler` for configs that `check` completes and checks;
    /// `reruns` are search trials an earlier run left in flight.
    pub fn new(
        spec: PlanSpec,
        sampler: &'a mut dyn Sampler,
        check: &'a dyn Feasibility,
        reruns: Vec<InFlight>,
    ) -> Planner<'a> {
        Planner {
            spec,
            sampler,
            check,
            reruns,
            stage: Stage::Search,
            ended_early: None,
            stopped: None,
            lost_in_a_row: 0,
        }
    }

    /// Trial `number`, left in flight by an earlier run, is recorded: it runs no more.
    pub fn forget_rerun(&mut self, number: u32) {
        self.reruns.retain(|r| r.id.number != number);
    }

    /// The sampler, for what it reports between trials.
    pub fn sampler(&self) -> &dyn Sampler {
        &*self.sampler
    }

    /// The next step given `now`.
    pub fn next(&mut self, now: &StudyState<'_>) -> Decision {
        if self.stopped.is_some() {
            return Decision::Done;
        }
        let decision = self.next_in_plan(now);
        if let Decision::Ended(end) = &decision {
            self.ended_early.get_or_insert(match end {
                EarlyEnd::BudgetSpent(_) => StopReason::BudgetSpent,
                EarlyEnd::SamplerFailed(error) => StopReason::SamplerFailed(error.clone()),
            });
        }
        decision
    }

    /// Why the study stops: once [`Planner::next`] answered `Done`, or a trial's end stopped it.
    pub fn stop_reason(&self) -> StopReason {
        self.stopped
            .clone()
            .or_else(|| self.ended_early.clone())
            .unwrap_or(StopReason::TrialsDone)
    }

    /// A stop was requested (Ctrl-C): nothing more starts, and the study stops interrupted.
    pub fn interrupt(&mut self) {
        self.stopped.get_or_insert(StopReason::Interrupted);
    }

    /// A trial in flight ended with `record`. An error, the study stopped, when it must not go
    /// on: the baseline failed at start other than for memory (the record is then not kept).
    pub fn recorded(&mut self, record: &TrialRecord) -> Result<(), StopReason> {
        self.lost_in_a_row = 0;
        self.stop_on(stop::baseline_cannot_start(record))
    }

    /// A trial in flight was lost for `why` (its Slurm job failed twice; nothing is recorded).
    /// An error, the study stopped, once too many were lost in a row: the cluster is failing.
    pub fn lost(&mut self, why: &str) -> Result<(), StopReason> {
        self.lost_in_a_row += 1;
        let lost = self.lost_in_a_row;
        self.stop_on(
            (lost >= stop::MOST_LOST_IN_A_ROW).then(|| StopReason::JobsLost {
                lost,
                last: why.to_string(),
            }),
        )
    }

    /// Stop the study for `reason`, when there is one.
    fn stop_on(&mut self, reason: Option<StopReason>) -> Result<(), StopReason> {
        match reason {
            Some(reason) => {
                self.stopped = Some(reason.clone());
                Err(reason)
            }
            None => Ok(()),
        }
    }

    /// The next step of the plan given `now`.
    fn next_in_plan(&mut self, now: &StudyState<'_>) -> Decision {
        loop {
            let decision = match &self.stage {
                Stage::Search => self.next_search(now),
                Stage::SearchEnded if !now.in_flight.is_empty() => Decision::Wait,
                Stage::SearchEnded => {
                    self.stage = Stage::Revalidation(self.repeats_to_run(now.records));
                    continue;
                }
                Stage::Revalidation(_) => self.next_repeat(now),
                Stage::Finished => Decision::Done,
            };
            if decision == Decision::Done && self.stage == Stage::Search {
                self.stage = Stage::SearchEnded;
                continue;
            }
            return decision;
        }
    }

    /// The next search trial: the baseline, a trial an earlier run left in flight, a queued
    /// config, or the sampler's proposal given the trials in flight; `Done` once the search
    /// dispatches nothing more.
    fn next_search(&mut self, now: &StudyState<'_>) -> Decision {
        if self.configs_started(now) >= self.spec.trials as usize {
            return Decision::Done;
        }
        let originals = select::originals(now.records);
        let searching: Vec<&InFlight> = now
            .in_flight
            .iter()
            .filter(|f| f.id.kind.repeat_of().is_none())
            .collect();
        if searching.iter().any(|f| f.id.kind.is_baseline()) {
            return Decision::Wait;
        }
        // The re-validation to come, the baseline's repeats included; none without it.
        let configs = match self.spec.revalidate_top {
            0 => 0,
            top => top + u32::from(self.spec.baseline.is_some()),
        };
        let reserve = mean_launched_wall(now.records) * f64::from(configs * self.spec.repeats)
            / f64::from(now.slots.max(1));
        if now.budget_left.is_some_and(|left| left <= reserve) {
            self.stage = Stage::SearchEnded;
            return Decision::Ended(EarlyEnd::BudgetSpent(Phase::Search));
        }
        let needs_baseline =
            self.spec.baseline.is_some() && !originals.iter().any(|r| r.is_baseline());
        if self.spec.intensify && !needs_baseline {
            if let Some(of) = intensify::next(now.records, now.in_flight, self.spec.repeats) {
                return self.repeat(of, None, now);
            }
        }
        // The baseline first (as it was, when it was in flight), then the others.
        if let Some(i) = self
            .reruns
            .iter()
            .position(|r| r.id.kind.is_baseline() == needs_baseline)
        {
            let rerun = self.reruns.remove(i);
            return self.run(rerun.id, rerun.params, None, Vec::new());
        }
        let queued = originals
            .iter()
            .filter(|r| !r.is_baseline() && select::counts_as_config(r))
            .count()
            + searching
                .iter()
                .filter(|f| !f.id.kind.is_baseline())
                .count();
        let proposed = match (&self.spec.baseline, self.spec.enqueue.get(queued)) {
            (Some(defaults), _) if needs_baseline => defaults.clone(),
            (_, Some(config)) => config.clone(),
            _ => {
                let pending: Vec<Params> = searching.iter().map(|f| f.params.clone()).collect();
                let seen = observed(now.records);
                self.sampler.observe_noise(study_noise(now.records, &seen));
                match self.sampler.ask(self.check, &with_pending(&seen, &pending)) {
                    Ok(p) => p,
                    Err(e) => {
                        self.stage = Stage::SearchEnded;
                        return Decision::Ended(EarlyEnd::SamplerFailed(format!("{e:#}")));
                    }
                }
            }
        };
        let kind = if needs_baseline {
            TrialKind::Baseline
        } else {
            TrialKind::Search
        };
        let id = TrialId {
            number: self.next_number(now),
            kind,
        };
        match self.check.resolve(&proposed) {
            Err(r) => Decision::Refuse {
                trial: InFlight {
                    id,
                    params: proposed,
                },
                rule: r.rule,
                message: r.message,
            },
            Ok(params) => self.run(id, params, None, Vec::new()),
        }
    }

    /// The next re-validation repeat: on a free slot other than its original's where one is;
    /// when every queued repeat's original ran on the free slots and other trials are in
    /// flight, wait for another slot.
    fn next_repeat(&mut self, now: &StudyState<'_>) -> Decision {
        if matches!(&self.stage, Stage::Revalidation(queue) if queue.is_empty()) {
            if !now.in_flight.is_empty() {
                return Decision::Wait;
            }
            match self.verdict_round(now) {
                Some(round) => self.stage = Stage::Revalidation(round),
                None => {
                    self.stage = Stage::Finished;
                    return Decision::Done;
                }
            }
        }
        let Stage::Revalidation(queue) = &self.stage else {
            return Decision::Done;
        };
        if now.budget_left.is_some_and(|left| left <= 0.0) {
            self.stage = Stage::Finished;
            return Decision::Ended(EarlyEnd::BudgetSpent(Phase::Revalidation));
        }
        let original_of = |number: u32| now.records.iter().find(|r| r.id.number == number);
        let picked = now
            .free_slots
            .iter()
            .find_map(|&slot| {
                let i = queue
                    .iter()
                    .position(|&n| original_of(n).is_some_and(|r| r.slot != Some(slot)))?;
                Some((slot, i))
            })
            .or_else(|| {
                let lowest = *now.free_slots.first()?;
                now.in_flight.is_empty().then_some((lowest, 0))
            });
        let Some((slot, i)) = picked else {
            return Decision::Wait;
        };
        let Stage::Revalidation(queue) = &mut self.stage else {
            return Decision::Done;
        };
        let of = queue.remove(i);
        self.repeat(of, Some(slot), now)
    }

    /// A run of the config of original trial `of`, on `slot` when given, away from the
    /// original's accelerators.
    fn repeat(&self, of: u32, slot: Option<u32>, now: &StudyState<'_>) -> Decision {
        let Some(original) = now.records.iter().find(|r| r.id.number == of) else {
            return Decision::Wait;
        };
        let id = TrialId {
            number: self.next_number(now),
            kind: TrialKind::Repeat { of },
        };
        let params = original.params.clone();
        match original.devices.len() {
            0 => self.run(id, params, slot, Vec::new()),
            n => Decision::Run(Planned {
                trial: InFlight { id, params },
                devices: n as u32,
                slot,
                avoid: original.devices.clone(),
            }),
        }
    }

    /// Run trial `id` of `params`, or record it invalid when its device count cannot be
    /// computed.
    fn run(&self, id: TrialId, params: Params, slot: Option<u32>, avoid: Vec<u32>) -> Decision {
        match self.spec.devices_per_trial.count(&params) {
            Ok(devices) => Decision::Run(Planned {
                trial: InFlight { id, params },
                devices,
                slot,
                avoid,
            }),
            Err(why) => Decision::Unplaceable {
                trial: InFlight { id, params },
                why,
            },
        }
    }

    /// One entry per repeat still to run, the originals taken in turn (re-validation order
    /// within a round), so the finalists' repeats interleave as a fair comparison's runs do.
    fn repeats_to_run(&self, records: &[TrialRecord]) -> Vec<u32> {
        if self.spec.revalidate_top == 0 {
            return Vec::new();
        }
        let done: Vec<(u32, u32)> =
            select::to_revalidate(records, self.spec.revalidate_top as usize)
                .into_iter()
                .map(|number| {
                    let runs = records.iter().filter(|r| r.repeat_of() == Some(number));
                    (number, runs.count() as u32)
                })
                .collect();
        (0..self.spec.repeats)
            .flat_map(|round| {
                (done.iter())
                    .filter(move |(_, runs)| *runs <= round)
                    .map(|(number, _)| *number)
            })
            .collect()
    }

    /// One more run of the winner and of the baseline, in that order, while the gain's interval
    /// is wider than the verdict's target, neither config has run its most repeats, and the
    /// budget holds the round; `None` once the verdict is resolved or can be no better.
    fn verdict_round(&self, now: &StudyState<'_>) -> Option<Vec<u32>> {
        let Verdict { target, direction } = self.spec.verdict?;
        let winner = select::choose_winner(now.records, direction)?;
        let baseline = winner.baseline.as_ref()?;
        if winner.summary.baseline || winner.gain_ci95? <= target.half_width_pct {
            return None;
        }
        let most_runs = target.most_runs();
        if winner.summary.runs >= most_runs || baseline.runs >= most_runs {
            return None;
        }
        let round = 2.0 * mean_launched_wall(now.records) / f64::from(now.slots.max(1));
        if now.budget_left.is_some_and(|left| left <= round) {
            return None;
        }
        Some(vec![winner.summary.number, baseline.number])
    }

    /// Configs started so far, journaled or in flight: what `trials` counts (re-validation
    /// repeats do not).
    fn configs_started(&self, now: &StudyState<'_>) -> usize {
        let journaled = now.records.iter().filter(|r| select::counts_as_config(r));
        let flying = now
            .in_flight
            .iter()
            .filter(|f| f.id.kind.repeat_of().is_none());
        journaled.count() + flying.count()
    }

    /// The lowest number no journaled, in-flight or left-in-flight trial has.
    fn next_number(&self, now: &StudyState<'_>) -> u32 {
        let journaled = now.records.iter().map(|r| r.id.number);
        let flying = now.in_flight.iter().map(|f| f.id.number);
        let reruns = self.reruns.iter().map(|r| r.id.number);
        journaled
            .chain(flying)
            .chain(reruns)
            .map(|n| n + 1)
            .max()
            .unwrap_or(0)
    }
}

/// What the sampler learns from: one record per config at the mean of its feasible runs, its
/// interval that of the mean (see [`ConfigRuns::as_observed`]), so a repeat moves the modelled
/// value of the config it measured and narrows its noise.
fn observed(records: &[TrialRecord]) -> Vec<TrialRecord> {
    ConfigRuns::group(records)
        .iter()
        .map(ConfigRuns::as_observed)
        .collect()
}

/// The noise the sampler assumes for a config without its own: the study's measured run-to-run
/// spread; before one is measured, [`UNMEASURED_NOISE`] when some config of `seen` has its own
/// (so that it is not trusted more than the others), none otherwise.
fn study_noise(records: &[TrialRecord], seen: &[TrialRecord]) -> Option<f64> {
    let own = seen.iter().any(|r| r.relative_error().is_some());
    measured_noise(records).or_else(|| own.then_some(UNMEASURED_NOISE))
}

/// Mean wall seconds of the trials that launched a server.
fn mean_launched_wall(records: &[TrialRecord]) -> f64 {
    let walls: Vec<f64> = records
        .iter()
        .filter(|r| r.ready_s.is_some())
        .map(|r| r.wall_s)
        .collect();
    if walls.is_empty() {
        0.0
    } else {
        walls.iter().sum::<f64>() / walls.len() as f64
    }
}

#[cfg(test)]
mod tests;
