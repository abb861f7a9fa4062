//! One trial: allocate a slot, build the launch, start the server, probe it (optionally searching
//! the load), score it, and always tear the server down. A server whose process exited during
//! the trial makes it `crashed`, whatever the probe measured.

use super::exit;
use super::interrupt::StopFlag;
use super::observer::StudyObserver;
use super::pending::{self, Pending};
use super::prober::Prober;
use super::prune;
use super::slot_numa::NumaHome;
use super::watch::{self, Watch};
use crate::engine::{Engine, Slot};
use crate::export::{redact, write_atomic, Access};
use crate::launch::{LaunchSpec, Launcher};
use crate::probe::loadsearch;
use crate::probe::{EarlyStop, ProbeReport, RunOptions, Target, WorkloadSpec};
use crate::record::{
    metric, FailureKind, MetricMap, Outcome, Params, ServerStats, TrialId, TrialRecord, Violation,
};
use crate::score::{judge_probe, judged_metrics, nothing_completed, Objective};
use crate::space::{Feasibility, StudySpec};
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Metric name of the wall-clock seconds a trial spent probing (all rounds of a load search),
/// pruned probes included: what pruning saves.
pub(crate) const PROBE_WALL_S: &str = "probe_wall_s";

/// The probe's report in a trial's folder.
const PROBE_JSON: &str = "probe.json";

/// Time between scrapes of the server's `/metrics` during a probe.
const SCRAPE_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// The side effects a study drives, each behind a trait so tests can substitute fakes.
#[derive(Clone, Copy)]
pub struct Backends<'a> {
    /// Completes and checks configs (constraints, derived values, engine rules).
    pub check: &'a dyn Feasibility,
    /// Renders configs into launches.
    pub engine: &'a dyn Engine,
    /// Starts servers.
    pub launcher: &'a dyn Launcher,
    /// Probes servers.
    pub prober: &'a dyn Prober,
    /// Hears of progress, notes and warnings.
    pub observer: &'a dyn StudyObserver,
}

/// What became of a trial.
pub(crate) enum TrialRun {
    /// It ran to a record.
    Done(Box<TrialRecord>),
    /// The user interrupted it; nothing is recorded and a resume reruns it.
    Interrupted,
    /// Its Slurm job failed twice (node failure, time limit, preemption, cancelled, refused):
    /// nothing is recorded, since the config is not to blame.
    Lost(String),
}

/// Runs trials of one study (a copy per trial in flight).
#[derive(Clone)]
pub(crate) struct TrialRunner<'a> {
    /// The space.
    pub space: &'a StudySpec,
    /// Side effects.
    pub backends: Backends<'a>,
    /// Scoring.
    pub objective: &'a Objective,
    /// The study folder.
    pub dir: &'a Path,
    /// Raised on Ctrl-C.
    pub stop: StopFlag,
    /// Stop probes early once an SLO is certainly broken.
    pub prune: bool,
    /// Stop probes early on a server signal.
    pub server_stop: bool,
    /// Where `numa` candidates were computed, so bindings follow each trial's accelerators.
    pub numa_home: Option<NumaHome>,
}

/// Where a trial runs: its slot and the accelerators it was given.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Assignment {
    /// Slot number, from 0 (one per trial in flight).
    pub slot: u32,
    /// Accelerator indices (empty: the engine's default).
    pub devices: Vec<u32>,
}

enum Measured {
    Interrupted,
    ProbeFailed(String),
    Probed(Box<Judged>),
}

/// What a probe measured, judged.
struct Judged {
    metrics: MetricMap,
    stages: Vec<MetricMap>,
    value: Option<f64>,
    score: Option<f64>,
    violations: Vec<Violation>,
    pruned: Option<String>,
    server: Option<ServerStats>,
}

