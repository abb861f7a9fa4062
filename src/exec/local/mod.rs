//! The local executor: a trial on this host. It takes its slot's ports, builds the launch,
//! starts the server, measures it (`measure.rs`), and always tears the server down. A
//! server whose process exited during the trial makes it `crashed`, whatever the probe
//! measured.

mod exit;
mod measure;
mod prune;
mod slot_numa;
mod watch;

use super::backends::Backends;
use super::devices::DevicePool;
use super::executor::{Assignment, TrialExecutor, TrialRun};
use super::interrupt::StopFlag;
use super::pending;
use super::trial_dir::TrialDir;
use crate::engine::Slot;
use crate::launch::LaunchSpec;
use crate::record::{FailureKind, InFlight, MetricMap, Outcome, Params, TrialId, TrialRecord};
use crate::score::Objective;
use crate::space::{redact, StudySpec};
use crate::topo::Topology;
use crate::util::atomic::write_atomic;
use crate::util::unix_now;
use anyhow::Context as _;
use measure::{Measured, Measurement};
use slot_numa::NumaHome;
use std::path::Path;
use std::time::Instant;

/// What may stop a trial's probe before its end (a stop request always does): `tune`'s
/// `--no-prune` and `--no-server-stop`, read by every executor (a Slurm job is given them as
/// the same flags of `trial run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EarlyStops {
    /// Once an SLO is certainly broken.
    pub slo: bool,
    /// On a server signal (thrashing, KV cache pinned full, fatal log).
    pub server: bool,
}

impl EarlyStops {
    /// The `trial run` flags that turn off what is off here.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = Vec::new();
        if !self.slo {
            flags.push("--no-prune");
        }
        if !self.server {
            flags.push("--no-server-stop");
        }
        flags
    }
}

/// Runs trials here, up to `slots` at once, each on its own ports and accelerators.
pub struct LocalExecutor<'a> {
    space: &'a StudySpec,
    backends: Backends<'a>,
    /// The study folder.
    dir: &'a Path,
    /// How each trial's server is probed and judged (its stop flag stops the trial too).
    measurement: Measurement<'a>,
    /// Where `numa` candidates were computed, so bindings follow each trial's accelerators.
    numa_home: Option<NumaHome>,
    slots: u32,
    pool: DevicePool,
}

impl<'a> LocalExecutor<'a> {
    /// Trials of `space` in the study folder `dir`, judged by `objective`, stopped by `stop`:
    /// one at a time, unpinned (the engine's default accelerators).
    pub fn new(
        space: &'a StudySpec,
        backends: Backends<'a>,
        objective: &'a Objective,
        dir: &'a Path,
        stop: StopFlag,
        early: EarlyStops,
    ) -> LocalExecutor<'a> {
        let measurement = Measurement {
            space,
            objective,
            prober: backends.prober,
            observer: backends.observer,
            output_counter: backends.engine.output_token_counter(),
            stop,
            prune: early.slo,
            server_stop: early.server,
        };
        LocalExecutor {
            space,
            backends,
            dir,
            measurement,
            numa_home: None,
            slots: 1,
            pool: DevicePool::new(Vec::new()),
        }
    }

    /// The same trials, `search.parallel` at once on this host: pinned to the accelerators of
    /// `launch.devices` (else every one of `topology`), NUMA bindings following them. `None`
    /// for trials that are not pinned.
    pub fn on_host(self, topology: Option<Topology>) -> LocalExecutor<'a> {
        let space = self.space;
        LocalExecutor {
            slots: space.search.parallel.max(1),
            pool: DevicePool::of(space.placement.devices.as_deref(), topology.as_ref()),
            numa_home: NumaHome::of(space, topology),
            ..self
        }
    }

    /// The launch of `params` in `slot`, its NUMA bindings moved to the slot's accelerators.
    fn launch_spec(&self, params: &Params, slot: &Slot) -> anyhow::Result<LaunchSpec> {
        let params = match &self.numa_home {
            Some(home) => home.rebase(self.space, params, &slot.devices)?,
            None => params.clone(),
        };
        self.backends.engine.launch_spec(self.space, &params, slot)
    }
}

