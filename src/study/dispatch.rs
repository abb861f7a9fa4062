//! The dispatch loop: carries the planner's decisions out over an executor. Trials run on
//! threads of their own, up to the executor's slots at once; this thread alone journals them as
//! they finish and tells the observer.

use super::clock::Clock;
use super::export::Exporter;
use super::journal::Journal;
use super::observer::{StudyObserver, TrialProgress};
use super::plan::{Decision, Planned, Planner, StopReason, StudyState};
use super::slots::{Finished, Slots};
use super::warm;
use crate::exec::{not_run, pending, Backends, StopFlag, TrialDir, TrialExecutor, TrialRun};
use crate::export;
use crate::record::{FailureKind, InFlight, Outcome, Params, TrialId, TrialRecord};
use crate::sampler::Trust;
use crate::score::select;
use crate::space::{redact, StudySpec};
use anyhow::Context as _;
use std::path::Path;

/// A study while it runs.
pub(crate) struct Study<'a> {
    pub space: &'a StudySpec,
    pub backends: Backends<'a, dyn StudyObserver>,
    pub planner: Planner<'a>,
    /// The study folder.
    pub dir: &'a Path,
    pub exporter: Exporter<'a>,
    pub clock: Clock,
    pub journal: Journal,
    pub records: Vec<TrialRecord>,
    pub stop: StopFlag,
    /// The sampler's last verdict on the warm start that the observer was told of.
    pub prior_trust: Option<Trust>,
}

impl<'a> Study<'a> {
    /// Run the plan over `executor` until the planner stops it; why it did. An error when it
    /// stopped on a failure ([`StopReason::is_failure`]).
    pub fn run(&mut self, executor: &'a dyn TrialExecutor) -> anyhow::Result<StopReason> {
        let mut slots = Slots::new(executor.slots(), executor.device_pool());
        std::thread::scope(|scope| {
            let mut held: Option<Planned> = None;
            let mut dispatching = true;
            loop {
                while dispatching && !slots.free_slots().is_empty() {
                    if self.stop.is_raised() {
                        // Nothing more starts, the trial held for its devices neither.
                        self.planner.interrupt();
                        held = None;
                    }
                    let planned = match held.take() {
                        Some(planned) => planned,
                        None => match self.decide(&slots)? {
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
                            self.backends
                                .observer
                                .trial_started(planned.id, &planned.params);
                            let trial = InFlight {
                                id: planned.id,
                                params: planned.params,
                            };
                            slots.start(scope, executor, trial, assignment)
                        }
                        Ok(None) => {
                            held = Some(planned);
                            break;
                        }
                        Err(why) => self.append(unplaceable(planned.id, planned.params, why))?,
                    }
                }
                match slots.wait() {
                    Some(finished) => self.finished(finished)?,
                    None => return Ok(self.planner.stop_reason()),
                }
            }
        })
    }

    /// Ask the planner and carry out what needs no slot: `None` once it is done, else the
    /// decision (already recorded or told where it was a refusal or an early end).
    fn decide(&mut self, slots: &Slots) -> anyhow::Result<Option<Decision>> {
        let now = StudyState {
            records: &self.records,
            in_flight: slots.in_flight(),
            free_slots: slots.free_slots(),
            slots: slots.slots(),
            budget_left: self.clock.left().map(|left| left.as_secs_f64()),
        };
        let decision = self.planner.next(&now);
        match &decision {
            Decision::Done => return Ok(None),
            Decision::Refuse {
                id,
                params,
                rule,
                message,
            } => {
                let outcome = Outcome::Rejected {
                    rule: rule.clone(),
                    message: message.clone(),
                };
                self.append(not_run(*id, params.clone(), outcome))?;
            }
            Decision::Unplaceable { id, params, why } => {
                self.append(unplaceable(*id, params.clone(), why.clone()))?;
            }
            Decision::Ended(end) => self.backends.observer.ended_early(end),
            Decision::Run(_) | Decision::Wait => {}
        }
        Ok(Some(decision))
    }

    /// Tell the planner how a trial ended and journal its record; an error when the planner
    /// stops the study on it. An interrupted trial records nothing (its log is scrubbed all
    /// the same).
    fn finished(&mut self, finished: Finished) -> anyhow::Result<()> {
        let Finished { id, run, .. } = finished;
        let trial = TrialDir::of(self.dir, id.number);
        match run? {
            TrialRun::Done(record) => {
                if let Err(stop) = self.planner.recorded(&record) {
                    return Err(stopped_on(stop, &trial));
                }
                self.append(*record)
            }
            TrialRun::Interrupted => {
                self.planner.interrupt();
                redact::server_log(&trial.server_log(), &self.space.secrets)
            }
            TrialRun::Lost(why) => {
                pending::clear(&trial);
                self.planner.lost(&why)?;
                self.backends.observer.warning(&format!(
                    "trial {} not recorded (its job failed, not its config): {why}",
                    id.number
                ));
                Ok(())
            }
        }
    }

    /// Journal `record` (its secrets masked, and its server log's), then update the views.
    pub fn append(&mut self, record: TrialRecord) -> anyhow::Result<()> {
        let secrets = &self.space.secrets;
        let record = redact::record(record, secrets);
        let trial = TrialDir::of(self.dir, record.number);
        redact::server_log(&trial.server_log(), secrets)?;
        let stored = self.journal.append(&record)?;
        pending::clear(&trial);
        self.records.push(stored);
        export::write_trials_csv(self.dir, &self.records, self.space.file_access())?;
        if let Err(e) = self.exporter.write(&self.records) {
            self.backends
                .observer
                .warning(&format!("cannot export the current best: {e:#}"));
        }
        if let Err(e) = self.exporter.write_deploy(&self.records, None) {
            self.backends
                .observer
                .warning(&format!("cannot write the deployment files: {e:#}"));
        }
        let best = select::ranked(&self.records).first().and_then(|r| r.value);
        let last = self.records.last().context("a record was just appended")?;
        self.backends.observer.trial(&TrialProgress {
            record: last,
            metric: &self.space.objective.metric,
            best,
            budget_left: self.clock.left(),
        });
        self.tell_prior_trust();
        Ok(())
    }

    /// Tell the observer, once per change, when the sampler checks the warm start against the
    /// study's own trials and keeps, sets aside or confirms it.
    fn tell_prior_trust(&mut self) {
        let Some(check) = self
            .planner
            .sampler()
            .prior_check(self.space, &self.records)
        else {
            return;
        };
        if check.trust == Trust::Unchecked || self.prior_trust == Some(check.trust) {
            return;
        }
        self.prior_trust = Some(check.trust);
        self.backends.observer.note(&warm::trust_note(&check));
    }
}

/// The record of a trial that could not be given an assignment: an invalid config.
fn unplaceable(id: TrialId, params: Params, why: String) -> TrialRecord {
    let outcome = Outcome::Failed {
        kind: FailureKind::InvalidConfig,
        message: why,
    };
    not_run(id, params, outcome)
}

/// The error a study fails with when the planner stops it on the trial of `trial`: the
/// reason, and the trial's server log where it left one.
fn stopped_on(reason: StopReason, trial: &TrialDir) -> anyhow::Error {
    let log = trial.server_log();
    if log.exists() {
        anyhow::anyhow!("{reason}\n  server log: {}", log.display())
    } else {
        anyhow::Error::new(reason)
    }
}
