//! Measuring a trial's server: the probe under watch (searching the load over it where the
//! objective asks), its report kept in the trial's folder, and the verdict on what it measured.

use super::prune;
use super::watch::{self, Watch};
use crate::exec::backends::TrialObserver;
use crate::exec::interrupt::StopFlag;
use crate::exec::prober::Prober;
use crate::exec::trial_dir::TrialDir;
use crate::probe::loadsearch;
use crate::probe::{EarlyStop, ProbeReport, RunOptions, Target, WorkloadSpec};
use crate::record::{metric, MetricMap, Outcome, ServerStats, TrialRecord};
use crate::score::{judged_metrics, Objective, Verdict};
use crate::space::StudySpec;
use crate::util::atomic::{write_atomic, Access};
use anyhow::Context as _;
use std::time::Instant;

/// Metric name of the wall-clock seconds a trial spent probing (all rounds of a load search),
/// pruned probes included: what pruning saves.
const PROBE_WALL_S: &str = "probe_wall_s";

/// Time between scrapes of the server's `/metrics` during a probe.
const SCRAPE_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// How a trial's server is probed and judged.
pub(super) struct Measurement<'a> {
    /// The space: its workload and engine.
    pub space: &'a StudySpec,
    /// Scoring.
    pub objective: &'a Objective,
    /// Runs the probe.
    pub prober: &'a dyn Prober,
    /// Hears of servers that cannot be watched.
    pub observer: &'a dyn TrialObserver,
    /// The engine's output-token counter, when it names one.
    pub output_counter: Option<&'static str>,
    /// Raised on Ctrl-C.
    pub stop: StopFlag,
    /// Stop probes early once an SLO is certainly broken.
    pub prune: bool,
    /// Stop probes early on a server signal.
    pub server_stop: bool,
}

/// What a probe of a trial's server came to.
pub(super) enum Measured {
    /// Ctrl-C stopped it.
    Interrupted,
    /// The probe itself failed: why.
    ProbeFailed(String),
    /// It ran (to its end or pruned).
    Probed(Box<Judged>),
}

/// What a probe measured, judged.
pub(super) struct Judged {
    pub metrics: MetricMap,
    stages: Vec<MetricMap>,
    verdict: Verdict,
    server: Option<ServerStats>,
}

impl Judged {
    /// The record of this measurement, made by `finish` from its outcome.
    pub fn record(self, finish: &dyn Fn(Outcome) -> TrialRecord) -> TrialRecord {
        let base = TrialRecord {
            metrics: self.metrics,
            stages: self.stages,
            server: self.server,
            ..finish(self.verdict.outcome.clone())
        };
        self.verdict.apply(base)
    }
}

impl Measured {
    /// True when a request or the probe itself failed: the server may be on its way down.
    pub fn saw_failures(&self) -> bool {
        match self {
            Measured::Interrupted => false,
            Measured::ProbeFailed(_) => true,
            Measured::Probed(judged) => {
                judged.metrics.get(metric::FAILED).is_some_and(|n| *n > 0.0)
            }
        }
    }
}

impl Measurement<'_> {
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
    fn watch(&self, trial: &TrialDir, devices: &[u32]) -> Watch {
        let simulated = self.space.engine.kind == crate::space::EngineKind::Sim;
        Watch {
            output_counter: self.output_counter,
            every: SCRAPE_EVERY,
            early_stop: self.server_stop,
            log: Some(trial.server_log()),
            accel: (!simulated)
                .then(crate::probe::server::accel::Tool::detect)
                .flatten()
                .map(|tool| (tool, devices.to_vec())),
        }
    }

    /// The probe's report, with the accelerators the launch took (`taken`) as its `devices`
    /// metric, and what the server saw.
    fn watched_probe(
        &self,
        watch: &Watch,
        target: &Target,
        workload: &WorkloadSpec,
        taken: u32,
    ) -> anyhow::Result<(ProbeReport, Option<ServerStats>)> {
        let (mut report, server) = watch::probe(
            self.prober,
            self.observer,
            watch,
            target,
            workload,
            self.options(),
        )?;
        report
            .metrics
            .insert(metric::DEVICES.into(), f64::from(taken));
        Ok((report, server))
    }

    /// Probe the server at `base_url` with the study's workload (searching the load over it
    /// where the objective asks) and judge what it measured.
    /// `taken` is how many accelerators the launch took: every run records it as the
    /// `devices` metric.
    pub(super) fn measure(
        &self,
        base_url: &str,
        trial: &TrialDir,
        devices: &[u32],
        taken: u32,
    ) -> anyhow::Result<Measured> {
        let target = self.target(base_url.to_string());
        let workload = &self.space.probe;
        let watch = self.watch(trial, devices);
        if let Some(search) = &self.objective.spec().load_search {
            return self.measure_load(&target, search, workload, trial, &watch, taken);
        }
        let probing = Instant::now();
        let (mut report, server) = match self.watched_probe(&watch, &target, workload, taken) {
            Ok(r) => r,
            Err(e) => return Ok(Measured::ProbeFailed(format!("probe: {e:#}"))),
        };
        report
            .metrics
            .insert(PROBE_WALL_S.into(), probing.elapsed().as_secs_f64());
        write_probe_json(trial, &report.json)?;
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
        let verdict = Verdict::of(self.objective, scored, pruned);
        Judged {
            metrics,
            stages,
            verdict,
            server,
        }
    }

    fn measure_load(
        &self,
        target: &Target,
        search: &crate::space::objective::LoadSearchSpec,
        workload: &WorkloadSpec,
        trial: &TrialDir,
        watch: &Watch,
        taken: u32,
    ) -> anyhow::Result<Measured> {
        let mut runs: Vec<(f64, ProbeReport, Verdict, Option<ServerStats>)> = Vec::new();
        let mut interrupted = false;
        let mut probe_failure = None;
        let probing = Instant::now();
        let rounds = loadsearch::search(search, |load| {
            let workload = loadsearch::with_load(workload, search.over, load)?;
            let (report, server) = match self.watched_probe(watch, target, &workload, taken) {
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
            let verdict = Verdict::of(self.objective, &report.metrics, pruned);
            let feasible = verdict.is_feasible();
            runs.push((load, report, verdict, server));
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
                let texts: Vec<String> = v.violations.iter().map(ToString::to_string).collect();
                serde_json::json!({"load": load, "violations": texts})
            })
            .collect();
        write_probe_json(
            trial,
            &serde_json::json!({"load_search": summary, "chosen": chosen.1.json}),
        )?;
        let mut metrics = chosen.1.metrics.clone();
        let value = best.unwrap_or(0.0);
        metrics.insert("load_search_value".into(), value);
        metrics.insert("load_search_rounds".into(), rounds.len() as f64);
        metrics.insert(PROBE_WALL_S.into(), probing.elapsed().as_secs_f64());
        let violations = match best {
            Some(_) => Vec::new(),
            None => chosen.2.violations.clone(),
        };
        Ok(Measured::Probed(Box::new(Judged {
            metrics,
            stages: chosen.1.stages.clone(),
            verdict: Verdict::decided(Some(value), self.objective, None, violations, None),
            server: chosen.3.clone(),
        })))
    }
}

/// Keep `json`, the probe's report, in the folder of `trial`.
fn write_probe_json(trial: &TrialDir, json: &serde_json::Value) -> anyhow::Result<()> {
    write_atomic(
        &trial.probe_json(),
        &serde_json::to_string_pretty(json)?,
        Access::Shared,
    )
}