impl TrialExecutor for LocalExecutor<'_> {
    fn slots(&self) -> u32 {
        self.slots
    }

    fn device_pool(&self) -> DevicePool {
        self.pool.clone()
    }

    /// Launch, probe, score and tear down the trial's config on `assignment`. While it runs,
    /// the trial's folder marks it in flight, so a resumed study runs it again.
    fn run(&self, in_flight: InFlight, assignment: &Assignment) -> anyhow::Result<TrialRun> {
        let (id, params) = (in_flight.id, &in_flight.params);
        let started = Instant::now();
        let started_unix = unix_now();
        // Absolute, so config files an engine writes there stay valid whatever its cwd.
        let trial = TrialDir::of(self.dir, id.number).absolute()?;
        trial.create_fresh()?;
        pending::write(&trial, &in_flight)?;
        let finish = |outcome: Outcome| TrialRecord {
            slot: Some(assignment.slot),
            devices: assignment.devices.clone(),
            ..new_record(
                id,
                params.clone(),
                outcome,
                started_unix,
                started.elapsed().as_secs_f64(),
            )
        };
        let failed = |kind: FailureKind, message: String| {
            Ok(TrialRun::Done(Box::new(finish(Outcome::Failed {
                kind,
                message,
            }))))
        };
        // The dispatch loop counted them when it assigned the slot; without a device pool
        // the slot's list is empty and the count is the space's.
        let taken = match self.space.placement.devices_per_trial.count(params) {
            Ok(n) => n,
            Err(message) => return failed(FailureKind::InvalidConfig, message),
        };
        let launch = &self.space.launch;
        // Held until the trial ends, so no other tuner's server takes the port meanwhile.
        let port = free_port(&launch.host, launch.port)?;
        let extra: Vec<_> = (0..self.backends.engine.extra_ports())
            .map(|_| free_port(&launch.host, port.port().saturating_add(1)))
            .collect::<anyhow::Result<_>>()?;
        let slot = Slot {
            port: port.port(),
            devices: assignment.devices.clone(),
            workdir: trial.path(),
            extra_ports: extra.iter().map(|lease| lease.port()).collect(),
        };
        let spec = match self.launch_spec(params, &slot) {
            Ok(spec) => spec,
            Err(e) => return failed(FailureKind::InvalidConfig, format!("{e:#}")),
        };
        write_atomic(
            &trial.launch_json(),
            &serde_json::to_string_pretty(&redact::launch(&spec, &self.space.secrets))?,
            self.space.file_access(),
        )?;
        if self.measurement.stop.is_raised() {
            return Ok(TrialRun::Interrupted);
        }
        let log = trial.server_log();
        let mut attempt = 0;
        let mut server = loop {
            match self
                .backends
                .launcher
                .start(&spec, &log, launch.ready_timeout, launch.stop_grace)
            {
                Ok(server) => break server,
                // A port taken at that moment (by a server that picks its own ports at
                // random, or another program) is the machine's state, not the config's.
                Err(f) if f.kind == FailureKind::PortBusy && attempt < PORT_BUSY_RETRIES => {
                    attempt += 1;
                    let kept = trial.port_busy_log(attempt);
                    std::fs::rename(&log, &kept)
                        .with_context(|| format!("cannot keep {}", log.display()))?;
                    self.backends.observer.warning(&format!(
                        "trial {}: {}; starting it again (log: {})",
                        id.number,
                        f.message,
                        kept.display()
                    ));
                }
                // Ctrl-C cancelled the wait for readiness: the config is not to blame, and the
                // trial stays in flight for the resume.
                Err(_) if self.measurement.stop.is_raised() => return Ok(TrialRun::Interrupted),
                Err(f) => {
                    // A start that failed for want of disk space or a writable folder is the
                    // study's failure, not the config's: it stops the study, the trial stays
                    // in flight for the resume.
                    pending::write(&trial, &in_flight)?;
                    return failed(f.kind, f.message);
                }
            }
        };
        let ready_s = server.ready_after().as_secs_f64();
        let measured =
            self.measurement
                .measure(&server.base_url(), &trial, &assignment.devices, taken);
        let failures = measured.as_ref().is_ok_and(Measured::saw_failures);
        let exit = exit::exit_of(&mut *server, failures);
        if let Err(e) = server.stop() {
            self.backends
                .observer
                .warning(&format!("trial {}: teardown incomplete: {e:#}", id.number));
        }
        let crashed = |metrics: MetricMap, exit: crate::launch::Exit| TrialRecord {
            metrics,
            ..finish(Outcome::Crashed {
                exit: exit.ending,
                message: exit.cause.unwrap_or_default(),
            })
        };
        let mut record = match (measured?, exit) {
            (Measured::Interrupted, _) => return Ok(TrialRun::Interrupted),
            (measured, Some(exit)) => crashed(
                match measured {
                    Measured::Probed(judged) => judged.metrics,
                    _ => MetricMap::new(),
                },
                exit,
            ),
            (Measured::ProbeFailed(message), None) => finish(Outcome::Failed {
                kind: FailureKind::Unknown,
                message,
            }),
            (Measured::Probed(judged), None) => judged.record(&finish),
        };
        record.ready_s = Some(ready_s);
        Ok(TrialRun::Done(Box::new(record)))
    }
}

/// The record of trial `id` of `params` that ended as `outcome` before any launch (refused by
/// the space, or not placeable), stamped now.
pub fn not_run(id: TrialId, params: Params, outcome: Outcome) -> TrialRecord {
    new_record(id, params, outcome, unix_now(), 0.0)
}

fn new_record(
    id: TrialId,
    params: Params,
    outcome: Outcome,
    started_unix: f64,
    wall_s: f64,
) -> TrialRecord {
    TrialRecord {
        wall_s,
        started_unix,
        ..TrialRecord::of(id, params, outcome)
    }
}

/// Starts again after a start that found a port taken, before the trial fails as port-busy.
const PORT_BUSY_RETRIES: u32 = 2;

/// Reserves the first port from `from` upward that no tuner holds and `host` can bind now,
/// until the lease is dropped.
pub fn free_port(host: &str, from: u16) -> anyhow::Result<crate::launch::port::PortLease> {
    crate::launch::port::reserve(host, from).context("cannot reserve a port for the server")
}
