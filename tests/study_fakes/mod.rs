//! Fakes for driving the study loop in-process: a space check with one engine rule, a seeded
//! sampler, an engine, a launcher whose servers OOM for large `max_num_seqs`, and a prober whose
//! metrics are a function of the config (with the pruning hook called per request).

#![allow(dead_code)]

use infertune::engine::{Engine, Slot};
use infertune::launch::{FailureKind, LaunchSpec, Launcher, Readiness, Server, StartFailure};
use infertune::probe::{Api, LiveStats, MetricMap, ProbeReport, RunOptions, Target, WorkloadSpec};
use infertune::sampler::Sampler;
use infertune::space::{
    Constraint, EngineKind, EngineSection, Feasibility, LaunchSection, ParamDef, ParamKind, Params,
    Rejection, RuleSettings, SearchSettings, Space, Value,
};
use infertune::study::objective::{Direction, ObjectiveSpec};
use infertune::study::{Backends, Prober, StopFlag, StudyOptions, TrialRecord};
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Above this `max_num_seqs` the fake server runs out of memory at start.
pub const OOM_ABOVE: i64 = 200;
/// Requests each fake probe plans.
pub const PLANNED: u64 = 200;

fn param(name: &str, kind: ParamKind, default: Option<Value>) -> ParamDef {
    ParamDef {
        name: name.into(),
        kind,
        when: None,
        target: None,
        default,
    }
}

/// A vLLM-like space: max_num_seqs (log int), max_num_batched_tokens (choice), block_size
/// (choice), max_model_len (const 4096); p99 TTFT ≤ 1.5 s and error rate ≤ 1%.
pub fn space(seed: u64, trials: u32) -> Space {
    let ints = |v: &[i64]| v.iter().map(|x| Value::Int(*x)).collect::<Vec<_>>();
    Space {
        origin: "fake.yaml".into(),
        name: "fake".into(),
        engine: EngineSection {
            kind: EngineKind::Custom,
            version: Some("1.2.3".into()),
            model: "tiny-model".into(),
            served_model_name: None,
            card: Some("fake-card".into()),
        },
        launch: LaunchSection {
            command: None,
            host: "127.0.0.1".into(),
            port: 18_431,
            env: Default::default(),
            ready_timeout: Duration::from_secs(5),
            health_path: None,
            extra_args: vec![],
            config_template: None,
            stop_grace: Duration::from_secs(1),
        },
        parameters: vec![
            param(
                "max_num_seqs",
                ParamKind::Int {
                    low: 8,
                    high: 512,
                    step: None,
                    log: true,
                },
                Some(Value::Int(64)),
            ),
            param(
                "max_num_batched_tokens",
                ParamKind::Choice {
                    values: ints(&[2048, 4096, 8192, 16384]),
                },
                Some(Value::Int(8192)),
            ),
            param(
                "block_size",
                ParamKind::Choice {
                    values: ints(&[16, 32]),
                },
                None,
            ),
            param(
                "max_model_len",
                ParamKind::Const {
                    value: Value::Int(4096),
                },
                None,
            ),
        ],
        constraints: vec![Constraint {
            name: "batched_covers_len".into(),
            expr: "max_num_batched_tokens >= max_model_len".into(),
        }],
        rules: RuleSettings {
            enabled: true,
            disable: vec![],
            repair: false,
            platform: None,
        },
        probe: serde_json::from_value::<WorkloadSpec>(serde_json::json!({
            "dataset": {"kind": "random", "input_len": 128, "output_len": 64},
            "load": {"kind": "closed", "concurrency": 16, "requests": PLANNED}
        }))
        .expect("valid workload"),
        objective: ObjectiveSpec {
            direction: Direction::Maximize,
            metric: "output_throughput".into(),
            subject_to: infertune::probe::slo::parse_list("ttft:p99<=1500ms,error_rate<=1%")
                .expect("valid SLOs"),
            secondary: None,
            load_search: None,
        },
        search: SearchSettings {
            sampler: "fake".into(),
            trials,
            budget: None,
            seed,
            baseline: true,
            revalidate_top: 2,
            repeats: 2,
        },
    }
}

/// Completes consts and applies the one constraint of [`space`].
pub struct FakeCheck(pub Space);

impl Feasibility for FakeCheck {
    fn parameters(&self) -> &[ParamDef] {
        &self.0.parameters
    }

    fn resolve(&self, sampled: &Params) -> Result<Params, Rejection> {
        let mut p = sampled.clone();
        p.insert("max_model_len".into(), Value::Int(4096));
        let batched = p
            .get("max_num_batched_tokens")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if batched < 4096 {
            return Err(Rejection {
                rule: "batched_covers_len".into(),
                message: format!(
                    "max_num_batched_tokens ({batched}) is smaller than max_model_len (4096)"
                ),
            });
        }
        Ok(p)
    }
}

