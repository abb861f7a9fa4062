//! Trials in flight: the slots, the accelerators each trial holds, and the threads that run
//! them. The study's thread dispatches and journals; each trial runs on a thread of its own,
//! through the study's executor.

use super::{Assignment, DevicePool, TrialExecutor, TrialRun};
use crate::record::{InFlight, TrialId};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::Scope;

/// A trial that finished running (or failed to).
pub(crate) struct Finished {
    /// Where it ran.
    pub assignment: Assignment,
    /// Which trial.
    pub id: TrialId,
    /// What became of it.
    pub run: anyhow::Result<TrialRun>,
}

/// Slots, devices and the trials in flight.
pub(crate) struct Slots {
    slots: u32,
    free: Vec<u32>,
    in_flight: Vec<InFlight>,
    pool: DevicePool,
    sender: Sender<Finished>,
    receiver: Receiver<Finished>,
}

impl Slots {
    /// `slots` slots (at least one), all free, sharing the accelerators of `pool`.
    pub fn new(slots: u32, pool: DevicePool) -> Slots {
        let (sender, receiver) = channel();
        Slots {
            slots: slots.max(1),
            free: (0..slots.max(1)).collect(),
            in_flight: Vec::new(),
            pool,
            sender,
            receiver,
        }
    }

    /// Slots in all.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Slots free now, lowest first.
    pub fn free_slots(&self) -> &[u32] {
        &self.free
    }

    /// The trials in flight.
    pub fn in_flight(&self) -> &[InFlight] {
        &self.in_flight
    }

    /// An assignment on `slot` (else the lowest free slot) with `n` accelerators, away from `avoid`
    /// where it can be; `Ok(None)` when none is free now, an error when the pool can never
    /// give `n`. Without a pool, trials are not pinned to devices.
    pub fn assign(
        &mut self,
        slot: Option<u32>,
        n: u32,
        avoid: &[u32],
    ) -> Result<Option<Assignment>, String> {
        let Some(&lowest) = self.free.first() else {
            return Ok(None);
        };
        let slot = slot.filter(|s| self.free.contains(s)).unwrap_or(lowest);
        let devices = if self.pool.is_empty() {
            Vec::new()
        } else if n as usize > self.pool.len() {
            return Err(format!(
                "the trial needs {n} accelerators (launch.devices_per_trial) but the study has \
                 {} (launch.devices or the host's); lower devices_per_trial or list more devices",
                self.pool.len()
            ));
        } else {
            match self.pool.take(n as usize, avoid) {
                Some(devices) => devices,
                None => return Ok(None),
            }
        };
        Ok(Some(Assignment { slot, devices }))
    }

    /// Run `trial` on `assignment` (from [`Slots::assign`]) through `executor`, on a thread of
    /// `scope`.
    pub fn start<'scope, 'env: 'scope>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        executor: &'env dyn TrialExecutor,
        trial: InFlight,
        assignment: Assignment,
    ) {
        self.free.retain(|s| *s != assignment.slot);
        self.in_flight.push(trial.clone());
        let sender = self.sender.clone();
        scope.spawn(move || {
            let id = trial.id;
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                executor.run(trial, &assignment)
            }))
            .unwrap_or_else(|_| Err(anyhow::anyhow!("trial {} panicked", id.number)));
            // The receiver lives as long as the study's thread waits for its trials.
            let _ = sender.send(Finished {
                assignment,
                id,
                run,
            });
        });
    }

    /// Wait until a trial in flight finishes and free its slot and devices; `None` when no
    /// trial is in flight.
    pub fn wait(&mut self) -> Option<Finished> {
        if self.in_flight.is_empty() {
            return None;
        }
        let finished = self.receiver.recv().ok()?;
        self.in_flight.retain(|f| f.id.number != finished.id.number);
        self.pool.give_back(&finished.assignment.devices);
        self.free.push(finished.assignment.slot);
        self.free.sort_unstable();
        Some(finished)
    }
}
