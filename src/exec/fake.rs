//! A fake executor: trials answered from a landscape (a simulator, a measured grid) in virtual
//! time, with the start-up and probe costs of a real trial and up to `slots` at once. It runs
//! behind the same trait as the real executors, so tests and the search benchmark drive the
//! real dispatch loop with it: batches of proposals, trials in flight counted as pending, and
//! trials finishing out of order as servers do.
//!
//! Virtual time: a trial started when the virtual clock reads `t` ends at `t` plus its cost.
//! Threads of trials in flight wait until the dispatch loop is idle ([`TrialExecutor::idle`]);
//! then the one that ends first returns and the clock moves to its end. Runs repeat exactly.

use super::devices::DevicePool;
use super::executor::{Assignment, TrialExecutor, TrialRun};
use super::local::EarlyStops;
use crate::record::{InFlight, Outcome, TrialRecord};
use std::collections::HashSet;
use std::sync::{Condvar, Mutex, MutexGuard};

/// What a fake trial ends with.
pub trait Landscape: Sync {
    /// The record `trial` ends with, as a real trial's would read: measured and judged, or
    /// failed to start. Its timing fields are the executor's to fill.
    fn answer(&self, trial: &InFlight) -> TrialRecord;
}

/// Runs trials of a [`Landscape`] in virtual time.
pub struct FakeExecutor<'a> {
    landscape: &'a dyn Landscape,
    slots: u32,
    startup_s: f64,
    probe_s: f64,
    jitter: f64,
    early: EarlyStops,
    timeline: Mutex<Timeline>,
    changed: Condvar,
}

/// The virtual clock and the trials in flight on it.
#[derive(Default)]
struct Timeline {
    now: f64,
    /// Trials in flight: number and virtual end.
    running: Vec<(u32, f64)>,
    /// The trial told to return, until it has.
    released: Option<u32>,
    /// Trials whose thread left without being released (their landscape panicked).
    gone: HashSet<u32>,
}

