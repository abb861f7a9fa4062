//! The search and re-validation phases: trials are dispatched to free slots (up to
//! `search.parallel`, or `executor.max_jobs` Slurm jobs, in flight, each on a thread of its own) and journaled by this thread alone
//! as they land.

use super::clock::Clock;
use super::export::Exporter;
use super::flights::{Flights, Landed};
use super::interrupt::StopFlag;
use super::journal::Journal;
use super::observer::{EarlyEnd, Phase, TrialProgress};
use super::pending::{self, Pending};
use super::select;
use super::trial::{Backends, TrialId, TrialRun, TrialRunner};
use super::{baseline, redact, warm};
use crate::export::{self, Access};
use crate::record::{FailureKind, Outcome, Params, TrialRecord};
use crate::sampler::{with_pending, Sampler, Trust};
use crate::space::overrides::baseline_config;
use crate::space::StudySpec;
use anyhow::Context as _;
use std::thread::Scope;

/// A study while it runs.
pub(crate) struct Study<'a> {
    pub space: &'a StudySpec,
    pub backends: Backends<'a>,
    pub sampler: &'a mut dyn Sampler,
    pub runner: TrialRunner<'a>,
    pub exporter: Exporter<'a>,
    pub clock: Clock,
    pub journal: Journal,
    pub records: Vec<TrialRecord>,
    pub stop: StopFlag,
    pub flights: Flights,
    /// Search trials an earlier run left in flight, to run again first.
    pub reruns: Vec<Pending>,
    /// Trials lost in a row to failed Slurm jobs.
    pub lost_in_a_row: u32,
    /// The sampler's last verdict on the warm start that the observer was told of.
    pub prior_trust: Option<Trust>,
}

/// Trials lost in a row after which the study stops: the cluster, not the configs, is failing.
const MOST_LOST_IN_A_ROW: u32 = 6;

/// What the search does next.
enum Next {
    /// Run this trial (a resolved config) on `devices` accelerators.
    Run(TrialId, Params, u32),
    /// A trial was recorded without running (refused before launch).
    Recorded,
    /// Wait for a trial in flight (the baseline runs alone).
    Wait,
    /// The search dispatches nothing more.
    Done,
}

impl<'a> Study<'a> {
    /// The search phase; false when interrupted.
    pub fn search(&mut self) -> anyhow::Result<bool> {
        let runner = self.runner.clone();
        std::thread::scope(|scope| self.search_in(scope, &runner))
    }

