//! Fake engine, launcher and prober: servers OOM above `OOM_ABOVE` seqs (and, when asked, start
//! but die during their probe above another bound), and the prober's metrics are a function of
//! the config and the load, with the pruning hook called after each request.

use infertune::engine::{Engine, Slot};
use infertune::exec::{Prober, StopFlag};
use infertune::launch::{Exit, LaunchSpec, Launcher, Readiness, Server, StartFailure};
use infertune::probe::{LiveStats, LoadSpec, ProbeReport, RunOptions, Target, WorkloadSpec};
use infertune::record::{FailureKind, Latency, MetricMap, Params, Value};
use infertune::space::StudySpec;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Above this `max_num_seqs` the fake server runs out of memory at start.
pub const OOM_ABOVE: i64 = 200;
/// Requests each fake probe plans.
pub const PLANNED: u64 = 200;
/// Requests the fake prober completes per (reported) second.
const REQUESTS_PER_S: f64 = 40.0;

/// Renders `--name value` flags.
pub struct FakeEngine;

impl Engine for FakeEngine {
    fn launch_spec(
        &self,
        space: &StudySpec,
        params: &Params,
        slot: &Slot,
    ) -> anyhow::Result<LaunchSpec> {
        let mut args = vec![
            "serve".to_string(),
            space.engine.model.clone(),
            "--port".into(),
            slot.port.to_string(),
        ];
        for (k, v) in params {
            args.push(format!("--{}", k.replace('_', "-")));
            args.push(v.to_string());
        }
        Ok(LaunchSpec {
            program: "fake-serve".into(),
            args,
            env: [("FAKE_NOTE".to_string(), "it's tuned".to_string())].into(),
            files: vec![],
            cwd: None,
            host: space.launch.host.clone(),
            port: slot.port,
            readiness: Readiness::chat(&space.engine.model.clone()),
        })
    }
}

/// Servers live in a registry shared with [`FakeProber`], which reads their config from it.
#[derive(Clone, Default)]
pub struct Registry {
    live: Arc<Mutex<HashMap<String, Params>>>,
    started: Arc<AtomicUsize>,
}

impl Registry {
    /// Servers started so far.
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    /// Servers not stopped.
    pub fn live(&self) -> usize {
        self.live.lock().unwrap().len()
    }
}

/// Starts fake servers; OOM above [`OOM_ABOVE`]; optionally raises a stop flag on the n-th start.
pub struct FakeLauncher {
    pub registry: Registry,
    pub stop_on_start: Option<(usize, StopFlag)>,
    /// The start (counted from 1) during which Ctrl-C arrives and cancels the wait for
    /// readiness, as the real launcher's start then ends.
    pub cancel_start_on: Option<(usize, StopFlag)>,
    /// Servers with more `max_num_seqs` than this start, serve their probe, and are found
    /// killed by SIGSEGV after it (the probe itself still reports every request).
    pub dies_above: Option<i64>,
    /// Starts (counted from 1) that fail because another process holds a port the server
    /// binds, as a server that picks its own ports at random can find.
    pub port_busy_on: Vec<usize>,
}

/// What a fake server that died logged as its root cause.
pub const DEATH_CAUSE: &str = "RuntimeError: CUDA error: an illegal memory access was encountered";

struct FakeServer {
    url: String,
    registry: Registry,
    dies: bool,
}

fn flag(spec: &LaunchSpec, name: &str) -> Option<i64> {
    let i = spec.args.iter().position(|a| a == name)?;
    spec.args.get(i + 1)?.parse().ok()
}

impl Launcher for FakeLauncher {
    fn start(
        &self,
        spec: &LaunchSpec,
        log: &Path,
        _: Duration,
        _: Duration,
    ) -> Result<Box<dyn Server>, StartFailure> {
        let n = self.registry.started.fetch_add(1, Ordering::SeqCst) + 1;
        std::fs::write(log, format!("{} {}\n", spec.program, spec.args.join(" "))).unwrap();
        if let Some((at, stop)) = &self.stop_on_start {
            if n == *at {
                stop.raise();
            }
        }
        if let Some((at, stop)) = &self.cancel_start_on {
            if n == *at {
                stop.raise();
                return Err(StartFailure {
                    kind: FailureKind::Unknown,
                    message: "start interrupted".into(),
                });
            }
        }
        if self.port_busy_on.contains(&n) {
            return Err(StartFailure {
                kind: FailureKind::PortBusy,
                message:
                    "[Errno 98] error while attempting to bind on address: address already in use"
                        .into(),
            });
        }
        if flag(spec, "--max-num-seqs").unwrap_or(0) > OOM_ABOVE {
            return Err(StartFailure {
                kind: FailureKind::Oom,
                message: "torch.OutOfMemoryError: CUDA out of memory".into(),
            });
        }
        let seqs = flag(spec, "--max-num-seqs").unwrap_or(0);
        let params: Params = ["max_num_seqs", "max_num_batched_tokens", "block_size"]
            .iter()
            .filter_map(|k| {
                flag(spec, &format!("--{}", k.replace('_', "-")))
                    .map(|v| (k.to_string(), Value::Int(v)))
            })
            .collect();
        let url = format!("http://127.0.0.1:{}/server-{n}", spec.port);
        self.registry
            .live
            .lock()
            .unwrap()
            .insert(url.clone(), params);
        Ok(Box::new(FakeServer {
            url,
            registry: self.registry.clone(),
            dies: self.dies_above.is_some_and(|bound| seqs > bound),
        }))
    }
}