impl<'a> FakeExecutor<'a> {
    /// `slots` trials at once (at least one) of `landscape`; a server starts in 60 virtual
    /// seconds and the probe runs 120, each trial's times spread by a third.
    pub fn new(landscape: &'a dyn Landscape, slots: u32) -> FakeExecutor<'a> {
        FakeExecutor {
            landscape,
            slots: slots.max(1),
            startup_s: 60.0,
            probe_s: 120.0,
            jitter: 1.0 / 3.0,
            early: EarlyStops {
                slo: true,
                server: true,
            },
            timeline: Mutex::new(Timeline::default()),
            changed: Condvar::new(),
        }
    }

    /// Virtual seconds a server takes to start: a trial that fails to start costs this alone.
    pub fn startup_s(self, seconds: f64) -> Self {
        FakeExecutor {
            startup_s: seconds.max(0.0),
            ..self
        }
    }

    /// Virtual seconds a started server is probed.
    pub fn probe_s(self, seconds: f64) -> Self {
        FakeExecutor {
            probe_s: seconds.max(0.0),
            ..self
        }
    }

    /// Each trial's time is its cost times `1 ± jitter` (at most 0.9), drawn from its number,
    /// so trials finish out of order and the same way every run.
    pub fn jitter(self, jitter: f64) -> Self {
        FakeExecutor {
            jitter: jitter.clamp(0.0, 0.9),
            ..self
        }
    }

    /// What may stop a trial's probe early, as the study was told (both, unless set): with
    /// neither on, a trial the landscape answers pruned ran its probe to the end and broke its
    /// SLOs there (the landscape does not say which stop pruned it).
    pub fn early_stops(self, early: EarlyStops) -> Self {
        FakeExecutor { early, ..self }
    }

    /// The virtual time now: the end of the last trial to finish.
    pub fn now(&self) -> f64 {
        self.lock().now
    }

    /// Virtual seconds `record` of trial `number` takes: start-up, and the probe when the
    /// server started (a probe stopped early is counted whole); a config refused before launch
    /// costs nothing.
    fn cost(&self, number: u32, record: &TrialRecord) -> f64 {
        let base = match record.outcome {
            Outcome::Feasible
            | Outcome::Infeasible
            | Outcome::Crashed { .. }
            | Outcome::Pruned { .. } => self.startup_s + self.probe_s,
            Outcome::Failed { .. } => self.startup_s,
            Outcome::Rejected { .. } => return 0.0,
        };
        base * (1.0 + self.jitter * (2.0 * unit(number) - 1.0))
    }

    fn lock(&self) -> MutexGuard<'_, Timeline> {
        self.timeline.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TrialExecutor for FakeExecutor<'_> {
    fn slots(&self) -> u32 {
        self.slots
    }

    fn device_pool(&self) -> DevicePool {
        DevicePool::new(Vec::new())
    }

    fn run(&self, in_flight: InFlight, assignment: &Assignment) -> anyhow::Result<TrialRun> {
        let number = in_flight.id.number;
        let gone = Gone {
            executor: self,
            number,
        };
        let mut record = self.landscape.answer(&in_flight);
        let unpruned = !(self.early.slo || self.early.server);
        if unpruned && matches!(record.outcome, Outcome::Pruned { .. }) {
            record.outcome = Outcome::Infeasible;
        }
        let cost = self.cost(number, &record);
        let mut timeline = self.lock();
        let start = timeline.now;
        timeline.running.push((number, start + cost));
        self.changed.notify_all();
        while timeline.released != Some(number) {
            timeline = self
                .changed
                .wait(timeline)
                .unwrap_or_else(|e| e.into_inner());
        }
        timeline.released = None;
        timeline.running.retain(|(n, _)| *n != number);
        timeline.now = timeline.now.max(start + cost);
        self.changed.notify_all();
        drop(timeline);
        std::mem::forget(gone);
        if matches!(record.outcome, Outcome::Feasible | Outcome::Infeasible) {
            record.ready_s = Some(self.startup_s);
        }
        record.started_unix = start;
        record.wall_s = cost;
        record.slot = Some(assignment.slot);
        record.devices = assignment.devices.clone();
        record.id.kind = in_flight.id.kind;
        Ok(TrialRun::Done(Box::new(record)))
    }

    /// Once every trial of `in_flight` is on the clock, release the one that ends first (ties:
    /// the lowest number).
    fn idle(&self, in_flight: &[InFlight]) {
        let mut timeline = self.lock();
        loop {
            if let Some(t) = in_flight
                .iter()
                .find(|t| timeline.gone.contains(&t.id.number))
            {
                // Its thread already reported; the dispatch loop is about to hear of it.
                let number = t.id.number;
                timeline.gone.remove(&number);
                return;
            }
            let on_clock = in_flight
                .iter()
                .all(|t| timeline.running.iter().any(|(n, _)| *n == t.id.number));
            if on_clock && timeline.released.is_none() {
                break;
            }
            timeline = self
                .changed
                .wait(timeline)
                .unwrap_or_else(|e| e.into_inner());
        }
        let first = timeline
            .running
            .iter()
            .filter(|(n, _)| in_flight.iter().any(|t| t.id.number == *n))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .map(|(n, _)| *n);
        timeline.released = first;
        self.changed.notify_all();
    }
}

/// Marks a trial whose landscape panicked as gone, so the loop does not wait for it.
struct Gone<'e, 'a> {
    executor: &'e FakeExecutor<'a>,
    number: u32,
}

impl Drop for Gone<'_, '_> {
    fn drop(&mut self) {
        let mut timeline = self.executor.lock();
        timeline.running.retain(|(n, _)| *n != self.number);
        timeline.gone.insert(self.number);
        self.executor.changed.notify_all();
    }
}

/// A number in [0, 1) drawn from `number` (splitmix64), the same on every run.
fn unit(number: u32) -> f64 {
    let mut x = u64::from(number).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Params, TrialId, TrialKind};

    struct Pruning;

    impl Landscape for Pruning {
        fn answer(&self, trial: &InFlight) -> TrialRecord {
            let outcome = Outcome::Pruned {
                reason: "tpot certainly over 50 ms".into(),
            };
            TrialRecord::of(trial.id, trial.params.clone(), outcome)
        }
    }

    fn run(executor: &FakeExecutor<'_>) -> Outcome {
        let trial = InFlight {
            id: TrialId {
                number: 0,
                kind: TrialKind::Search,
            },
            params: Params::new(),
        };
        let assignment = Assignment {
            slot: 0,
            devices: Vec::new(),
        };
        std::thread::scope(|s| {
            let running = s.spawn(|| executor.run(trial.clone(), &assignment));
            executor.idle(std::slice::from_ref(&trial));
            match running.join().unwrap().unwrap() {
                TrialRun::Done(record) => record.outcome,
                _ => panic!("the fake trial did not end"),
            }
        })
    }

    #[test]
    fn a_fake_trial_is_pruned_only_as_the_study_was_told() {
        let pruned = run(&FakeExecutor::new(&Pruning, 1));
        assert!(matches!(pruned, Outcome::Pruned { .. }), "{pruned:?}");
        let off = EarlyStops {
            slo: false,
            server: false,
        };
        let ran = run(&FakeExecutor::new(&Pruning, 1).early_stops(off));
        assert_eq!(ran, Outcome::Infeasible);
    }
}