/// Uniform random configs (unresolved), seeded by `seed` and the number of trials so far, so
/// the same trial list always gives the same next config.
pub struct FakeSampler {
    pub seed: u64,
}

impl Sampler for FakeSampler {
    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
            self.seed ^ (trials.len() as u64).wrapping_mul(0x9e37),
        );
        Ok(space
            .parameters()
            .iter()
            .filter_map(|d| {
                d.kind
                    .from_unit(rng.random::<f64>())
                    .map(|v| (d.name.clone(), v))
            })
            .collect())
    }
}

/// Renders `--name value` flags.
pub struct FakeEngine;

impl Engine for FakeEngine {
    fn launch_spec(
        &self,
        space: &Space,
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
            readiness: Readiness {
                health_path: "/health".into(),
                served_model: space.engine.model.clone(),
                api: Api::Chat,
                https: false,
            },
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
}

struct FakeServer {
    url: String,
    registry: Registry,
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
        if flag(spec, "--max-num-seqs").unwrap_or(0) > OOM_ABOVE {
            return Err(StartFailure {
                kind: FailureKind::Oom,
                message: "torch.OutOfMemoryError: CUDA out of memory".into(),
            });
        }
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

/// Probes by the fake model: `PLANNED` requests whose TTFTs rise to the model's p99, calling
/// the pruning hook after each one. Counts the requests it "sent".
#[derive(Default)]
pub struct FakeProber {
    pub registry: Registry,
    pub requests_sent: AtomicUsize,
}

impl Prober for FakeProber {
    fn probe(
        &self,
        target: &Target,
        _: &WorkloadSpec,
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
        let mut stats = LiveStats {
            planned: PLANNED,
            ..LiveStats::default()
        };
        let mut pruned = None;
        for i in 0..PLANNED {
            stats
                .ttft_ms
                .push(p99 * (0.5 + 0.5 * i as f64 / (PLANNED - 1) as f64));
            stats.finished += 1;
            self.requests_sent.fetch_add(1, Ordering::SeqCst);
            if let Some(reason) = options.prune.as_ref().and_then(|h| h(&stats)) {
                pruned = Some(reason);
                break;
            }
        }
        let done = stats.finished as f64;
        let metrics: MetricMap = [
            (
                "output_throughput".to_string(),
                tput * done / PLANNED as f64,
            ),
            (
                "p99_ttft_ms".to_string(),
                stats.ttft_ms.iter().cloned().fold(0.0, f64::max),
            ),
            ("completed".to_string(), done),
            ("failed".to_string(), 0.0),
            ("error_rate".to_string(), 0.0),
        ]
        .into();
        let json = serde_json::json!({"fake": true, "completed": done, "url": target.base_url});
        Ok(ProbeReport {
            metrics,
            pruned,
            json,
        })
    }
}

/// Everything a study run needs, owned.
pub struct Rig {
    pub check: FakeCheck,
    pub engine: FakeEngine,
    pub launcher: FakeLauncher,
    pub prober: FakeProber,
}

impl Rig {
    pub fn new(space: &Space) -> Rig {
        let registry = Registry::default();
        Rig {
            check: FakeCheck(space.clone()),
            engine: FakeEngine,
            launcher: FakeLauncher {
                registry: registry.clone(),
                stop_on_start: None,
            },
            prober: FakeProber {
                registry,
                requests_sent: AtomicUsize::new(0),
            },
        }
    }

    pub fn backends(&self) -> Backends<'_> {
        Backends {
            check: &self.check,
            engine: &self.engine,
            launcher: &self.launcher,
            prober: &self.prober,
        }
    }
}

/// Options for a study in `dir`.
pub fn options(dir: PathBuf, resume: bool, prune: bool) -> StudyOptions {
    StudyOptions {
        dir,
        resume,
        prune,
        progress: false,
        stop: StopFlag::default(),
    }
}

/// Run a study of `space` in `dir` with fresh fakes.
pub fn run_study(
    space: &Space,
    dir: &Path,
    resume: bool,
    prune: bool,
) -> anyhow::Result<infertune::study::StudyResult> {
    let rig = Rig::new(space);
    let mut sampler = FakeSampler {
        seed: space.search.seed,
    };
    let result = infertune::study::run(
        space,
        &mut sampler,
        rig.backends(),
        &options(dir.to_path_buf(), resume, prune),
    );
    assert_eq!(
        rig.launcher.registry.live(),
        0,
        "a fake server was left running"
    );
    result
}

/// The configs of the search trials (not repeats) in trial order.
pub fn search_configs(records: &[TrialRecord]) -> Vec<Params> {
    records
        .iter()
        .filter(|r| r.repeat_of.is_none())
        .map(|r| r.params.clone())
        .collect()
}