impl Server for FakeServer {
    fn base_url(&self) -> String {
        self.url.clone()
    }
    fn ready_after(&self) -> Duration {
        Duration::from_millis(1500)
    }
    fn exited(&mut self) -> Option<Exit> {
        self.dies.then(|| Exit {
            ending: "killed by SIGSEGV (11)".into(),
            cause: Some(DEATH_CAUSE.into()),
        })
    }
    fn stop(self: Box<Self>) -> anyhow::Result<()> {
        self.registry.live.lock().unwrap().remove(&self.url);
        Ok(())
    }
}

/// Throughput and p99 TTFT of a config under the fake model.
pub fn model(params: &Params) -> (f64, f64) {
    let get = |k: &str| params.get(k).and_then(Value::as_i64).unwrap_or(0) as f64;
    let seqs = get("max_num_seqs");
    let batched = get("max_num_batched_tokens");
    let block = if get("block_size") == 32.0 { 0.95 } else { 1.0 };
    let tput = 100.0 * seqs.ln() * (1.0 + batched / 16384.0) * block;
    let ttft = 5.0 * seqs + batched / 20.0;
    (tput, ttft)
}

/// Probes by the fake model: the workload's requests (`PLANNED` in [`super::space`]) whose
/// TTFTs rise to the model's p99, calling the pruning hook after each one, at 40 requests a
/// (reported) second, with as many output tokens planned as the model's throughput makes in
/// that time. Counts the requests it "sent".
#[derive(Default)]
pub struct FakeProber {
    pub registry: Registry,
    pub requests_sent: AtomicUsize,
    /// Above this concurrency one request of each probe fails (the others are measured).
    pub fail_above: Option<f64>,
    /// Throughput a probe of fewer than `PLANNED` requests reports, as a multiple of the
    /// model's: a short probe that flatters (`None`: the model's at any length).
    pub short_probe_gain: Option<f64>,
    /// Run-to-run noise: probe `n` reports the model's throughput times
    /// `1 + spread · sin(2.4 n)` (`None`: none).
    pub spread: Option<f64>,
    /// Probes answered so far.
    pub probes: AtomicUsize,
}

impl Prober for FakeProber {
    fn probe(
        &self,
        target: &Target,
        workload: &WorkloadSpec,
        options: RunOptions,
    ) -> anyhow::Result<ProbeReport> {
        let params = self
            .registry
            .live
            .lock()
            .unwrap()
            .get(&target.base_url)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("no server at {}", target.base_url))?;
        let (tput, p99) = model(&params);
        let p99 = p99 * concurrency(workload) / 16.0;
        let planned = requests(workload).unwrap_or(PLANNED);
        let tput = match self.short_probe_gain {
            Some(gain) if planned < PLANNED => tput * gain,
            _ => tput,
        };
        let n = self.probes.fetch_add(1, Ordering::SeqCst) as f64;
        let tput = tput * (1.0 + self.spread.unwrap_or(0.0) * (2.4 * n).sin());
        let mut stats = LiveStats {
            planned,
            planned_output_tokens: (tput * planned as f64 / REQUESTS_PER_S) as u64,
            ..LiveStats::default()
        };
        let failed = match self.fail_above {
            Some(bound) if concurrency(workload) > bound => 1.0,
            _ => 0.0,
        };
        let metrics_of = |stats: &LiveStats| -> MetricMap {
            let done = stats.finished as f64;
            [
                (
                    "output_throughput".to_string(),
                    tput * done / planned as f64,
                ),
                ("duration_s".to_string(), done / REQUESTS_PER_S),
                (
                    "p99_ttft_ms".to_string(),
                    stats
                        .samples(Latency::Ttft)
                        .iter()
                        .cloned()
                        .fold(0.0, f64::max),
                ),
                ("completed".to_string(), done),
                ("failed".to_string(), failed),
                ("error_rate".to_string(), failed / (done + failed)),
            ]
            .into()
        };
        let json_of = |stats: &LiveStats| serde_json::json!({"fake": true, "completed": stats.finished, "url": target.base_url});
        let mut pruned = None;
        for i in 0..planned {
            let rise = i as f64 / planned.saturating_sub(1).max(1) as f64;
            stats
                .latencies_ms
                .entry(Latency::Ttft)
                .or_default()
                .push(p99 * (0.5 + 0.5 * rise));
            stats.finished += 1;
            stats.elapsed = Duration::from_secs_f64(stats.finished as f64 / REQUESTS_PER_S);
            self.requests_sent.fetch_add(1, Ordering::SeqCst);
            if let Some(reason) = options.prune.as_ref().and_then(|h| h(&stats)) {
                pruned = Some(reason);
                break;
            }
        }
        let metrics = metrics_of(&stats);
        let json = json_of(&stats);
        Ok(ProbeReport {
            metrics,
            stages: Vec::new(),
            pruned,
            json,
        })
    }
}

/// The requests `workload` sends, when it counts them.
pub fn requests(workload: &WorkloadSpec) -> Option<u64> {
    workload.load.limits().0.map(u64::from)
}

/// The closed-loop concurrency of `workload` (TTFT in the fake model scales with it from 16).
pub fn concurrency(workload: &WorkloadSpec) -> f64 {
    match workload.load {
        LoadSpec::Closed { concurrency, .. } => f64::from(concurrency),
        LoadSpec::Open { .. } | LoadSpec::Trace { .. } | LoadSpec::Stages { .. } => 16.0,
    }
}