impl Judged {
    /// The record of this measurement, made by `finish` from its outcome.
    fn record(self, finish: &dyn Fn(Outcome) -> TrialRecord) -> TrialRecord {
        let outcome = match self.pruned {
            Some(reason) => Outcome::Pruned { reason },
            None if self.violations.is_empty() => Outcome::Feasible,
            None => Outcome::Infeasible,
        };
        let probed = matches!(outcome, Outcome::Feasible | Outcome::Infeasible);
        TrialRecord {
            metrics: self.metrics,
            stages: self.stages,
            value: self.value.filter(|_| probed),
            score: self.score.filter(|_| probed),
            violations: self.violations,
            server: self.server,
            ..finish(outcome)
        }
    }
}

impl Measured {
    /// True when a request or the probe itself failed: the server may be on its way down.
    fn saw_failures(&self) -> bool {
        match self {
            Measured::Interrupted => false,
            Measured::ProbeFailed(_) => true,
            Measured::Probed(judged) => {
                judged.metrics.get(metric::FAILED).is_some_and(|n| *n > 0.0)
            }
        }
    }
}

impl TrialRunner<'_> {
    /// The folder of trial `number`.
    pub(crate) fn trial_dir(&self, number: u32) -> PathBuf {
        self.dir.join(format!("trial-{number}"))
    }

    /// Record a config refused before launch.
    pub fn rejected(
        &self,
        id: TrialId,
        params: Params,
        rule: String,
        message: String,
    ) -> TrialRecord {
        new_record(
            id,
            params,
            Outcome::Rejected { rule, message },
            unix_now(),
            0.0,
        )
    }

    /// The launch of `params` in `slot`, its NUMA bindings moved to the slot's accelerators.
    fn launch_spec(&self, params: &Params, slot: &Slot) -> anyhow::Result<LaunchSpec> {
        let params = match &self.numa_home {
            Some(home) => home.rebase(self.space, params, &slot.devices)?,
            None => params.clone(),
        };
        self.backends.engine.launch_spec(self.space, &params, slot)
    }

    /// Launch, probe, score and tear down `params` (a resolved config) on `assignment`. While it runs,
    /// the trial's folder holds `pending.json`, so a resumed study re-runs it.
    pub fn run(
        &self,
        id: TrialId,
        params: Params,
        assignment: &Assignment,
    ) -> anyhow::Result<TrialRun> {
        let started = Instant::now();
        let started_unix = unix_now();
        // Absolute, so config files an engine writes there stay valid whatever its cwd.
        let workdir = std::path::absolute(self.trial_dir(id.number))?;
        if workdir.exists() {
            std::fs::remove_dir_all(&workdir)
                .with_context(|| format!("cannot clear {}", workdir.display()))?;
        }
        std::fs::create_dir_all(&workdir)
            .with_context(|| format!("cannot create {}", workdir.display()))?;
        pending::write(&workdir, &Pending::of(id, params.clone()))?;
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
        let launch = &self.space.launch;
        // Held until the trial ends, so no other tuner's server takes the port meanwhile.
        let port = free_port(&launch.host, launch.port)?;
        let extra: Vec<_> = (0..self.backends.engine.extra_ports())
            .map(|_| free_port(&launch.host, port.port().saturating_add(1)))
            .collect::<anyhow::Result<_>>()?;
        let slot = Slot {
            port: port.port(),
            devices: assignment.devices.clone(),
            workdir: workdir.clone(),
            extra_ports: extra.iter().map(|lease| lease.port()).collect(),
        };
        let spec = match self.launch_spec(&params, &slot) {
            Ok(spec) => spec,
            Err(e) => return failed(FailureKind::InvalidConfig, format!("{e:#}")),
        };
        write_atomic(
            &workdir.join("launch.json"),
            &serde_json::to_string_pretty(&redact(&spec, &self.space.secrets))?,
            Access::of(self.space),
        )?;
        if self.stop.is_raised() {
            return Ok(TrialRun::Interrupted);
        }
        let log = workdir.join("server.log");
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
                    let kept = workdir.join(format!("server.port-busy-{attempt}.log"));
                    std::fs::rename(&log, &kept)
                        .with_context(|| format!("cannot keep {}", log.display()))?;
                    self.backends.observer.warning(&format!(
                        "trial {}: {}; starting it again (log: {})",
                        id.number,
                        f.message,
                        kept.display()
                    ));
                }
                Err(f) => {
                    // A start that failed for want of disk space or a writable folder is the
                    // study's failure, not the config's: it stops the study, the trial stays
                    // in flight for the resume.
                    pending::write(&workdir, &Pending::of(id, params.clone()))?;
                    return failed(f.kind, f.message);
                }
            }
        };
        let ready_s = server.ready_after().as_secs_f64();
        let measured = self.measure(&server.base_url(), &workdir, &assignment.devices);
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

    fn target(&self, base_url: String) -> Target {
        Target {
            base_url,
            model: self.space.engine.served_name().to_string(),
            api_key: std::env::var("INFERTUNE_API_KEY").ok(),
        }
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            progress: None,
            // Pruning reads the whole run's SLOs, so an objective on one stage is not pruned.
            prune: Some(prune::hook(
                self.objective.slos(),
                self.prune && self.objective.spec().stage.is_none(),
                self.stop.clone(),
            )),
        }
    }

    /// How probes are watched from the server's side: the platform tool reads the slot's
    /// accelerators unless the engine is the simulator (which serves its modelled power).
    fn watch(&self, workdir: &Path, devices: &[u32]) -> Watch {
        let simulated = self.space.engine.kind == crate::space::EngineKind::Sim;
        Watch {
            output_counter: self.backends.engine.output_token_counter(),
            every: SCRAPE_EVERY,
            early_stop: self.server_stop,
            log: Some(workdir.join("server.log")),
            accel: (!simulated)
                .then(crate::probe::server::accel::Tool::detect)
                .flatten()
                .map(|tool| (tool, devices.to_vec())),
        }
    }

    fn watched_probe(
        &self,
        watch: &Watch,
        target: &Target,
        workload: &WorkloadSpec,
        options: RunOptions,
    ) -> anyhow::Result<(ProbeReport, Option<ServerStats>)> {
        watch::probe(
            self.backends.prober,
            self.backends.observer,
            watch,
            target,
            workload,
            options,
        )
    }

    /// Probe the server at `base_url` with the study's workload (searching the load over it
    /// where the objective asks) and judge what it measured.
    fn measure(&self, base_url: &str, workdir: &Path, devices: &[u32]) -> anyhow::Result<Measured> {
        let target = self.target(base_url.to_string());
        let workload = &self.space.probe;
        let watch = self.watch(workdir, devices);
        if let Some(search) = &self.objective.spec().load_search {
            return self.measure_load(&target, search, workload, workdir, &watch);
        }
        let probing = Instant::now();
        let (mut report, server) =
            match self.watched_probe(&watch, &target, workload, self.options()) {
                Ok(r) => r,
                Err(e) => return Ok(Measured::ProbeFailed(format!("probe: {e:#}"))),
            };
        report
            .metrics
            .insert(PROBE_WALL_S.into(), probing.elapsed().as_secs_f64());
        write_probe_json(workdir, PROBE_JSON, &report.json)?;
        let pruned = match report.pruned {
            Some(EarlyStop::Interrupted) => return Ok(Measured::Interrupted),
            Some(EarlyStop::Pruned(reason)) => Some(reason),
            None => None,
        };
        let judged = self.judged(report.metrics, report.stages, pruned, server);
        Ok(Measured::Probed(Box::new(judged)))
    }

    /// The verdict on `metrics` (or on those of the objective's stage among `stages`), with
    /// why the probe stopped early if it did and what the server saw.
    fn judged(
        &self,
        metrics: MetricMap,
        stages: Vec<MetricMap>,
        pruned: Option<String>,
        server: Option<ServerStats>,
    ) -> Judged {
        let scored = judged_metrics(self.objective, &metrics, &stages);
        let judgement = judge_probe(self.objective, scored);
        let mut violations = judgement.violations;
        violations.extend(pruned.clone().map(|reason| Violation::Pruned { reason }));
        Judged {
            metrics,
            stages,
            value: judgement.value,
            score: judgement.score,
            violations,
            pruned,
            server,
        }
    }

    fn measure_load(
        &self,
        target: &Target,
        search: &crate::space::objective::LoadSearchSpec,
        workload: &WorkloadSpec,
        workdir: &Path,
        watch: &Watch,
    ) -> anyhow::Result<Measured> {
        let mut runs: Vec<(f64, ProbeReport, Vec<Violation>, Option<ServerStats>)> = Vec::new();
        let mut interrupted = false;
        let mut probe_failure = None;
        let probing = Instant::now();
        let rounds = loadsearch::search(search, |load| {
            let workload = loadsearch::with_load(workload, search.over, load)?;
            let (report, server) =
                match self.watched_probe(watch, target, &workload, self.options()) {
                    Ok(r) => r,
                    Err(e) => {
                        probe_failure = Some(format!("probe at load {load}: {e:#}"));
                        return Ok(None);
                    }
                };
            let pruned = match &report.pruned {
                Some(EarlyStop::Interrupted) => {
                    interrupted = true;
                    return Ok(None);
                }
                Some(EarlyStop::Pruned(reason)) => Some(reason.clone()),
                None => None,
            };
            let mut violations = self.objective.violations(&report.metrics);
            violations.extend(nothing_completed(&report.metrics));
            violations.extend(pruned.map(|reason| Violation::Pruned { reason }));
            let feasible = violations.is_empty();
            runs.push((load, report, violations, server));
            Ok(Some(feasible))
        })?;
        if interrupted {
            return Ok(Measured::Interrupted);
        }
        if let Some(message) = probe_failure {
            return Ok(Measured::ProbeFailed(message));
        }
        let best = loadsearch::best(&rounds);
        let chosen = runs
            .iter()
            .find(|(load, ..)| Some(*load) == best)
            .or(runs.first())
            .context("the load search probed nothing")?;
        let summary: Vec<serde_json::Value> = runs
            .iter()
            .map(|(load, _, v, _)| {
                let texts: Vec<String> = v.iter().map(ToString::to_string).collect();
                serde_json::json!({"load": load, "violations": texts})
            })
            .collect();
        write_probe_json(
            workdir,
            PROBE_JSON,
            &serde_json::json!({"load_search": summary, "chosen": chosen.1.json}),
        )?;
        let mut metrics = chosen.1.metrics.clone();
        let value = best.unwrap_or(0.0);
        metrics.insert("load_search_value".into(), value);
        metrics.insert("load_search_rounds".into(), rounds.len() as f64);
        metrics.insert(PROBE_WALL_S.into(), probing.elapsed().as_secs_f64());
        Ok(Measured::Probed(Box::new(Judged {
            metrics,
            stages: chosen.1.stages.clone(),
            value: Some(value),
            score: Some(value),
            violations: if best.is_some() {
                Vec::new()
            } else {
                chosen.2.clone()
            },
            pruned: None,
            server: chosen.3.clone(),
        })))
    }
}

fn write_probe_json(workdir: &Path, file: &str, json: &serde_json::Value) -> anyhow::Result<()> {
    write_atomic(
        &workdir.join(file),
        &serde_json::to_string_pretty(json)?,
        Access::Shared,
    )
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

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Starts again after a start that found a port taken, before the trial fails as port-busy.
const PORT_BUSY_RETRIES: u32 = 2;

/// Reserves the first port from `from` upward that no tuner holds and `host` can bind now,
/// until the lease is dropped.
pub fn free_port(host: &str, from: u16) -> anyhow::Result<crate::launch::port::PortLease> {
    crate::launch::port::reserve(host, from).context("cannot reserve a port for the server")
}
