//! Fakes for driving the study loop in-process: a space check with one engine rule, a seeded
//! sampler, an engine, a launcher whose servers OOM for large `max_num_seqs`, and a prober whose
//! metrics are a function of the config (with the pruning hook called per request).

#![allow(dead_code)]

use infertune::exec::{Backends, StopFlag, TrialObserver};
use infertune::probe::WorkloadSpec;
use infertune::record::{Params, TrialRecord, Value};
use infertune::sampler::Sampler;
use infertune::space::objective::{Direction, ObjectiveSpec};
use infertune::space::{
    Constraint, EngineKind, EngineSection, Feasibility, LaunchSection, ParamDef, ParamKind,
    Rejection, RuleSettings, SearchSettings, StudySpec,
};
use infertune::study::{StudyObserver, StudyOptions};
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;
use std::time::Duration;

mod servers;
pub use servers::*;

fn param(name: &str, kind: ParamKind, default: Option<Value>) -> ParamDef {
    ParamDef {
        default,
        ..ParamDef::new(name, kind)
    }
}

/// A vLLM-like space: max_num_seqs (log int), max_num_batched_tokens (choice), block_size
/// (choice), max_model_len (const 4096); p99 TTFT ≤ 1.5 s and error rate ≤ 1%.
pub fn space(seed: u64, trials: u32) -> StudySpec {
    let ints = |v: &[i64]| v.iter().map(|x| Value::Int(*x)).collect::<Vec<_>>();
    StudySpec {
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
        placement: Default::default(),
        executor: Default::default(),
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
        rule_pack: infertune::engine::rule_pack(EngineKind::Custom),
        probe: serde_json::from_value::<WorkloadSpec>(serde_json::json!({
            "dataset": {"kind": "random", "input_len": 128, "output_len": 64},
            "load": {"kind": "closed", "concurrency": 16, "requests": PLANNED}
        }))
        .expect("valid workload"),
        objective: ObjectiveSpec {
            direction: Direction::Maximize,
            metric: "output_throughput".into(),
            subject_to: infertune::record::parse_slos("ttft:p99<=1500ms,error_rate<=1%")
                .expect("valid SLOs"),
            secondary: None,
            load_search: None,
            stage: None,
        },
        search: SearchSettings {
            // A name the study's preflight accepts; the fakes drive it with [`FakeSampler`].
            sampler: "random".into(),
            trials,
            budget: None,
            seed,
            baseline: true,
            revalidate_top: 2,
            repeats: 2,
            // No runs beyond the repeats: the tests count each study's runs.
            resolution: infertune::space::DEFAULT_RESOLUTION,
            max_repeats: 2,
            enqueue: Vec::new(),
            parallel: 1,
            warm_start: Vec::new(),
            transfer_weight: 0.5,
            prior: infertune::space::Prior::None,
        },
        secrets: Default::default(),
    }
}

/// Completes consts and applies the one constraint of [`space`].
pub struct FakeCheck(pub StudySpec);

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

/// Everything a study run needs, owned.
pub struct Rig {
    pub check: FakeCheck,
    pub engine: FakeEngine,
    pub launcher: FakeLauncher,
    pub prober: FakeProber,
    pub notes: Notes,
}

/// An observer that keeps the study's notes.
#[derive(Default)]
pub struct Notes(pub Mutex<Vec<String>>);

impl TrialObserver for Notes {
    fn note(&self, text: &str) {
        self.0.lock().unwrap().push(text.to_string());
    }
}

impl StudyObserver for Notes {}

impl Rig {
    pub fn new(space: &StudySpec) -> Rig {
        let registry = Registry::default();
        Rig {
            check: FakeCheck(space.clone()),
            engine: FakeEngine,
            launcher: FakeLauncher {
                registry: registry.clone(),
                stop_on_start: None,
                cancel_start_on: None,
                dies_above: None,
                port_busy_on: Vec::new(),
            },
            prober: FakeProber {
                registry,
                requests_sent: AtomicUsize::new(0),
                fail_above: None,
                short_probe_gain: None,
                spread: None,
                probes: AtomicUsize::new(0),
            },
            notes: Notes::default(),
        }
    }

    pub fn backends(&self) -> Backends<'_, dyn StudyObserver> {
        Backends {
            check: &self.check,
            engine: &self.engine,
            launcher: &self.launcher,
            prober: &self.prober,
            observer: &self.notes,
        }
    }
}

/// Options for a study in `dir`.
pub fn options(dir: PathBuf, resume: bool, prune: bool) -> StudyOptions {
    StudyOptions {
        dir,
        resume,
        prune,
        server_stop: prune,
        stop: StopFlag::default(),
        warm_start: Vec::new(),
        twin_first: Vec::new(),
    }
}

/// Run a study of `space` in `dir` with fresh fakes.
pub fn run_study(
    space: &StudySpec,
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
        .filter(|r| r.repeat_of().is_none())
        .map(|r| r.params.clone())
        .collect()
}