    fn search_in<'scope>(
        &mut self,
        scope: &'scope Scope<'scope, 'a>,
        runner: &TrialRunner<'a>,
    ) -> anyhow::Result<bool> {
        let mut held: Option<(TrialId, Params, u32)> = None;
        let mut dispatching = true;
        let mut interrupted = false;
        loop {
            while dispatching && !self.flights.free_slots().is_empty() {
                if self.stop.is_raised() {
                    interrupted = true;
                    dispatching = false;
                    break;
                }
                let (id, params, devices) = match held.take() {
                    Some(trial) => trial,
                    None => match self.next_search_trial()? {
                        Next::Run(id, params, devices) => (id, params, devices),
                        Next::Recorded => continue,
                        Next::Wait => break,
                        Next::Done => {
                            dispatching = false;
                            break;
                        }
                    },
                };
                match self.flights.seat(None, devices, &[]) {
                    Ok(Some(seat)) => self.flights.launch(scope, runner, id, params, seat),
                    Ok(None) => {
                        held = Some((id, params, devices));
                        break;
                    }
                    Err(why) => self.append(self.not_seated(id, params, why))?,
                }
            }
            match self.flights.land() {
                Some(landed) => interrupted |= !self.landed(landed)?,
                None => return Ok(!interrupted),
            }
        }
    }

    /// The next search trial: the baseline, a trial an earlier run left in flight, a queued
    /// config, or the sampler's proposal given the trials in flight.
    fn next_search_trial(&mut self) -> anyhow::Result<Next> {
        let search = &self.space.search;
        let more_configs = self.configs_started() < search.trials as usize;
        if !more_configs {
            return Ok(Next::Done);
        }
        let originals = select::originals(&self.records);
        let flying: Vec<&super::flights::Flying> = self
            .flights
            .flying()
            .iter()
            .filter(|f| f.id.repeat_of.is_none())
            .collect();
        if flying.iter().any(|f| f.id.baseline) {
            return Ok(Next::Wait);
        }
        let configs = search.revalidate_top + u32::from(search.baseline);
        let reserve = self.mean_launched_wall() * f64::from(configs * search.repeats)
            / f64::from(self.flights.slots());
        if self.clock.exhausted(reserve) {
            if flying.is_empty() {
                self.backends
                    .observer
                    .ended_early(&EarlyEnd::BudgetSpent(Phase::Search));
            }
            return Ok(Next::Done);
        }
        let needs_baseline = search.baseline && !originals.iter().any(|r| r.baseline);
        // The baseline first (as it was, when it was in flight), then the others.
        let rerun = self
            .reruns
            .iter()
            .position(|p| p.baseline == needs_baseline)
            .map(|i| self.reruns.remove(i));
        if let Some(rerun) = rerun {
            let trial_dir = self.runner.trial_dir(rerun.number);
            if let Some(record) = super::remote::finished_record(&trial_dir) {
                self.backends.observer.note(&format!(
                    "trial {}: adopted the record its Slurm job wrote after the tuner stopped",
                    rerun.number
                ));
                self.append(record)?;
                return Ok(Next::Recorded);
            }
            let devices = self.devices_for(&rerun.params);
            return self.run_or_record(TrialId::of(&rerun), rerun.params, devices);
        }
        let pending: Vec<Params> = flying.iter().map(|f| f.params.clone()).collect();
        let queued = originals
            .iter()
            .filter(|r| !r.baseline && select::counts_as_config(r))
            .count()
            + flying.iter().filter(|f| !f.id.baseline).count();
        let proposed = if needs_baseline {
            baseline_config(self.space)
        } else if let Some(overlay) = search.enqueue.get(queued) {
            let mut config = baseline_config(self.space);
            config.extend(overlay.clone());
            config
        } else {
            match self
                .sampler
                .ask(self.backends.check, &with_pending(&originals, &pending))
            {
                Ok(p) => p,
                Err(e) => {
                    self.backends
                        .observer
                        .ended_early(&EarlyEnd::SamplerFailed(format!("{e:#}")));
                    return Ok(Next::Done);
                }
            }
        };
        let id = TrialId::full(self.next_number(), needs_baseline, None);
        match self.backends.check.resolve(&proposed) {
            Err(r) => {
                let record = self.runner.rejected(id, proposed, r.rule, r.message);
                self.append(record)?;
                Ok(Next::Recorded)
            }
            Ok(params) => {
                let devices = self.devices_for(&params);
                self.run_or_record(id, params, devices)
            }
        }
    }

    /// Run `params`, or record it failed when its device count cannot be computed.
    fn run_or_record(
        &mut self,
        id: TrialId,
        params: Params,
        devices: Result<u32, String>,
    ) -> anyhow::Result<Next> {
        match devices {
            Ok(n) => Ok(Next::Run(id, params, n)),
            Err(why) => {
                let record = self.not_seated(id, params, why);
                self.append(record)?;
                Ok(Next::Recorded)
            }
        }
    }

    /// Accelerators a trial of `params` takes.
    fn devices_for(&self, params: &Params) -> Result<u32, String> {
        self.space.placement.devices_per_trial.count(params)
    }

    /// The record of a trial that could not be given a seat: an invalid config.
    fn not_seated(&self, id: TrialId, params: Params, why: String) -> TrialRecord {
        let mut record = self
            .runner
            .rejected(id, params, String::new(), String::new());
        record.outcome = Outcome::Failed {
            kind: FailureKind::InvalidConfig,
            message: why,
        };
        record
    }

    /// Re-run the top configs and the baseline `repeats` times each, each repeat on another slot
    /// than its original's where one is free; false when interrupted.
    pub fn revalidate(&mut self) -> anyhow::Result<bool> {
        let runner = self.runner.clone();
        std::thread::scope(|scope| self.revalidate_in(scope, &runner))
    }

    fn revalidate_in<'scope>(
        &mut self,
        scope: &'scope Scope<'scope, 'a>,
        runner: &TrialRunner<'a>,
    ) -> anyhow::Result<bool> {
        let search = &self.space.search;
        if search.revalidate_top == 0 || search.repeats == 0 {
            return Ok(true);
        }
        let mut queue: Vec<TrialRecord> = Vec::new();
        for number in select::to_revalidate(&self.records, search.revalidate_top as usize) {
            let Some(original) = self.records.iter().find(|r| r.number == number) else {
                continue;
            };
            let done = self
                .records
                .iter()
                .filter(|r| r.repeat_of == Some(number))
                .count() as u32;
            for _ in done..search.repeats {
                queue.push(original.clone());
            }
        }
        let mut dispatching = true;
        let mut interrupted = false;
        loop {
            while dispatching && !queue.is_empty() && !self.flights.free_slots().is_empty() {
                if self.stop.is_raised() {
                    interrupted = true;
                    dispatching = false;
                    break;
                }
                if self.clock.exhausted(0.0) {
                    self.backends
                        .observer
                        .ended_early(&EarlyEnd::BudgetSpent(Phase::Revalidation));
                    dispatching = false;
                    break;
                }
                let Some((slot, i)) = self.fair_pick(&queue) else {
                    break;
                };
                let original = &queue[i];
                let devices = match original.devices.len() {
                    0 => self.devices_for(&original.params),
                    n => Ok(n as u32),
                };
                let id = TrialId::full(self.next_number(), false, Some(original.number));
                let params = original.params.clone();
                let seat = match devices {
                    Ok(n) => self.flights.seat(Some(slot), n, &original.devices),
                    Err(why) => Err(why),
                };
                match seat {
                    Ok(Some(seat)) => {
                        queue.remove(i);
                        self.flights.launch(scope, runner, id, params, seat);
                    }
                    Ok(None) => break,
                    Err(why) => {
                        queue.remove(i);
                        self.append(self.not_seated(id, params, why))?;
                    }
                }
            }
            match self.flights.land() {
                Some(landed) => interrupted |= !self.landed(landed)?,
                None => return Ok(!interrupted),
            }
        }
    }

    /// A free slot and the first queued repeat whose original ran on another slot; when every
    /// queued repeat's original ran on the free slots and other trials are in flight, none (wait
    /// for another slot); with nothing in flight, the first repeat on the lowest free slot.
    fn fair_pick(&self, queue: &[TrialRecord]) -> Option<(u32, usize)> {
        let free = self.flights.free_slots();
        for &slot in free {
            if let Some(i) = queue.iter().position(|r| r.slot != Some(slot)) {
                return Some((slot, i));
            }
        }
        if self.flights.flying().is_empty() {
            return Some((*free.first()?, 0));
        }
        None
    }

    /// Journal a trial that landed; false when it was interrupted (nothing is recorded, its
    /// log is scrubbed all the same).
    fn landed(&mut self, landed: Landed) -> anyhow::Result<bool> {
        let Landed { id, run, .. } = landed;
        let trial_dir = self.runner.trial_dir(id.number);
        match run? {
            TrialRun::Done(record) => {
                self.lost_in_a_row = 0;
                if id.baseline {
                    baseline::check_started(&record, &trial_dir)?;
                }
                self.append(*record)?;
                Ok(true)
            }
            TrialRun::Interrupted => {
                redact::server_log(&trial_dir, &self.space.secrets)?;
                Ok(false)
            }
            TrialRun::Lost(why) => {
                pending::clear(&trial_dir);
                self.lost_in_a_row += 1;
                if self.lost_in_a_row >= MOST_LOST_IN_A_ROW {
                    anyhow::bail!(
                        "{} Slurm jobs in a row failed as jobs, the last: {why}; check the \
                         cluster and the executor section, then resume",
                        self.lost_in_a_row
                    );
                }
                self.backends.observer.warning(&format!(
                    "trial {} not recorded (its job failed, not its config): {why}",
                    id.number
                ));
                Ok(true)
            }
        }
    }

    /// Journal `record` (its secrets masked, and its server log's), then update the views.
    fn append(&mut self, record: TrialRecord) -> anyhow::Result<()> {
        let secrets = &self.space.secrets;
        let record = redact::record(record, secrets);
        let trial_dir = self.runner.trial_dir(record.number);
        redact::server_log(&trial_dir, secrets)?;
        let stored = self.journal.append(&record)?;
        pending::clear(&trial_dir);
        self.records.push(stored);
        let dir = self.runner.dir;
        export::write_trials_csv(dir, &self.records, Access::of(self.space))?;
        if let Err(e) = self.exporter.write(&self.records) {
            self.backends
                .observer
                .warning(&format!("cannot export the current best: {e:#}"));
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
        let Some(check) = self.sampler.prior_check(self.space, &self.records) else {
            return;
        };
        if check.trust == Trust::Unchecked || self.prior_trust == Some(check.trust) {
            return;
        }
        self.prior_trust = Some(check.trust);
        self.backends.observer.note(&warm::trust_note(&check));
    }

    /// Configs started so far, journaled or in flight: what `search.trials` counts
    /// (re-validation repeats do not count).
    fn configs_started(&self) -> usize {
        let journaled = self.records.iter().filter(|r| select::counts_as_config(r));
        let flying = self
            .flights
            .flying()
            .iter()
            .filter(|f| f.id.repeat_of.is_none());
        journaled.count() + flying.count()
    }

    /// The lowest number no journaled, in-flight or left-in-flight trial has.
    pub(super) fn next_number(&self) -> u32 {
        let journaled = self.records.iter().map(|r| r.number);
        let flying = self.flights.flying().iter().map(|f| f.id.number);
        let reruns = self.reruns.iter().map(|p| p.number);
        journaled
            .chain(flying)
            .chain(reruns)
            .map(|n| n + 1)
            .max()
            .unwrap_or(0)
    }

    fn mean_launched_wall(&self) -> f64 {
        let walls: Vec<f64> = self
            .records
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
}
