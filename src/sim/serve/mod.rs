//! `sim serve`: an OpenAI-compatible streaming server whose timings come from the simulated
//! engine, stepped in real time. It starts (or refuses to) the way the modelled engine would.

pub(crate) mod driver;
pub mod http;
pub mod openai;
pub(crate) mod prom;

use super::config::{self, Deployment, SimFailure};
use super::core::SimEngine;
use super::memory;
use crate::record::{FailureKind, Params};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;

/// Everything `sim serve` needs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Address to bind (a loopback address in tests).
    pub host: String,
    /// Port to bind.
    pub port: u16,
    /// Engine, card, model, TP.
    pub deployment: Deployment,
    /// Name in `/v1/models`; defaults to the model profile name.
    pub served_model_name: Option<String>,
    /// Engine parameters (vLLM or MindIE names).
    pub params: Params,
    /// Seed of the engine noise and natural output lengths.
    pub seed: u64,
    /// Real seconds per modelled second (0.1 = ten times faster).
    pub time_scale: f64,
    /// Start-up time override (modelled seconds; scaled like everything else).
    pub startup_time: Option<Duration>,
}

/// The variables through which runtimes restrict a process to some accelerators.
const VISIBLE_DEVICE_VARS: [&str; 4] = [
    "CUDA_VISIBLE_DEVICES",
    "ASCEND_RT_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "MACA_VISIBLE_DEVICES",
];

/// The server's host, port and the visible-device variables it was started with.
fn slot_echo(options: &ServeOptions) -> serde_json::Value {
    let visible: serde_json::Map<String, serde_json::Value> = VISIBLE_DEVICE_VARS
        .iter()
        .filter_map(|var| Some((var.to_string(), std::env::var(var).ok()?.into())))
        .collect();
    serde_json::json!({"host": options.host, "port": options.port, "visible_devices": visible})
}

/// Run the server until SIGINT/SIGTERM; returns the exit code (1 when the engine refuses to start).
/// Its log lines (start-up, the refusal, shutdown), worded like the modelled engine's, go to
/// `log`.
pub fn run(options: ServeOptions, log: &(dyn Fn(&str) + Sync)) -> anyhow::Result<i32> {
    if !(options.time_scale > 0.0 && options.time_scale.is_finite()) {
        anyhow::bail!(
            "--time-scale must be a positive number, got {}",
            options.time_scale
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(serve(options, log))
}

async fn serve(options: ServeOptions, log: &(dyn Fn(&str) + Sync)) -> anyhow::Result<i32> {
    let scale = options.time_scale;
    let sleep_modelled =
        |seconds: f64| tokio::time::sleep(Duration::from_secs_f64(seconds * scale));
    log(&format!(
        "INFO: infertune sim serve: {:?} {} on {}×{} (a simulated engine)",
        options.deployment.engine,
        options.deployment.model,
        options.deployment.tp,
        options.deployment.card
    ));
    let engine = match SimEngine::start(&options.deployment, &options.params, options.seed) {
        Ok(engine) => engine,
        Err(failure) => {
            sleep_modelled(failure_delay(&options, &failure)).await;
            log(&failure_line(&failure));
            return Ok(if failure.message.contains("unrecognized arguments") {
                2
            } else {
                1
            });
        }
    };
    let kv = engine.kv_capacity();
    log(&format!(
        "INFO: KV cache: {:.2} GiB per card, {} blocks, {} tokens",
        kv.gib_per_card, kv.blocks, kv.tokens
    ));
    let startup = options
        .startup_time
        .map_or_else(|| engine.startup_seconds(), |d| d.as_secs_f64());
    sleep_modelled(startup).await;
    let listener = tokio::net::TcpListener::bind((options.host.as_str(), options.port))
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}:{}: {e}", options.host, options.port))?;
    let (commands, receiver) = mpsc::unbounded_channel();
    let counters = Arc::new(Mutex::new(prom::Counters::default()));
    let state = Arc::new(http::AppState {
        commands,
        counters: counters.clone(),
        config: engine.config().clone(),
        model_name: options
            .served_model_name
            .clone()
            .unwrap_or_else(|| engine.config().model.name.clone()),
        seed: options.seed,
        next_id: AtomicU64::new(0),
        created: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        slot: slot_echo(&options),
    });
    tokio::spawn(driver::run(engine, receiver, scale, counters));
    log(&format!(
        "INFO: Started server process; serving on http://{}:{}",
        options.host, options.port
    ));
    log(&format!("INFO: slot: {}", state.slot));
    let app = http::router(state);
    tokio::select! {
        served = axum::serve(listener, app) => served?,
        _ = shutdown_signal() => log("INFO: Shutting down"),
    }
    Ok(0)
}

/// Modelled seconds until the failure shows: config errors after imports, memory errors
/// after loading the weights, argument-parser errors at once.
fn failure_delay(options: &ServeOptions, failure: &SimFailure) -> f64 {
    if let Some(d) = options.startup_time {
        return d.as_secs_f64();
    }
    if failure.message.contains("unrecognized arguments") {
        return 0.0;
    }
    match failure.kind {
        FailureKind::Oom => config::EngineConfig::resolve(&options.deployment, &options.params)
            .map_or(0.0, |cfg| memory::load_done_seconds(&cfg)),
        _ => config::engine_profile(&options.deployment).map_or(0.0, |e| e.import_s),
    }
}

/// The line a real engine would log when refusing to start this way.
fn failure_line(failure: &SimFailure) -> String {
    let line = &failure.message;
    let known_prefix = [
        "ValueError:",
        "torch.OutOfMemoryError:",
        "vllm serve: error:",
        "NPU out of memory",
    ];
    if known_prefix.iter().any(|p| line.starts_with(p)) {
        line.clone()
    } else {
        format!("ValueError: {line}")
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    // Without a SIGTERM handler, Ctrl-C still stops the server.
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
