//! A study while it runs, as the dispatch loop's sink: every record is redacted, journaled and
//! exported as it arrives, and the observer told.

use super::clock::Clock;
use super::dispatch::DispatchSink;
use super::export::Exporter;
use super::journal::Journal;
use super::observer::{EarlyEnd, StudyObserver, TrialProgress};
use super::plan::{Planner, StopReason};
use super::warm;
use crate::exec::{pending, Backends, TrialDir};
use crate::export;
use crate::record::{InFlight, TrialId, TrialRecord};
use crate::sampler::Trust;
use crate::score::select;
use crate::space::{redact, StudySpec};
use anyhow::Context as _;
use std::path::Path;

/// A study while it runs.
pub(crate) struct RunningStudy<'a> {
    pub space: &'a StudySpec,
    pub backends: Backends<'a, dyn StudyObserver>,
    /// The study folder.
    pub dir: &'a Path,
    pub exporter: Exporter<'a>,
    pub clock: Clock,
    pub journal: Journal,
    pub records: Vec<TrialRecord>,
    /// The sampler's last verdict on the warm start that the observer was told of.
    pub prior_trust: Option<Trust>,
}

impl DispatchSink for RunningStudy<'_> {
    fn records(&self) -> &[TrialRecord] {
        &self.records
    }

    fn budget_left(&self) -> Option<f64> {
        self.clock.left().map(|left| left.as_secs_f64())
    }

    /// Journal `record` (its secrets masked, and its server log's), then update the views.
    fn append(&mut self, record: TrialRecord, planner: &Planner<'_>) -> anyhow::Result<()> {
        let secrets = &self.space.secrets;
        let record = redact::record(record, secrets);
        let trial = TrialDir::of(self.dir, record.id.number);
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
        self.tell_prior_trust(planner);
        Ok(())
    }

    fn started(&mut self, trial: &InFlight) {
        self.backends
            .observer
            .trial_started(trial.id, &trial.params);
    }

    fn ended_early(&mut self, end: &EarlyEnd) {
        self.backends.observer.ended_early(end);
    }

    /// Nothing is recorded; the trial's server log is scrubbed all the same.
    fn interrupted(&mut self, id: TrialId) -> anyhow::Result<()> {
        let trial = TrialDir::of(self.dir, id.number);
        redact::server_log(&trial.server_log(), &self.space.secrets)
    }

    fn lost(&mut self, id: TrialId, why: &str) {
        pending::clear(&TrialDir::of(self.dir, id.number));
        self.backends.observer.warning(&format!(
            "trial {} not recorded (its job failed, not its config): {why}",
            id.number
        ));
    }

    /// The reason, and the trial's server log where it left one.
    fn stopped_on(&self, reason: StopReason, id: TrialId) -> anyhow::Error {
        let log = TrialDir::of(self.dir, id.number).server_log();
        if log.exists() {
            anyhow::anyhow!("{reason}\n  server log: {}", log.display())
        } else {
            anyhow::Error::new(reason)
        }
    }
}

impl RunningStudy<'_> {
    /// Tell the observer, once per change, when the sampler checks the warm start against the
    /// study's own trials and keeps, sets aside or confirms it.
    fn tell_prior_trust(&mut self, planner: &Planner<'_>) {
        let Some(check) = planner.sampler().prior_check(self.space, &self.records) else {
            return;
        };
        if check.trust == Trust::Unchecked || self.prior_trust == Some(check.trust) {
            return;
        }
        self.prior_trust = Some(check.trust);
        let twin_only = matches!(
            self.space.search.prior,
            crate::space::Prior::Twin | crate::space::Prior::Default
        ) && self.space.search.warm_start.is_empty();
        self.backends
            .observer
            .note(&warm::trust_note(&check, twin_only));
    }
}
