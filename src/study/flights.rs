//! Trials in flight: the slots, the accelerators each trial holds, and the threads that run
//! them. The study's thread dispatches and journals; each trial runs on a thread of its own.

use super::remote::Jobs;
use super::trial::{Seat, TrialId, TrialRun, TrialRunner};
use crate::exec::DevicePool;
use crate::record::Params;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::Scope;

/// A trial that finished running (or failed to).
pub(crate) struct Landed {
    /// Where it ran.
    pub seat: Seat,
    /// Which trial.
    pub id: TrialId,
    /// What became of it.
    pub run: anyhow::Result<TrialRun>,
}

/// A trial running now.
pub(crate) struct Flying {
    /// Which trial.
    pub id: TrialId,
    /// Its config.
    pub params: Params,
}

/// Slots, devices and the trials in flight.
pub(crate) struct Flights {
    slots: u32,
    free: Vec<u32>,
    flying: Vec<Flying>,
    pool: DevicePool,
    sender: Sender<Landed>,
    receiver: Receiver<Landed>,
    jobs: Option<Jobs>,
}

impl Flights {
    /// `slots` slots (at least one), all free, sharing the accelerators of `pool`; trials run
    /// here, or as Slurm `jobs`.
    pub fn new(slots: u32, pool: DevicePool, jobs: Option<Jobs>) -> Flights {
        let (sender, receiver) = channel();
        Flights {
            slots: slots.max(1),
            free: (0..slots.max(1)).collect(),
            flying: Vec::new(),
            pool,
            sender,
            receiver,
            jobs,
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
    pub fn flying(&self) -> &[Flying] {
        &self.flying
    }

    /// A seat on `slot` (else the lowest free slot) with `n` accelerators, away from `avoid`
    /// where it can be; `Ok(None)` when none is free now, an error when the pool can never
    /// give `n`. Without a pool, trials are not pinned to devices.
    pub fn seat(
        &mut self,
        slot: Option<u32>,
        n: u32,
        avoid: &[u32],
    ) -> Result<Option<Seat>, String> {
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
        Ok(Some(Seat { slot, devices }))
    }

    /// Run trial `id` of `params` on `seat` (from [`Flights::seat`]) on a thread of `scope`.
    pub fn launch<'scope, 'env: 'scope>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        runner: &TrialRunner<'env>,
        id: TrialId,
        params: Params,
        seat: Seat,
    ) {
        self.free.retain(|s| *s != seat.slot);
        self.flying.push(Flying {
            id: id.clone(),
            params: params.clone(),
        });
        let runner = runner.clone();
        let sender = self.sender.clone();
        let jobs = self.jobs.clone();
        scope.spawn(move || {
            let number = id.number;
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &jobs {
                Some(jobs) => jobs.run(&runner, id.clone(), params, &seat),
                None => runner.run(id.clone(), params, &seat),
            }))
            .unwrap_or_else(|_| Err(anyhow::anyhow!("trial {number} panicked")));
            // The receiver lives as long as the study's thread waits for its trials.
            let _ = sender.send(Landed { seat, id, run });
        });
    }

    /// Wait until a trial in flight lands and free its slot and devices; `None` when no trial
    /// is in flight.
    pub fn land(&mut self) -> Option<Landed> {
        if self.flying.is_empty() {
            return None;
        }
        let landed = self.receiver.recv().ok()?;
        self.flying.retain(|f| f.id.number != landed.id.number);
        self.pool.give_back(&landed.seat.devices);
        self.free.push(landed.seat.slot);
        self.free.sort_unstable();
        Some(landed)
    }
}
