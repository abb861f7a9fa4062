//! The dispatch loop: carries the planner's decisions out over an executor. Trials run on
//! threads of their own, up to the executor's slots at once; the calling thread alone hands
//! what they end with to a [`DispatchSink`] as they finish. The tune loop's sink is the study
//! (journal, exports, observer); the search benchmark's collects records in memory.

use super::observer::EarlyEnd;
use super::plan::{Decision, Planned, Planner, StopReason, StudyState};
use crate::exec::{not_run, StopFlag, TrialExecutor, TrialRun};
use crate::exec::{Finished, Slots};
use crate::record::{FailureKind, InFlight, Outcome, TrialId, TrialRecord};
use std::thread::Scope;

/// Where the dispatch loop puts what it learns: the records it keeps, and what it tells.
pub trait DispatchSink {
    /// Every record so far, in the order they were appended.
    fn records(&self) -> &[TrialRecord];

    /// Seconds left of the time budget; `None` without one.
    fn budget_left(&self) -> Option<f64> {
        None
    }

    /// Keep `record`: a trial that ran, or one refused before it could. `planner` is the one
    /// that planned it, for what it knows of the sampler.
    fn append(&mut self, record: TrialRecord, planner: &Planner<'_>) -> anyhow::Result<()>;

    /// `trial` was handed to the executor.
    fn started(&mut self, _trial: &InFlight) {}

    /// A phase ended early.
    fn ended_early(&mut self, _end: &EarlyEnd) {}

    /// Trial `id` was interrupted: nothing is recorded, a resume runs it again.
    fn interrupted(&mut self, _id: TrialId) -> anyhow::Result<()> {
        Ok(())
    }

    /// Trial `id`'s job was lost (the config is not to blame): nothing is recorded.
    fn lost(&mut self, _id: TrialId, _why: &str) {}

    /// The error the run fails with when the planner stops it on trial `id`.
    fn stopped_on(&self, reason: StopReason, _id: TrialId) -> anyhow::Error {
        anyhow::Error::new(reason)
    }
}

/// A sink that keeps the records in memory and tells nothing: the search benchmark's, tests'.
#[derive(Debug, Default)]
pub struct KeptRecords {
    /// Every record, in the order the loop appended them (the order trials finished in).
    pub records: Vec<TrialRecord>,
}

impl DispatchSink for KeptRecords {
    fn records(&self) -> &[TrialRecord] {
        &self.records
    }

    fn append(&mut self, record: TrialRecord, _planner: &Planner<'_>) -> anyhow::Result<()> {
        self.records.push(record);
        Ok(())
    }
}

/// Run `planner`'s plan over `executor` until the planner stops it, or `stop` is raised and
/// the trials in flight end; why it stopped. An error when it stopped on a failure
/// ([`StopReason::is_failure`]) or `sink` could not keep a record; the trials in flight then
/// end first, their outcomes unrecorded.
pub fn dispatch(
    planner: &mut Planner<'_>,
    executor: &dyn TrialExecutor,
    stop: &StopFlag,
    sink: &mut dyn DispatchSink,
) -> anyhow::Result<StopReason> {
    let mut slots = Slots::new(executor.slots(), executor.device_pool());
    std::thread::scope(|scope| {
        let result = run_plan(scope, &mut slots, planner, executor, stop, sink);
        while !slots.in_flight().is_empty() {
            executor.idle(slots.in_flight());
            slots.wait();
        }
        result
    })
}

fn run_plan<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    slots: &mut Slots,
    planner: &mut Planner<'_>,
    executor: &'env dyn TrialExecutor,
    stop: &StopFlag,
    sink: &mut dyn DispatchSink,
) -> anyhow::Result<StopReason> {
    let mut held: Option<Planned> = None;
    let mut dispatching = true;
    loop {
        while dispatching && !slots.free_slots().is_empty() {
            if stop.is_raised() {
                // Nothing more starts, the trial held for its devices neither.
                planner.interrupt();
                held = None;
            }
            let planned = match held.take() {
                Some(planned) => planned,
                None => match decide(planner, slots, sink)? {
                    Some(Decision::Run(planned)) => planned,
                    Some(Decision::Wait) => break,
                    Some(_) => continue,
                    None => {
                        dispatching = false;
                        break;
                    }
                },
            };
            match slots.assign(planned.slot, planned.devices, &planned.avoid) {
                Ok(Some(assignment)) => {
                    sink.started(&planned.trial);
                    slots.start(scope, executor, planned.trial, assignment)
                }
                Ok(None) => {
                    held = Some(planned);
                    break;
                }
                Err(why) => sink.append(unplaceable(planned.trial, why), planner)?,
            }
        }
        if !slots.in_flight().is_empty() {
            executor.idle(slots.in_flight());
        }
        match slots.wait() {
            Some(finished) => finished_trial(planner, finished, sink)?,
            None => return Ok(planner.stop_reason()),
        }
    }
}

/// Ask the planner and carry out what needs no slot: `None` once it is done, else the decision
/// (already appended or told where it was a refusal or an early end).
fn decide(
    planner: &mut Planner<'_>,
    slots: &Slots,
    sink: &mut dyn DispatchSink,
) -> anyhow::Result<Option<Decision>> {
    let now = StudyState {
        records: sink.records(),
        in_flight: slots.in_flight(),
        free_slots: slots.free_slots(),
        slots: slots.slots(),
        budget_left: sink.budget_left(),
    };
    let decision = planner.next(&now);
    match &decision {
        Decision::Done => return Ok(None),
        Decision::Refuse {
            trial,
            rule,
            message,
        } => {
            let outcome = Outcome::Rejected {
                rule: rule.clone(),
                message: message.clone(),
            };
            sink.append(not_run(trial.id, trial.params.clone(), outcome), planner)?;
        }
        Decision::Unplaceable { trial, why } => {
            sink.append(unplaceable(trial.clone(), why.clone()), planner)?;
        }
        Decision::Ended(end) => sink.ended_early(end),
        Decision::Run(_) | Decision::Wait => {}
    }
    Ok(Some(decision))
}

/// Tell the planner how a trial ended and hand its record to `sink`; an error when the planner
/// stops the run on it.
fn finished_trial(
    planner: &mut Planner<'_>,
    finished: Finished,
    sink: &mut dyn DispatchSink,
) -> anyhow::Result<()> {
    let Finished { id, run, .. } = finished;
    match run? {
        TrialRun::Done(record) => {
            if let Err(stop) = planner.recorded(&record) {
                return Err(sink.stopped_on(stop, id));
            }
            sink.append(*record, planner)
        }
        TrialRun::Interrupted => {
            planner.interrupt();
            sink.interrupted(id)
        }
        TrialRun::Lost(why) => {
            sink.lost(id, &why);
            planner.lost(&why)?;
            Ok(())
        }
    }
}

/// The record of a trial that could not be given an assignment: an invalid config.
fn unplaceable(trial: InFlight, why: String) -> TrialRecord {
    let outcome = Outcome::Failed {
        kind: FailureKind::InvalidConfig,
        message: why,
    };
    not_run(trial.id, trial.params, outcome)
}
